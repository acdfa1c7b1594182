// The NACOS command against a real Nacos 3 server (scripts/ensure-nacos.sh, 127.0.0.1:8848; run
// by `make test-nacos`, not by `make test`: the Nacos server is built from its source tree, which
// a fresh machine does not have). What the server lists is read over its HTTP API (the client's
// own list is a cache): on start every enabled endpoint is an instance with its port and metadata;
// stop deregisters, start registers again, delete deregisters; an endpoint added or removed at run
// time is registered or deregistered; an instance the server lost is registered again; stopping
// the broker deregisters; bad config is a 400 naming the field; the password is never answered;
// a server that does not answer leaves the command reconnecting with its error; Nacos stopped
// and started again: reconnecting, then running with its instances registered again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { closedPort } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { addCommand, runtime, stateOf } from './helpers.ts';

const NACOS = 'http://127.0.0.1:8848/nacos';
const SERVER = '127.0.0.1:8848';
const run = `${process.pid}-${Date.now()}`;
let b: AdminBroker;

/** scripts/ensure-nacos.sh (start: returns once the server is UP) or `ensure-nacos.sh stop`. */
function nacos(...args: string[]): void {
  execFileSync(fileURLToPath(new URL('../../scripts/ensure-nacos.sh', import.meta.url)), args, { stdio: ['ignore', 'inherit', 'inherit'], timeout: 5 * 60_000 });
}

interface NacosHost {
  ip: string;
  port: number;
  healthy: boolean;
  metadata: Record<string, string>;
}

/** The instances the server lists for `service` now. */
async function instances(service: string, group = 'DEFAULT_GROUP'): Promise<NacosHost[]> {
  const r = await fetch(`${NACOS}/v1/ns/instance/list?${new URLSearchParams({ serviceName: service, groupName: group })}`);
  assert.equal(r.status, 200, await r.clone().text());
  return ((await r.json()) as { hosts: NacosHost[] }).hosts.sort((x, y) => x.port - y.port);
}

/** Waits until the server lists exactly the ports `ports` for `service`. */
async function listed(service: string, ports: number[], group?: string, timeout?: number): Promise<NacosHost[]> {
  let last: NacosHost[] = [];
  const want = [...ports].sort((x, y) => x - y);
  try {
    return await waitFor(async () => {
      last = await instances(service, group);
      return JSON.stringify(last.map((h) => h.port)) === JSON.stringify(want) && last;
    }, { interval: 200, timeout });
  } catch (err) {
    throw new Error(`${service}: wanted ports ${want.join(',') || 'none'}, the server lists ${JSON.stringify(last)}`, { cause: err });
  }
}

before(async () => {
  // `make test-nacos` runs scripts/ensure-nacos.sh first; say so when it did not.
  const up = await fetch(`${NACOS}/v1/ns/operator/metrics`).then((r) => r.ok, () => false);
  assert.ok(up, 'Nacos is not running on 127.0.0.1:8848: run scripts/ensure-nacos.sh (or make test-nacos)');
  b = await startAdminBroker();
});
after(() => b.stop());

