// needs: broker
// What the console's new pages read and write through the admin API: /rule/update (SQL, actions,
// enabled; checked before anything changes), a client's runtime with its transport and TLS,
// /api/cluster/nodes with this node's figures and a last seen, /topic/query's subscription totals
// with $SYS apart, and audit.reads: reads are not audited by default, and when they are (as action
// read) reads=false leaves them out of /api/v1/audit-logs with the right total and pages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';
import { VERSION } from '../../src/install/root.ts';

let b: AdminBroker;
let reads: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' }, nodeName: 'pages-api' });
  reads = await startAdminBroker({ store: { storeType: 'MEMORY' }, audit: { reads: true } });
});
after(async () => {
  await b?.stop();
  await reads?.stop();
});

test('/rule/update: SQL, actions and enabled changed at once; a bad SQL or an unknown id refused, nothing changed', async () => {
  const add = await b.api('POST', '/rule/add', { body: { id: 'upd', name: 'upd', sql: 'SELECT * FROM "upd/old/#"', actions: [{ type: 'republish', config: { topic: 'upd/out-old' } }] } });
  assert.equal(add.status, 200, add.text);
  const sub = await connect(b.url, { clientId: 'upd-sub' });
  const pub = await connect(b.url, { clientId: 'upd-pub' });
  try {
    await sub.subscribeAsync('upd/#', { qos: 1 });
    const r = await b.api('POST', '/rule/update', { body: { id: 'upd', sql: 'SELECT payload AS p FROM "upd/new/#"', actions: [{ type: 'republish', config: { topic: 'upd/out-new', payload: '${p}' } }] } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.sql, 'SELECT payload AS p FROM "upd/new/#"');
    assert.equal(r.json.data.name, 'upd', 'what was not given is kept');
    // It runs with the new SQL and action: a message on the new topic is republished, not the old.
    const got = waitForEvent(sub, 'message', { filter: (topic: string) => topic.startsWith('upd/out') });
    await pub.publishAsync('upd/old/x', 'old', { qos: 1 });
    await pub.publishAsync('upd/new/x', 'new', { qos: 1 });
    const [topic, payload] = await got;
    assert.deepEqual([topic, String(payload)], ['upd/out-new', 'new']);

    const bad = await b.api('POST', '/rule/update', { body: { id: 'upd', sql: 'SELECT FORM x' } });
    assert.equal(bad.status, 400, bad.text);
    const badAction = await b.api('POST', '/rule/update', { body: { id: 'upd', actions: [{ type: 'no-such-action' }] } });
    assert.equal(badAction.status, 400, badAction.text);
    const unknown = await b.api('POST', '/rule/update', { body: { id: 'nope', enabled: false } });
    assert.equal(unknown.status, 404, unknown.text);
    const extra = await b.api('POST', '/rule/update', { body: { id: 'upd', colour: 'red' } });
    assert.equal(extra.status, 400, extra.text);
    assert.match(extra.text, /colour/);
    const kept = (await b.api('POST', '/rule/query', { body: { id: 'upd' } })).json.data[0];
    assert.equal(kept.sql, 'SELECT payload AS p FROM "upd/new/#"');
    assert.equal(kept.actions[0].config.topic, 'upd/out-new');

    const off = await b.api('POST', '/rule/update', { body: { id: 'upd', enabled: false } });
    assert.equal(off.json.data.enabled, false);
    assert.equal((await b.api('POST', '/rule/runtime', { body: { id: 'upd' } })).json.data.enabled, false);
  } finally {
    await end(sub, pub);
    await b.api('POST', '/rule/delete', { body: { id: 'upd' } });
  }
});

test('/mqtt/connection/runtime: transport, endpoint port, TLS and client certificate; inflight and queue with their limits', async () => {
  const c = await connect(b.url, { clientId: 'rt-client', protocolVersion: 5 });
  try {
    const r = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'rt-client' } });
    assert.equal(r.status, 200, r.text);
    const d = r.json.data;
    assert.equal(d.transport, 'tcp');
    assert.equal(d.endpointPort, b.ports.tcp);
    assert.equal(d.tls, false);
    assert.equal(d.clientCertificate, false);
    assert.equal(d.inflight, 0);
    assert.ok(d.inflightMax > 0);
    assert.equal(d.queued, 0);
    assert.ok(d.queueMax > 0);
  } finally {
    await end(c);
  }
});

