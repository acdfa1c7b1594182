// The admin API of any node answers for the cluster (src/cluster/admin-ops.ts, three nodes and the
// test's own nats-server): node a lists the connections, subscriptions and session messages of
// clients on b and c (each saying its node), kicks (close, down) a client held by another node,
// answers 404 for a client no node holds, 409 for subscribing on behalf of a client of another
// node; a node that is running but does not answer is reported (nodesMissing) after the timeout,
// not waited for without end.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, disconnectReason, end, persistent } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { token } from '../../src/cluster/names.ts';
import { ASK_TIMEOUT_MS } from '../../src/cluster/index.ts';
import { WIRE_FORMAT } from '../../src/cluster/wire-format.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['adm-a', 'adm-b', 'adm-c']) {
    nodes.push(await startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 3), { message: 'every node sees three running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

/** Resolves when the client's connection closes (listened for before it is kicked). */
function closing(client: MqttClient): Promise<void> {
  return new Promise((resolve) => client.once('close', () => resolve()));
}

test('node a lists the connections of every node, each with its node, paged across nodes', async () => {
  const [a, b, c] = nodes;
  const clients: MqttClient[] = [];
  // One at a time, so the connect times give the order (oldest first; client ids in the same
  // order break ties within a millisecond).
  for (const [n, id] of [[b, 'adm-list-1'], [c, 'adm-list-2'], [a, 'adm-list-3'], [b, 'adm-list-4']] as const) clients.push(await connect(n.url, { clientId: id }));
  const r = await a.api('POST', '/mqtt/connection', { body: { clientId: 'adm-list-', page: 1, size: 10 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.total, 4);
  assert.deepEqual(r.json.nodesMissing, []);
  assert.deepEqual(r.json.data.map((x: { clientId: string; node: string }) => [x.clientId, x.node]), [['adm-list-1', 'adm-b'], ['adm-list-2', 'adm-c'], ['adm-list-3', 'adm-a'], ['adm-list-4', 'adm-b']]);
  // A page that spans what several nodes hold.
  const page2 = await c.api('POST', '/mqtt/connection', { body: { clientId: 'adm-list-', page: 2, size: 3 } });
  assert.equal(page2.json.total, 4);
  assert.deepEqual(page2.json.data.map((x: { clientId: string }) => x.clientId), ['adm-list-4']);
  // The username filter and the port filter of /api/mqtt/connection cross too.
  const none = await a.api('POST', '/api/mqtt/connection', { body: { clientId: 'adm-list-', port: 1 } });
  assert.equal(none.json.total, 0);
  const counters = (await a.api('GET', '/api/cluster/status')).json.data.parts.adminOps;
  assert.ok(counters.sent >= 2, JSON.stringify(counters));
  assert.ok((await b.api('GET', '/api/cluster/status')).json.data.parts.adminOps.served >= 1);
  await end(...clients);
});

test('subscriptions of every node: /topic/query sums them, /topic/connect/query names each node', async () => {
  const [a, b, c] = nodes;
  const onB = await connect(b.url, { clientId: 'adm-sub-b' });
  const onC = await connect(c.url, { clientId: 'adm-sub-c' });
  await onB.subscribeAsync('adm/sub/+', { qos: 1 });
  await onC.subscribeAsync(['adm/sub/+', 'adm/other'], { qos: 0 });
  const topics = await a.api('POST', '/topic/query', { body: { topic: 'adm/#' } });
  assert.equal(topics.status, 200, topics.text);
  assert.deepEqual(topics.json.data.map((t: { topic: string; subscribers: number }) => [t.topic, t.subscribers]), [['adm/other', 1], ['adm/sub/+', 2]]);
  assert.deepEqual(topics.json.nodesMissing, []);
  const subs = await a.api('POST', '/topic/connect/query', { body: { topic: 'adm/sub/+' } });
  assert.equal(subs.json.total, 2);
  assert.deepEqual(subs.json.data.map((s: { clientId: string; node: string; qos: number }) => [s.clientId, s.node, s.qos]), [['adm-sub-b', 'adm-b', 1], ['adm-sub-c', 'adm-c', 0]]);
  // Subscribing on behalf of a client of another node runs on that node's admin API only.
  const refused = await a.api('POST', '/mqtt/connection/subscribe', { body: { clientId: 'adm-sub-b', topic: 'adm/more' } });
  assert.equal(refused.status, 409, refused.text);
  assert.match(refused.text, /adm-b/);
  await end(onB, onC);
});

test("a session held by another node: its messages, runtime and check through node a, and clearing it", async () => {
  const [a, b] = nodes;
  const sub = await connect(b.url, persistent('adm-sess-1'));
  await sub.subscribeAsync('adm/sess', { qos: 1 });
  const runtime = await a.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'adm-sess-1' } });
  assert.equal(runtime.status, 200, runtime.text);
  assert.equal(runtime.json.data.node, 'adm-b');
  assert.equal(runtime.json.data.connected, true);
  const check = await a.api('POST', '/api/check', { body: { clientId: 'adm-sess-1' } });
  assert.equal(check.status, 200, check.text);
  assert.equal(check.json.data[0].node, 'adm-b');
  assert.equal(check.json.data[0].nodeIp, '127.0.0.1');
  await end(sub);
  const pub = await connect(b.url);
  for (let i = 0; i < 3; i++) await pub.publishAsync('adm/sess', `q${i}`, { qos: 1 });
  await end(pub);
  const held = await waitFor(async () => {
    const r = await a.api('POST', '/mqtt/session/query', { body: { clientId: 'adm-sess-1', size: 2 } });
    return r.json?.total === 3 && r;
  }, { message: 'the session on b holds three messages' });
  assert.equal(held.json.node, 'adm-b');
  assert.deepEqual(held.json.data.map((m: { payload: string }) => m.payload), ['q0', 'q1']);
  const cleared = await a.api('POST', '/mqtt/session/clear', { body: { clientId: 'adm-sess-1' } });
  assert.equal(cleared.status, 200, cleared.text);
  assert.equal(cleared.json.data.removed, 3);
  assert.equal(cleared.json.data.node, 'adm-b');
  assert.equal((await b.api('POST', '/mqtt/session/query', { body: { clientId: 'adm-sess-1' } })).json.total, 0);
  // A refusal of the node that holds the client comes back as it is: an offline client has no CONNECT to check.
  const offline = await a.api('POST', '/api/check', { body: { clientId: 'adm-sess-1' } });
  assert.equal(offline.status, 404, offline.text);
  assert.match(offline.text, /not connected/);
  assert.equal((await a.api('POST', '/mqtt/connection/close', { body: { clientId: 'adm-sess-1' } })).status, 200);
});