test('start registers every endpoint with its port and metadata; stop deregisters; start again registers; delete deregisters; the password is never answered', async () => {
  const service = `spindle-a-${run}`;
  const password = 'nacos-secret-pw';
  const c = await addCommand(b, {
    name: 'nacos-a',
    type: 'NACOS',
    config: { serverAddr: SERVER, serviceName: service, ip: '127.0.0.1', metadata: { env: 'test' }, username: 'nacos', password },
  });
  assert.equal(c.config.password, undefined);
  assert.equal(c.config.username, 'nacos');
  const { tcp, ws } = b.ports;
  const hosts = await listed(service, [tcp!, ws!]);
  const byPort = new Map(hosts.map((h) => [h.port, h]));
  assert.deepEqual({ ...byPort.get(tcp!)!.metadata }, { env: 'test', protocol: 'mqtt', nodeName: b.admin!.context.config.nodeName, endpoint: byPort.get(tcp!)!.metadata.endpoint });
  assert.equal(byPort.get(ws!)!.metadata.protocol, 'ws');
  assert.equal(byPort.get(ws!)!.metadata.path, '/mqtt');
  for (const h of hosts) assert.equal(h.ip, '127.0.0.1');
  const rt = await stateOf(b, c.id, 'running');
  assert.deepEqual(rt.details.instances.map((i: { port: number; protocol: string }) => [i.port, i.protocol]).sort(), [[tcp, 'mqtt'], [ws, 'ws']].sort());
  // confirmedAt: the server's list was read and showed every instance (every 5 s).
  const confirmed = await waitFor(async () => {
    const d = (await runtime(b, c.id)).details;
    return d.confirmedAt !== null && d.lastBeatAt !== null && d;
  }, { message: 'heartbeats sent and the instances confirmed by the server' });
  assert.equal(confirmed.lastBeatError, null);
  for (const [method, path, body] of [['POST', '/command/query', { id: c.id }], ['POST', '/command/runtime', { id: c.id }]] as const) {
    const r = await b.api(method, path, { body });
    assert.equal(r.status, 200);
    assert.ok(!r.text.includes(password), `${path} shows the password: ${r.text}`);
  }

  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.json.data.state, 'stopped');
  await listed(service, []);
  assert.deepEqual((await runtime(b, c.id)).details.instances, []);

  assert.equal((await b.api('POST', '/command/start', { body: { id: c.id } })).status, 200);
  await listed(service, [tcp!, ws!]);
  await stateOf(b, c.id, 'running');

  assert.equal((await b.api('POST', '/command/delete', { body: { id: c.id } })).status, 200);
  await listed(service, []);
});

test('endpoints: only those named; one added at run time is registered, removed is deregistered; group and namespace are used', async () => {
  const service = `spindle-b-${run}`;
  const group = 'SPINDLE_TEST';
  const c = await addCommand(b, { name: 'nacos-b', type: 'NACOS', config: { serverAddr: [SERVER], group, serviceName: service, ip: '127.0.0.1', endpoints: ['tcp', 'extra-ep'] } });
  const ids = (await b.api('GET', '/endpoints/list')).json.endpoints as Record<string, { port: number }>;
  assert.equal(ids.tcp?.port, b.ports.tcp, `the test broker's TCP endpoint is "tcp": ${JSON.stringify(ids)}`);
  await listed(service, [b.ports.tcp!], group);
  assert.deepEqual(await instances(service), [], 'nothing in DEFAULT_GROUP');

  const port = await closedPort();
  const added = await b.api('POST', '/endpoints/add', { body: { id: 'extra-ep', port } });
  assert.equal(added.status, 200, added.text);
  await listed(service, [b.ports.tcp!, port], group);
  assert.equal((await b.api('POST', '/endpoints/remove', { body: { id: 'extra-ep' } })).status, 200);
  await listed(service, [b.ports.tcp!], group);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await listed(service, [], group);
});

test('an instance the server lost (deleted behind its back) is registered again', async () => {
  const service = `spindle-c-${run}`;
  const c = await addCommand(b, { name: 'nacos-c', type: 'NACOS', config: { serverAddr: SERVER, serviceName: service, ip: '127.0.0.1', endpoints: ['tcp'] } });
  await listed(service, [b.ports.tcp!]);
  const del = await fetch(`${NACOS}/v1/ns/instance?${new URLSearchParams({ serviceName: `DEFAULT_GROUP@@${service}`, ip: '127.0.0.1', port: String(b.ports.tcp), ephemeral: 'true' })}`, { method: 'DELETE' });
  assert.equal(del.status, 200, await del.text());
  await listed(service, []);
  await listed(service, [b.ports.tcp!]);
  assert.equal((await runtime(b, c.id)).state, 'running');
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await listed(service, []);
});

test('stopping the broker deregisters its instances', async () => {
  const service = `spindle-d-${run}`;
  const other = await startAdminBroker();
  try {
    const c = await addCommand(other, { name: 'nacos-d', type: 'NACOS', config: { serverAddr: SERVER, serviceName: service, ip: '127.0.0.1' } });
    await listed(service, [other.ports.tcp!, other.ports.ws!]);
    await stateOf(other, c.id, 'running');
  } finally {
    await other.stop();
  }
  // Deregistered by the stop itself (the server's list follows within a second or so), not by
  // the expiry of missing beats: unhealthy after 15 s, removed after 30 s.
  await listed(service, [], undefined, 10_000);
});

