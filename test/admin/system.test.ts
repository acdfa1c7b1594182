// System routes: system config, the public health probe (UP, and DOWN with 503 when the store does
// not answer or no worker runs), the single-node cluster views, health details and resources, and
// the config export and import (every part checked before anything is applied; a refused import
// changes no endpoint and no dashboard; restart-only keys reported, not applied).
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' }, nodeName: 'node-under-test' });
});
after(() => b.stop());

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function exported(): Promise<Record<string, any>> {
  const r = await b.api('GET', '/system/config/export');
  assert.equal(r.status, 200);
  assert.ok(!Number.isNaN(Date.parse(r.json.data.timestamp)));
  return JSON.parse(r.json.data.config);
}

async function state() {
  const dashboards = (await b.api('GET', '/monitor/dashboard')).json.data;
  const endpoints = b.supervisor.endpoints.list().map((e) => ({ ...e })).sort((x, y) => x.id.localeCompare(y.id));
  return { dashboards, endpoints };
}

async function importDoc(doc: unknown, as: 'admin' | 'viewer' | 'none' = 'admin') {
  return b.api('POST', '/api/system/config/import', { as, body: { config: typeof doc === 'string' ? doc : JSON.stringify(doc) } });
}

test('GET /system/config: the default endpoint, this API, no cluster; needs credentials', async () => {
  const r = await b.api('GET', '/system/config', { as: 'viewer' });
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 200);
  assert.deepEqual(r.json.data.mqtt, { port: b.ports.tcp, host: '127.0.0.1' });
  assert.deepEqual(r.json.data.http, { port: b.admin!.port, host: '127.0.0.1' });
  assert.deepEqual(r.json.data.cluster, { enabled: false });
  assert.equal((await b.api('GET', '/system/config', { as: 'none' })).status, 401);
});

test('GET /health answers UP without credentials', async () => {
  const r = await b.api('GET', '/health', { as: 'none' });
  assert.equal(r.status, 200);
  assert.equal(r.json.status, 'UP');
  assert.ok(Math.abs(Date.parse(r.json.timestamp) - Date.now()) < 10_000);
});

test('/health is DOWN (503) when the store fails or does not answer, and UP again after', async () => {
  const store = b.admin!.context.store as unknown as Record<string, unknown>;
  store.getAdmin = () => Promise.reject(new Error('connection refused'));
  try {
    const r = await b.api('GET', '/health', { as: 'none' });
    assert.equal(r.status, 503);
    assert.equal(r.json.status, 'DOWN');
    assert.match(r.json.reason, /store unreachable: connection refused/);
    const detail = await b.api('GET', '/api/system/health');
    assert.equal(detail.json.data.status, 'DOWN');
    assert.equal(detail.json.data.store.reachable, false);
    store.getAdmin = () => new Promise(() => {});
    const started = Date.now();
    const hung = await b.api('GET', '/health', { as: 'none' });
    assert.equal(hung.status, 503);
    assert.match(hung.json.reason, /did not answer within/);
    assert.ok(Date.now() - started < 5000);
  } finally {
    delete store.getAdmin;
  }
  assert.equal((await b.api('GET', '/health', { as: 'none' })).status, 200);
});

test('/health is DOWN when no worker thread runs', async () => {
  const sup = b.supervisor as unknown as Record<string, unknown>;
  const real = sup.workerStates;
  sup.workerStates = () => [{ id: 0, running: false, restarts: 2 }, { id: 1, running: false, restarts: 1 }];
  try {
    const r = await b.api('GET', '/health', { as: 'none' });
    assert.equal(r.status, 503);
    assert.match(r.json.reason, /no worker thread is running/);
  } finally {
    sup.workerStates = real;
  }
});