test('/api/cluster/nodes without a cluster: this node with lastSeen, uptime, version, CPU and memory', async () => {
  const n = (await b.api('GET', '/api/cluster/nodes', { as: 'viewer' })).json.data;
  assert.equal(n.length, 1);
  const self = n[0];
  assert.equal(self.id, 'pages-api');
  assert.equal(self.version, VERSION);
  assert.ok(Math.abs(Date.parse(self.lastSeen) - Date.now()) < 5000, self.lastSeen);
  assert.ok(Number.isInteger(self.uptime) && self.uptime >= 0);
  assert.ok(typeof self.cpuPercent === 'number' && self.cpuPercent >= 0);
  assert.ok(self.rssBytes > 0 && self.heapUsedBytes > 0 && self.totalMemoryBytes >= self.rssBytes);
  assert.ok(self.cpus >= 1);
});

test('/topic/query: subscriptions of the listed filters with $SYS ones apart', async () => {
  const c = await connect(b.url, { clientId: 'totals' });
  const d = await connect(b.url, { clientId: 'totals-2' });
  try {
    await c.subscribeAsync(['totals/a', 'totals/b', '$SYS/broker/#'], { qos: 0 });
    await d.subscribeAsync('totals/a', { qos: 0 });
    const r = (await b.api('POST', '/topic/query', { body: { page: 1, size: 1 } })).json;
    assert.equal(r.total, 3, 'three filters');
    assert.equal(r.data.length, 1, 'one on the page');
    assert.equal(r.subscriptions, 3, 'every page\'s subscriptions, $SYS not among them');
    assert.equal(r.sysSubscriptions, 1);
  } finally {
    await end(c, d);
  }
});

test('audit.reads off (the default): a GET and a POST query add no entry', async () => {
  await b.api('POST', '/api/users/add', { body: { username: 'reads-off-marker', password: 'a-long-password', role: 'viewer' } });
  await waitFor(async () => (await b.admin!.context.audit.query({ offset: 0, limit: 1000 })).entries.some((e) => e.resourceId === 'reads-off-marker'), { message: 'the write audited' });
  await b.api('GET', '/api/cluster/nodes');
  await b.api('POST', '/rule/query', { body: {} });
  await b.admin!.context.audit.flush();
  const all = (await b.admin!.context.audit.query({ offset: 0, limit: 1000 })).entries;
  assert.equal(all.filter((e) => e.action === 'read').length, 0, JSON.stringify(all.map((e) => `${e.method} ${e.path}`)));
});

test('audit.reads on: reads audited as action read; reads=false leaves them out, with the total and pages of what is left', async () => {
  for (let i = 0; i < 3; i++) {
    assert.equal((await reads.api('POST', '/api/users/add', { body: { username: `writer-${i}`, password: 'a-long-password', role: 'viewer' } })).status, 200);
    assert.equal((await reads.api('GET', '/api/cluster/nodes')).status, 200);
    assert.equal((await reads.api('POST', '/rule/query', { body: {} })).status, 200);
  }
  const get = async (q: string) => {
    const r = await reads.api('GET', `/api/v1/audit-logs?${q}`);
    assert.equal(r.status, 200, r.text);
    return r.json as { data: { action: string; method: string; path: string; resourceId: string | null }[]; total: number };
  };
  const everything = await get('size=1000');
  const readEntries = everything.data.filter((e) => e.action === 'read');
  assert.ok(readEntries.some((e) => e.method === 'GET' && e.path === '/api/cluster/nodes'), 'a GET audited');
  assert.ok(readEntries.some((e) => e.method === 'POST' && e.path === '/rule/query'), 'a POST query audited');
  const writes = await get('reads=false&size=1000');
  assert.equal(writes.data.filter((e) => e.action === 'read').length, 0);
  // Reading the audit log is a read too: only reads were added since, so the writes are the same.
  assert.equal(writes.total, everything.data.length - readEntries.length, 'the total counts what is left');
  assert.equal(writes.total, writes.data.length);
  // Pages of one: the writes, newest first, one by one.
  const creates = writes.data.filter((e) => e.action === 'create').map((e) => e.resourceId);
  assert.deepEqual(creates.slice(0, 3), ['writer-2', 'writer-1', 'writer-0']);
  for (let page = 1; page <= 3; page++) {
    const one = await get(`reads=false&action=create&size=1&page=${page}`);
    assert.equal(one.data[0].resourceId, `writer-${3 - page}`);
  }
  const second = await get('reads=false&size=1&page=2');
  assert.deepEqual(second.data.map((e) => e.resourceId), [writes.data[1].resourceId]);
  assert.equal(second.total, writes.total);
  assert.deepEqual((await get('reads=false&action=read')).data, []);
});