test('bad config is a 400 naming the field, and nothing is stored', async () => {
  const ok = { serverAddr: SERVER, serviceName: 'spindle-bad' };
  const cases: [Record<string, unknown>, string][] = [
    [{ serviceName: 'x' }, 'config.serverAddr'],
    [{ ...ok, serverAddr: 'a b:1' }, 'config.serverAddr'],
    [{ ...ok, serverAddr: '127.0.0.1:70000' }, 'config.serverAddr'],
    [{ ...ok, serverAddr: [] }, 'config.serverAddr'],
    [{ serverAddr: SERVER }, 'config.serviceName'],
    [{ ...ok, serviceName: 'a b' }, 'config.serviceName'],
    [{ ...ok, group: 'x@@y' }, 'config.group'],
    [{ ...ok, namespace: 7 }, 'config.namespace'],
    [{ ...ok, ip: 'not-an-ip' }, 'config.ip'],
    [{ ...ok, weight: 0 }, 'config.weight'],
    [{ ...ok, tls: 'yes' }, 'config.tls'],
    [{ ...ok, username: 'u' }, 'config.password'],
    [{ ...ok, password: 'p' }, 'config.username'],
    [{ ...ok, metadata: 'x' }, 'config.metadata'],
    [{ ...ok, metadata: { protocol: 'x' } }, 'config.metadata.protocol'],
    [{ ...ok, metadata: { n: 1 } }, 'config.metadata.n'],
    [{ ...ok, endpoints: [] }, 'config.endpoints'],
    [{ ...ok, mqttTopic: 'a' }, 'config.mqttTopic'],
    [{ ...ok, serverAdr: SERVER }, 'config.serverAdr'],
  ];
  for (const [config, field] of cases) {
    const r = await b.api('POST', '/command/add', { body: { type: 'NACOS', name: 'nacos-bad', config } });
    assert.equal(r.status, 400, `${JSON.stringify(config)}: ${r.text}`);
    assert.equal(r.json.field, field, `${JSON.stringify(config)}: ${r.text}`);
  }
  assert.deepEqual((await b.api('POST', '/command/query', { body: { type: 'NACOS' } })).json.data, []);
});

test('a server that does not answer: reconnecting with the error, the password not in it', async () => {
  const port = await closedPort();
  const c = await addCommand(b, { name: 'nacos-down', type: 'NACOS', config: { serverAddr: `127.0.0.1:${port}`, serviceName: 'spindle-down', ip: '127.0.0.1', username: 'u', password: 'down-secret' } });
  const rt = await stateOf(b, c.id, 'reconnecting');
  assert.match(rt.lastError, /nacos: register/);
  assert.match(rt.lastError, /ECONNREFUSED/);
  assert.ok(!JSON.stringify(rt).includes('down-secret'), JSON.stringify(rt));
  assert.deepEqual(rt.details.instances, []);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});

test('Nacos stopped: reconnecting with the error; started again: running, its instance registered again', async () => {
  const service = `spindle-e-${run}`;
  const c = await addCommand(b, { name: 'nacos-e', type: 'NACOS', config: { serverAddr: SERVER, serviceName: service, ip: '127.0.0.1', endpoints: ['tcp'] } });
  await listed(service, [b.ports.tcp!]);
  try {
    nacos('stop');
    // The next check (every 5 s) finds the server gone.
    const down = await stateOf(b, c.id, 'reconnecting');
    // The list read fails (or, once reconnecting, the register): refused, or a 5xx while it shuts down.
    assert.match(down.lastError, /^nacos: (the server's instance list could not be read|register mqtt).*(ECONNREFUSED|UND_ERR_SOCKET|answered 5\d\d)/s);
  } finally {
    nacos();
  }
  // Ephemeral instances do not survive a Nacos restart: the command registers it again.
  await listed(service, [b.ports.tcp!], undefined, 3 * WAIT_MS);
  const up = await stateOf(b, c.id, 'running');
  assert.ok(up.reconnects >= 1, JSON.stringify(up));
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await listed(service, []);
});