test('close through node a kicks a client held by b and ends its session', async () => {
  const [a, b] = nodes;
  const client = await connect(b.url, persistent('adm-close-1'));
  await client.subscribeAsync('adm/close', { qos: 1 });
  const reason = disconnectReason(client);
  const gone = closing(client);
  const r = await a.api('POST', '/mqtt/connection/close', { body: { clientId: 'adm-close-1' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.node, 'adm-b');
  assert.equal(r.json.data.wasConnected, true);
  assert.equal(await reason, 0x98, 'DISCONNECT Administrative action');
  await gone;
  await waitFor(() => b.supervisor.workerOf('adm-close-1') === undefined, { message: 'the session ended on b' });
  const runtime = await a.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'adm-close-1' } });
  assert.equal(runtime.status, 404, runtime.text);
  await end(client);
});

test('down through node a drops the connection of a client held by c; its persistent session stays', async () => {
  const [a, c] = [nodes[0], nodes[2]];
  const client = await connect(c.url, persistent('adm-down-1'));
  const reason = disconnectReason(client);
  const gone = closing(client);
  const r = await a.api('POST', '/mqtt/connection/down', { body: { clientId: 'adm-down-1' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.node, 'adm-c');
  assert.equal(await reason, 0x98);
  await gone;
  const kept = await waitFor(async () => {
    const x = await a.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'adm-down-1' } });
    return x.json?.data?.connected === false && x;
  }, { message: 'the session on c is offline' });
  assert.equal(kept.json.data.node, 'adm-c');
  assert.equal(kept.json.data.persistent, true);
  // Down again: the client is not connected (the refusal of the node holding it).
  assert.equal((await a.api('POST', '/mqtt/connection/down', { body: { clientId: 'adm-down-1' } })).status, 404);
  assert.equal((await a.api('POST', '/mqtt/connection/close', { body: { clientId: 'adm-down-1' } })).status, 200);
  await end(client);
});

test('a client id no node holds is 404 on every client route', async () => {
  const a = nodes[0];
  for (const path of ['/mqtt/connection/close', '/mqtt/connection/down', '/mqtt/connection/runtime', '/api/check', '/mqtt/session/query', '/mqtt/session/clear']) {
    const r = await a.api('POST', path, { body: { clientId: 'adm-nobody' } });
    assert.equal(r.status, 404, `${path}: ${r.text}`);
  }
});

