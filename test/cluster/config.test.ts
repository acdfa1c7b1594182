// Configuration replicated across the cluster (src/cluster/config-sync.ts), three nodes and the
// test's own nats-server with JetStream: an endpoint added, changed and removed through one node's
// admin API listens, changes and closes on the others (the nodes share the port through
// SO_REUSEPORT); a rule added on one node fires once for a message published on another; a user
// added on one node signs in on another; a node started after the changes catches up; a document
// no node can apply is counted and skipped; a change made while NATS is away arrives once it is back.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { connect as natsConnect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';

import { startAdminBroker, basic, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { CONFIG_BUCKET } from '../../src/cluster/config-sync.ts';

let nats: TestNats;
let natsUrl: string;
const nodes: AdminBroker[] = [];

async function startNode(name: string): Promise<AdminBroker> {
  return startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl, localAddress: `127.0.0.1:${await freePort()}` } });
}

/** Whether `port` takes an MQTT connection (CONNACK) now. */
async function mqttAnswers(port: number): Promise<boolean> {
  try {
    const c = await connect(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 1000 });
    await end(c);
    return true;
  } catch {
    return false;
  }
}

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  natsUrl = nats.url;
  for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startNode(name));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 3), { message: 'every node sees three running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('an endpoint added, changed and removed on one node is on every node', async () => {
  const [a, b, c] = nodes;
  const port = await freePort();
  const added = await a.api('POST', '/api/endpoints/add', { body: { port, maxConnectionSize: 100 } });
  assert.equal(added.status, 200, added.text);
  for (const n of [b, c]) {
    await waitFor(async () => (await n.api('GET', `/api/endpoints/status?port=${port}`)).json?.data?.running === true, { message: 'the endpoint runs on the other node' });
    assert.equal((await n.api('GET', `/api/endpoints/get?port=${port}`)).json.data.maxConnectionSize, 100);
  }
  // The kernel spreads connections over the three nodes' listeners: each one answers MQTT.
  for (let i = 0; i < 6; i++) assert.ok(await mqttAnswers(port), 'a client connects on the shared port');

  const changed = await b.api('POST', '/api/endpoints/update', { body: { port, maxConnectionSize: 7 } });
  assert.equal(changed.status, 200, changed.text);
  for (const n of [a, c]) await waitFor(async () => (await n.api('GET', `/api/endpoints/get?port=${port}`)).json?.data?.maxConnectionSize === 7, { message: 'the change reached the other node' });

  assert.equal((await c.api('POST', '/api/endpoints/remove', { body: { port } })).status, 200);
  for (const n of [a, b]) await waitFor(async () => (await n.api('GET', `/api/endpoints/get?port=${port}`)).status === 404, { message: 'the removal reached the other node' });
  await waitFor(async () => !(await mqttAnswers(port)), { message: 'nothing listens on the port any more' });
});