test('/public/cluster: this node, without credentials', async () => {
  const r = await b.api('GET', '/public/cluster', { as: 'none' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { nodes: [{ id: 'node-under-test', address: `127.0.0.1:${b.ports.tcp}`, status: 'running' }] });
});

test('/api/cluster/status and /api/cluster/nodes: a single node; 401 without credentials', async () => {
  const s = await b.api('GET', '/api/cluster/status', { as: 'viewer' });
  assert.equal(s.status, 200);
  assert.equal(s.json.data.enabled, false);
  assert.equal(s.json.data.nodes, 1);
  const n = await b.api('GET', '/api/cluster/nodes');
  assert.equal(n.status, 200);
  assert.equal(n.json.data.length, 1);
  assert.equal(n.json.data[0].id, 'node-under-test');
  assert.equal(n.json.data[0].version, VERSION);
  assert.deepEqual(n.json.data[0].workers, { running: 2, total: 2 });
  assert.equal((await b.api('GET', '/api/cluster/status', { as: 'none' })).status, 401);
  assert.equal((await b.api('GET', '/api/cluster/nodes', { as: 'none' })).status, 401);
});

test('/api/system/health: workers, store, version, uptime', async () => {
  const r = await b.api('GET', '/api/system/health', { as: 'viewer' });
  assert.equal(r.status, 200);
  const d = r.json.data;
  assert.equal(d.status, 'UP');
  assert.equal(d.version, VERSION);
  assert.equal(d.workers.running, 2);
  assert.equal(d.workers.total, 2);
  assert.equal(d.workers.restarts, 0);
  assert.equal(d.store.kind, 'MEMORY');
  assert.equal(d.store.reachable, true);
  assert.ok(d.uptime >= 0);
  assert.equal((await b.api('GET', '/api/system/health', { as: 'none' })).status, 401);
});

test('/api/system/resources: process, host and per-worker figures', async () => {
  const r = await b.api('GET', '/api/system/resources', { as: 'viewer' });
  assert.equal(r.status, 200);
  const d = r.json.data;
  assert.equal(d.process.pid, process.pid);
  assert.ok(d.process.memory.rss > 0 && d.process.memory.heapUsed > 0);
  assert.ok(d.process.cpuPercent >= 0);
  assert.ok(d.system.cpus >= 1);
  assert.equal(d.system.loadAverage.length, 3);
  assert.equal(d.workers.length, 2);
  for (const w of d.workers) {
    assert.equal(w.running, true);
    assert.ok(w.heapUsed > 0 && w.heapUsed <= w.heapTotal, JSON.stringify(w));
    assert.ok(w.eventLoopUtilization >= 0 && w.eventLoopUtilization <= 1);
  }
  assert.equal((await b.api('GET', '/api/system/resources', { as: 'none' })).status, 401);
});

test('export: the configuration without secrets, the endpoints and the dashboards', async () => {
  await b.api('POST', '/monitor/dashboard', { body: { name: 'ops', panels: [{ title: 'Conns', type: 'line', metric: 'svc_endpoint_connections_current' }] } });
  const doc = await exported();
  assert.equal(doc.nodeName, 'node-under-test');
  assert.equal(doc.mqtt.host, '127.0.0.1');
  assert.equal(doc.store.storeType, 'MEMORY');
  assert.equal(doc.admin.password, undefined, 'admin password left out');
  assert.equal(doc.store.datasource.password, undefined, 'database password left out');
  assert.equal(doc.auth.users, undefined, 'password hashes left out');
  assert.deepEqual(doc.omitted, ['admin.password', 'store.datasource.password', 'auth.users']);
  const tcp = doc.endpoints.find((e: { id: string }) => e.id === 'tcp');
  assert.equal(tcp.port, b.ports.tcp);
  assert.equal(tcp.isDefault, true);
  assert.deepEqual(doc.dashboards.map((d: { name: string }) => d.name), ['ops']);
  assert.equal((await b.api('GET', '/system/config/export', { as: 'none' })).status, 401);
});

test('import: 401 without credentials, 403 for a viewer; nothing changes', async () => {
  const doc = await exported();
  doc.dashboards = [];
  const before = await state();
  assert.equal((await importDoc(doc, 'none')).status, 401);
  assert.equal((await importDoc(doc, 'viewer')).status, 403);
  assert.deepEqual(await state(), before);
});

test('import: each invalid document is 400 (or 409) naming the first bad field, and changes nothing', async () => {
  const base = await exported();
  const newPort = await freePort();
  const goodEndpoint = { id: 'extra', port: newPort };
  const goodDashboard = { name: 'new-one', panels: [{ title: 't', type: 'bar', metric: 'm' }] };
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const busyPort = (blocker.address() as net.AddressInfo).port;
  const variant = (change: (d: Record<string, any>) => void) => {
    const d = structuredClone(base);
    // Each bad document also carries good changes, which must not be applied either.
    d.endpoints.push(structuredClone(goodEndpoint));
    d.dashboards = [structuredClone(goodDashboard)];
    change(d);
    return d;
  };
  const cases: [unknown, number, string][] = [
    ['{"mqtt":', 400, 'config'],
    ['[1,2]', 400, 'config'],
    [variant((d) => { d.mqtt.tcp.port = 70000; }), 400, 'config.mqtt.tcp.port'],
    [variant((d) => { d.mqtt.tcp.prot = 1; }), 400, 'config.mqtt.tcp.prot'],
    [variant((d) => { d.mqtt = 5; }), 400, 'config.mqtt'],
    [variant((d) => { d.log.level = 'loud'; }), 400, 'config.log.level'],
    [variant((d) => { d.auth.acl = [{ permission: 'allow', action: 'publish', topic: 'a/#/b' }]; }), 400, 'config.auth.acl[0].topic'],
    [variant((d) => { d.mqtt.tls.cert = '/etc/cert.pem'; }), 400, 'config.mqtt.tls.key'],
    [variant((d) => { d.endpoints.push({ id: 'small', port: newPort + 1, maxConnectionSize: 0 }); }), 400, `config.endpoints[${base.endpoints.length + 1}].maxConnectionSize`],
    [variant((d) => { d.endpoints.push({ id: 'bridge', port: newPort + 1, enableBridge: true }); }), 400, `config.endpoints[${base.endpoints.length + 1}].enableBridge`],
    [variant((d) => { d.endpoints.push({ id: 'extra', port: newPort + 1 }); }), 400, `config.endpoints[${base.endpoints.length + 1}].id`],
    [variant((d) => { d.endpoints.push({ port: newPort + 1, colour: 'red' }); }), 400, `config.endpoints[${base.endpoints.length + 1}].colour`],
    [variant((d) => { for (const e of d.endpoints) e.isDefault = false; }), 400, 'config.endpoints'],
    [variant((d) => { d.endpoints = {}; }), 400, 'config.endpoints'],
    [variant((d) => { d.dashboards[0].panels[0].type = 'pie'; }), 400, 'config.dashboards[0].panels[0].type'],
    [variant((d) => { d.dashboards.push(structuredClone(goodDashboard)); }), 400, 'config.dashboards[1].name'],
    [variant((d) => { d.endpoints.push({ id: 'busy', port: busyPort }); }), 409, `config.endpoints[${base.endpoints.length + 1}].port`],
  ];
  const before = await state();
  try {
    for (const [doc, status, field] of cases) {
      const r = await importDoc(doc);
      assert.equal(r.status, status, `${field}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
      assert.deepEqual(await state(), before, `nothing changed after the refusal of ${field}`);
    }
    const noConfig = await b.api('POST', '/api/system/config/import', { body: {} });
    assert.equal(noConfig.status, 400);
    assert.equal(noConfig.json.field, 'config');
  } finally {
    blocker.close();
  }
  // A client cannot reach the endpoint that was never added.
  await assert.rejects(connect(`mqtt://127.0.0.1:${newPort}`, { connectTimeout: 1000 }));
});

test('import applies endpoints (at run time) and dashboards, and lists restart-only keys', async () => {
  const original = await exported();
  const port = await freePort();
  const doc = structuredClone(original);
  doc.endpoints.push({ id: 'imported', port, maxConnectionSize: 10 });
  doc.dashboards = [{ name: 'imported-dash', panels: [{ title: 'Retained', type: 'stat', metric: 'spindle_retained_messages' }] }];
  doc.log.level = 'debug';
  doc.limits.maxInflight = 99;
  const r = await importDoc(doc);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data.applied.endpoints, { added: ['imported'], updated: [], removed: [] });
  assert.deepEqual(r.json.data.applied.dashboards, { saved: ['imported-dash'], removed: ['ops'] });
  assert.deepEqual(r.json.data.restartRequired.sort(), ['limits.maxInflight', 'log.level']);
  // The new endpoint takes MQTT clients now.
  const client = await connect(`mqtt://127.0.0.1:${port}`);
  await end(client);
  assert.equal(b.supervisor.endpoints.get('imported')?.maxConnectionSize, 10);
  assert.deepEqual((await b.api('GET', '/monitor/dashboard')).json.data.map((d: { name: string }) => d.name), ['imported-dash']);
  // The running configuration is unchanged (restart-only keys are not claimed as applied).
  const after = await exported();
  assert.equal(after.log.level, original.log.level);
  assert.equal(after.limits.maxInflight, original.limits.maxInflight);

  // Importing the earlier export puts everything back: the endpoint goes, the dashboard returns.
  // The export's data ({config, timestamp}) is posted back as it is.
  const back = await b.api('POST', '/api/system/config/import', { body: { config: JSON.stringify(original), timestamp: new Date().toISOString() } });
  assert.equal(back.status, 200, back.text);
  assert.deepEqual(back.json.data.applied.endpoints, { added: [], updated: [], removed: ['imported'] });
  assert.deepEqual(back.json.data.restartRequired, []);
  assert.equal(b.supervisor.endpoints.get('imported'), undefined);
  await assert.rejects(connect(`mqtt://127.0.0.1:${port}`, { connectTimeout: 1000 }));
  assert.deepEqual((await b.api('GET', '/monitor/dashboard')).json.data.map((d: { name: string }) => d.name), ['ops']);
});

test('import can move the default to a new endpoint and back (the default is never removed first)', async () => {
  const original = await exported();
  const port = await freePort();
  const doc = structuredClone(original);
  for (const e of doc.endpoints) e.isDefault = false;
  doc.endpoints.push({ id: 'main', port, isDefault: true });
  const r = await importDoc(doc);
  assert.equal(r.status, 200, r.text);
  assert.equal((await b.api('GET', '/system/config')).json.data.mqtt.port, port);
  assert.equal(b.supervisor.endpoints.get('tcp')?.isDefault, false);
  // Back: tcp is the default again and "main" is removed.
  const back = await importDoc(original);
  assert.equal(back.status, 200, back.text);
  assert.deepEqual(back.json.data.applied.endpoints.removed, ['main']);
  assert.equal((await b.api('GET', '/system/config')).json.data.mqtt.port, b.ports.tcp);
  assert.equal(b.supervisor.endpoints.get('tcp')?.isDefault, true);
});

test('import changes an existing endpoint in place and clears a limit that the document leaves out', async () => {
  const port = await freePort();
  assert.equal((await b.api('POST', '/endpoints/add', { body: { id: 'limited', port, maxConnectionSize: 3 } })).status, 200);
  const doc = await exported();
  const e = doc.endpoints.find((x: { id: string }) => x.id === 'limited');
  delete e.maxConnectionSize;
  e.maxSessionSize = 50;
  const r = await importDoc(doc);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data.applied.endpoints.updated, ['limited']);
  const now = b.supervisor.endpoints.get('limited')!;
  assert.equal(now.maxConnectionSize, undefined);
  assert.equal(now.maxSessionSize, 50);
  assert.equal((await b.api('POST', '/endpoints/remove', { body: { id: 'limited' } })).status, 200);
});

test('a worker that dies is restarted and counted in /api/system/health', async () => {
  // A message the worker's handler throws on: an uncaught exception ends the thread (terminate()
  // would abort the process while uWS holds the WebSocket listener; see worker-crash.test.ts).
  const dead = b.supervisor.workers[1]!;
  const exited = new Promise((resolve) => dead.once('exit', resolve));
  dead.postMessage({ t: 'publish', message: null });
  await exited;
  const d = await waitFor(async () => {
    const h = (await b.api('GET', '/api/system/health')).json.data;
    return h.workers.running === 2 && h.workers.restarts >= 1 && h;
  }, { timeout: 10_000, interval: 100, message: 'the health report to show the worker restarted' });
  assert.equal(d.workers.running, 2);
  assert.equal(d.workers.restarts, 1);
  assert.equal(d.workers.threads[1].restarts, 1);
});