test('another node refuses an operation off the allow-list and bad arguments', async () => {
  const nc = await natsConnect({ servers: nats.url });
  try {
    const subject = `spindle.ops.${token('adm-b')}`;
    const ask = async (body: unknown) => (await nc.request(subject, JSON.stringify(body), { timeout: 5000 })).json<{ ok: boolean; refusal?: { status: number; message: string } }>();
    const offList = await ask({ op: 'clients.publish', args: { topic: 'x' } });
    assert.equal(offList.ok, false);
    assert.equal(offList.refusal!.status, 400);
    assert.match(offList.refusal!.message, /not an operation other nodes may run/);
    const badArgs = await ask({ op: 'clients.close', args: { clientId: 'x', mode: 'explode' } });
    assert.equal(badArgs.refusal!.status, 400);
    assert.match(badArgs.refusal!.message, /mode/);
    assert.ok(nodes[1].cluster!.adminOps!.counters.badRequests >= 2);
  } finally {
    await nc.close();
  }
});

/** A node that heartbeats like one (so the others think it runs) but never answers an admin
 * query: what a hung node looks like from the outside. */
async function hungNode(name: string): Promise<{ stop(): Promise<void> }> {
  const nc: NatsConnection = await natsConnect({ servers: nats.url });
  const epoch = Date.now();
  nc.subscribe(`spindle.int.sync.${token(name)}`, { callback: (_e, m) => {
    m.respond(JSON.stringify({ seq: 0, epoch, filters: [] }));
  } });
  nc.subscribe(`spindle.ops.${token(name)}`, { callback: () => undefined });
  const beat = () => nc.publish('spindle.hb', JSON.stringify({ node: name, epoch, address: '127.0.0.9:1', wire: WIRE_FORMAT }));
  beat();
  const timer = setInterval(beat, 500);
  return {
    async stop() {
      clearInterval(timer);
      await nc.close();
    },
  };
}

test('a running node that does not answer is reported after the timeout, not waited for', async () => {
  const a = nodes[0];
  // Connected first: a CONNECT waits for every running node's answer to its client-id claim.
  const client = await connect(nodes[1].url, { clientId: 'adm-hung-1' });
  const gone = closing(client);
  const ghost = await hungNode('adm-ghost');
  try {
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'adm-ghost' && n.status === 'running'), { message: 'a sees the hung node running' });
    const started = Date.now();
    const r = await a.api('POST', '/mqtt/connection', { body: { clientId: 'adm-hung-' } });
    const took = Date.now() - started;
    assert.equal(r.status, 200, r.text);
    assert.ok(took >= ASK_TIMEOUT_MS - 100 && took < ASK_TIMEOUT_MS + 3000, `answered in ${took} ms`);
    assert.equal(r.json.total, 1, 'what the other nodes answered is there');
    assert.deepEqual(r.json.nodesMissing, [{ node: 'adm-ghost', reason: `no answer within ${ASK_TIMEOUT_MS} ms` }]);
    // A client no answering node holds: not 404 (the hung node may hold it) but 503 naming it.
    const unknown = await a.api('POST', '/mqtt/connection/close', { body: { clientId: 'adm-hung-nobody' } });
    assert.equal(unknown.status, 503, unknown.text);
    assert.match(unknown.text, /adm-ghost/);
    // A client another node holds: the answer of the node holding it is enough (no wait for the
    // hung one).
    const kickedAt = Date.now();
    const kicked = await a.api('POST', '/mqtt/connection/close', { body: { clientId: 'adm-hung-1' } });
    assert.equal(kicked.status, 200, kicked.text);
    assert.equal(kicked.json.data.node, 'adm-b');
    assert.ok(Date.now() - kickedAt < ASK_TIMEOUT_MS - 1000, 'answered before the hung node timed out');
    await gone;
    assert.ok(a.cluster!.adminOps!.counters.timeouts >= 2);
  } finally {
    await ghost.stop();
  }
  // Once marked down it is not asked any more: answers come at once again.
  await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'adm-ghost' && n.status === 'down'), { message: 'the hung node is marked down' });
  const started = Date.now();
  const r = await a.api('POST', '/mqtt/connection', { body: { clientId: 'adm-hung-' } });
  assert.deepEqual(r.json.nodesMissing, []);
  assert.ok(Date.now() - started < ASK_TIMEOUT_MS, 'no wait for a node that is down');
});

test('node a counts what crossed in /prometheus', async () => {
  const r = await nodes[0].api('GET', '/prometheus');
  assert.match(r.text, /spindle_cluster_admin_queries_total\{event="sent",node="adm-a"\} [1-9]/);
  assert.match(r.text, /spindle_cluster_admin_queries_total\{event="timeout",node="adm-a"\} [1-9]/);
});