test('a rule added on one node fires once for a message published on another', async () => {
  const [a, b, c] = nodes;
  const added = await a.api('POST', '/rule/add', {
    body: { id: 'cluster-echo', name: 'cluster-echo', sql: 'SELECT payload.v AS v, topic(2) AS site FROM "cfg/+/in"', actions: [{ type: 'republish', config: { topic: 'cfg/${site}/out', payload: '{"v":${v}}', qos: 1 } }] },
  });
  assert.equal(added.status, 200, added.text);
  await waitFor(async () => (await b.api('POST', '/rule/query', { body: { name: 'cluster-echo' } })).text.includes('cluster-echo'), { message: 'the rule is on node b' });
  // A subscriber on c, a publisher on b: the rule runs on b, its output crosses to c.
  const sub = await connect(c.url);
  await sub.subscribeAsync('cfg/+/out', { qos: 1 });
  const pub = await connect(b.url);
  const got = await waitFor(async () => {
    const next = nextMessages(sub, 1, 500).catch(() => null);
    await pub.publishAsync('cfg/s1/in', JSON.stringify({ v: 42 }), { qos: 1 });
    return next;
  }, { message: 'the republished message reached node c' });
  assert.equal(got[0].topic, 'cfg/s1/out');
  assert.deepEqual(JSON.parse(got[0].payload), { v: 42 });
  // Once: not again by the rule of another node the message crossed to.
  const outs: string[] = [];
  const collect = (topic: string) => {
    if (topic === 'cfg/s2/out') outs.push(topic);
  };
  sub.on('message', collect);
  await pub.publishAsync('cfg/s2/in', JSON.stringify({ v: 7 }), { qos: 1 });
  await waitFor(() => outs.length > 0, { message: 'the second output arrived' });
  // Copies from other nodes' rules would come within the same few ticks.
  await noMessage(sub, 1000);
  sub.off('message', collect);
  assert.equal(outs.length, 1, 'the rule fired once for one message');
  // The rule ran on the publisher's node only (the message crossed to a and c for their rules'
  // interest, and their rules left it alone).
  const matched = async (n: AdminBroker) => (await n.api('POST', '/rule/runtime', { body: { id: 'cluster-echo' } })).json.data.matched as number;
  assert.deepEqual([await matched(a), await matched(c)], [0, 0]);
  assert.ok(await matched(b) >= 2);
  // Deleted on c: gone from a and b, nothing republished.
  assert.equal((await c.api('POST', '/rule/delete', { body: { id: 'cluster-echo' } })).status, 200);
  for (const n of [a, b]) await waitFor(async () => !(await n.api('POST', '/rule/query', { body: { name: 'cluster-echo' } })).text.includes('cluster-echo'), { message: 'the deletion reached the other node' });
  await pub.publishAsync('cfg/s3/in', JSON.stringify({ v: 1 }), { qos: 1 });
  await noMessage(sub, 500);
  await end(sub, pub);
});

test('a user added on one node signs in on the others; the file admin stays per node', async () => {
  const [a, b, c] = nodes;
  const added = await a.api('POST', '/api/users/add', { body: { username: 'ops', password: 'ops-password-1', role: 'admin' } });
  assert.equal(added.status, 200, added.text);
  for (const n of [b, c]) {
    await waitFor(async () => (await n.api('GET', '/api/endpoints/list', { authorization: basic('ops', 'ops-password-1') })).status === 200, { message: 'the user signs in on the other node' });
    const login = await n.api('POST', '/public/login', { as: 'none', body: { username: 'ops', password: 'ops-password-1' } });
    assert.equal(login.status, 200, login.text);
  }
  // A new password on b: the old one is refused on a.
  assert.equal((await b.api('POST', '/api/users/password', { body: { username: 'ops', password: 'ops-password-2' } })).status, 200);
  await waitFor(async () => (await a.api('GET', '/api/endpoints/list', { authorization: basic('ops', 'ops-password-2') })).status === 200, { message: 'the new password works on node a' });
  assert.equal((await a.api('GET', '/api/endpoints/list', { authorization: basic('ops', 'ops-password-1') })).status, 401);
  // The admin of the configuration file is not replicated: every node keeps its own record.
  const hashes = nodes.map((n) => n.admin!.context.auth.record('admin')!.passwordHash);
  assert.equal(new Set(hashes).size, 3, 'each node hashed its own admin password');
});

test('/api/publish on one node reaches subscribers on the others', async () => {
  const [a, b, c] = nodes;
  const onB = await connect(b.url);
  const onC = await connect(c.url);
  await onB.subscribeAsync('api-pub/#', { qos: 1 });
  await onC.subscribeAsync('api-pub/+', { qos: 1 });
  await waitFor(async () => {
    const got = Promise.all([nextMessages(onB, 1, 500).catch(() => null), nextMessages(onC, 1, 500).catch(() => null)]);
    const res = await a.api('POST', '/api/publish', { body: { topic: 'api-pub/x', payload: 'from-a', qos: 1 } });
    assert.equal(res.status, 200);
    const [x, y] = await got;
    return x?.[0]?.payload === 'from-a' && y?.[0]?.payload === 'from-a';
  }, { message: 'the API publish on a reaches b and c' });
  await end(onB, onC);
});

test('a node started after the changes catches up', async () => {
  const [a] = nodes;
  const port = await freePort();
  assert.equal((await a.api('POST', '/api/endpoints/add', { body: { port } })).status, 200);
  assert.equal((await a.api('POST', '/rule/add', { body: { id: 'late-rule', name: 'late-rule', sql: 'SELECT * FROM "late/in"', actions: [{ type: 'republish', config: { topic: 'late/out', payload: '${payload}' } }] } })).status, 200);
  assert.equal((await a.api('POST', '/api/users/add', { body: { username: 'late', password: 'late-password', role: 'viewer' } })).status, 200);
  assert.equal((await a.api('POST', '/api/users/delete', { body: { username: 'ops' } })).status, 200);
  const d = await startNode('node-d');
  nodes.push(d);
  // Caught up once started: the bucket's values were applied before startAdmin answered.
  assert.equal((await d.api('GET', `/api/endpoints/status?port=${port}`)).json?.data?.running, true);
  assert.ok((await d.api('POST', '/rule/query', { body: { name: 'late-rule' } })).text.includes('late-rule'));
  assert.equal((await d.api('GET', '/api/endpoints/list', { authorization: basic('late', 'late-password') })).status, 200);
  assert.equal((await d.api('GET', '/api/endpoints/list', { authorization: basic('ops', 'ops-password-2') })).status, 401, 'a user deleted before it started is not there');
  // And the rule works for its own clients.
  const sub = await connect(d.url);
  await sub.subscribeAsync('late/out', { qos: 0 });
  const pub = await connect(d.url);
  const got = await waitFor(async () => {
    const next = nextMessages(sub, 1, 500).catch(() => null);
    pub.publish('late/in', 'hello');
    return next;
  }, { message: 'the late node runs the rule' });
  assert.equal(got[0].payload, 'hello');
  await end(sub, pub);
});

test('a document a node cannot apply is logged and counted; the node carries on', async () => {
  const nc = await natsConnect({ servers: natsUrl });
  const kv = await new Kvm(nc).open(CONFIG_BUCKET);
  const key = (kind: string, id: string) => `${Buffer.from(kind).toString('base64url')}.${Buffer.from(id).toString('base64url')}`;
  const failed = async (n: AdminBroker, kind: string) => {
    const m = await n.admin!.context.registry.getSingleMetric('spindle_cluster_config_failed_total')!.get();
    return m.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  };
  const before = await Promise.all(nodes.map((n) => failed(n, 'rule')));
  await kv.put(key('rule', 'not-a-rule'), JSON.stringify({ id: 'not-a-rule', name: 'x' }));
  await kv.put(key('rule', 'not-json'), '{"id":');
  await kv.put(key('no-such-kind', 'x'), '{}');
  for (const [i, n] of nodes.entries()) {
    await waitFor(async () => (await failed(n, 'rule')) >= before[i] + 2, { message: 'both bad rules counted' });
    await waitFor(async () => (await failed(n, 'unknown')) >= 1, { message: 'the unknown kind counted' });
    assert.equal(await n.admin!.context.store.getAdmin('rule', 'not-a-rule'), undefined, 'a refused document is not stored');
    assert.equal((await n.api('POST', '/rule/query', { body: { name: 'x' } })).status, 200, 'the node still answers');
  }
  // A good change after the bad ones still applies everywhere.
  const port = await freePort();
  assert.equal((await nodes[1].api('POST', '/api/endpoints/add', { body: { port } })).status, 200);
  for (const n of nodes) await waitFor(async () => (await n.api('GET', `/api/endpoints/status?port=${port}`)).json?.data?.running === true, { message: 'a later change applies' });
  await nc.close();
});

test('a change made while NATS is away reaches the other nodes when it comes back', async () => {
  const [a, b] = nodes;
  await nats.stop();
  // Made on a while NATS is down: kept here, written to the bucket once NATS is back.
  const port = await freePort();
  assert.equal((await a.api('POST', '/api/endpoints/add', { body: { port } })).status, 200);
  await nats.restart();
  await waitFor(async () => (await b.api('GET', `/api/endpoints/status?port=${port}`)).json?.data?.running === true, { message: 'the change reached node b after NATS came back' });
  // And changes made after that still flow both ways.
  assert.equal((await b.api('POST', '/api/endpoints/remove', { body: { port } })).status, 200);
  await waitFor(async () => (await a.api('GET', `/api/endpoints/get?port=${port}`)).status === 404, { message: 'a change after the return reached node a' });
});
