// Three Spindle nodes as one broker over one NATS (the test's own nats-server): a client on one
// node receives what a client on another publishes, only where there is interest (local-only
// traffic never leaves its node), interest follows subscribes and unsubscribes, and a node that
// stops is marked down on the others within a few seconds.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, connect, end, nextMessages, noMessage, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort, TestNats } from '../helpers/nats.ts';

let nats: TestNats;
let natsUrl: string;
const nodes: TestBroker[] = [];

before(async () => {
  nats = await TestNats.start();
  natsUrl = nats.url;
  for (const name of ['node-a', 'node-b.example.com', 'node-c']) {
    nodes.push(await startBroker({ nodeName: name, cluster: { enabled: true, natsUrl, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 3), { message: 'every node sees three running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('a message published on one node reaches subscribers on the others, at QoS 0 and 1', async () => {
  const [a, b, c] = nodes;
  const subB = await connect(b.url);
  const subC = await connect(c.url);
  await subB.subscribeAsync('plant/+/temp', { qos: 1 });
  await subC.subscribeAsync('plant/#', { qos: 1 });
  // The interest has reached node a once a's routing core forwards to both.
  const pub = await connect(a.url);
  await waitFor(async () => {
    const got = Promise.all([nextMessages(subB, 1, 500).catch(() => null), nextMessages(subC, 1, 500).catch(() => null)]);
    pub.publish('plant/1/temp', 'probe', { qos: 0 });
    const [x, y] = await got;
    return x !== null && y !== null;
  }, { message: 'the interest of b and c known on a' });
  const onB = nextMessages(subB, 10);
  const onC = nextMessages(subC, 10);
  for (let i = 0; i < 10; i++) await pub.publishAsync('plant/7/temp', String(i), { qos: 1 });
  assert.deepEqual((await onB).map((m) => m.payload), Array.from({ length: 10 }, (_, i) => String(i)));
  assert.deepEqual((await onC).map((m) => m.payload), Array.from({ length: 10 }, (_, i) => String(i)));
  await end(subB, subC, pub);
});

test('QoS 2 crosses nodes exactly once, and MQTT 5 properties cross with the message', async () => {
  const [a, b] = nodes;
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('v5/#', { qos: 2 });
  const pub = await connect(a.url, { protocolVersion: 5 });
  await waitFor(async () => {
    const n = nextMessages(sub, 1, 500).catch(() => null);
    pub.publish('v5/probe', 'p', { qos: 0 });
    return (await n) !== null;
  }, { message: 'b\'s interest known on a' });
  const got = nextMessages(sub, 5);
  for (let i = 0; i < 5; i++) {
    await pub.publishAsync('v5/data', String(i), {
      qos: 2,
      properties: { userProperties: { k: `v${i}`, origin: 'node-a' }, contentType: 'text/plain', responseTopic: 'v5/reply', correlationData: Buffer.from([i, 0xff]), payloadFormatIndicator: true },
    });
  }
  const messages = await got;
  assert.deepEqual(messages.map((m) => m.payload), ['0', '1', '2', '3', '4']);
  messages.forEach((m, i) => {
    assert.equal(m.packet.qos, 2);
    assert.deepEqual({ ...m.packet.properties?.userProperties }, { k: `v${i}`, origin: 'node-a' });
    assert.equal(m.packet.properties?.contentType, 'text/plain');
    assert.equal(m.packet.properties?.responseTopic, 'v5/reply');
    assert.deepEqual([...(m.packet.properties?.correlationData ?? [])], [i, 0xff]);
    assert.equal(m.packet.properties?.payloadFormatIndicator, true);
  });
  await noMessage(sub, 300);
  await end(sub, pub);
});

test('a burst larger than one NATS message crosses whole, in order (frames are cut at max_payload)', async () => {
  const [a, b] = nodes;
  const sub = await connect(b.url);
  await sub.subscribeAsync('burst/#', { qos: 1 });
  const pub = await connect(a.url);
  await waitFor(async () => {
    const n = nextMessages(sub, 1, 500).catch(() => null);
    pub.publish('burst/probe', 'p', { qos: 1 });
    return (await n) !== null;
  }, { message: 'b\'s interest known on a' });
  const payload = 'x'.repeat(4000);
  const count = 1000; // ~4 MB: several frames
  const got = nextMessages(sub, count);
  const framesBefore = a.cluster!.counters.sentFrames;
  await Promise.all(Array.from({ length: count }, (_, i) => pub.publishAsync('burst/data', `${i}:${payload}`, { qos: 1 })));
  const messages = await got;
  assert.deepEqual(messages.map((m) => Number(m.payload.slice(0, m.payload.indexOf(':')))), Array.from({ length: count }, (_, i) => i));
  assert.ok(a.cluster!.counters.sentFrames - framesBefore >= 4, 'cut into frames');
  await end(sub, pub);
});

test('traffic no other node wants never leaves its node; interest follows unsubscribe', async () => {
  const [a, b] = nodes;
  const local = await connect(a.url);
  await local.subscribeAsync('only-here/#');
  const pub = await connect(a.url);
  const before = a.cluster!.counters.sentMessages;
  const got = nextMessages(local, 50);
  for (let i = 0; i < 50; i++) pub.publish('only-here/x', String(i));
  await got;
  assert.equal(a.cluster!.counters.sentMessages, before, 'nothing sent to other nodes');

  const remote = await connect(b.url);
  await remote.subscribeAsync('only-here/#');
  await waitFor(async () => {
    const n = nextMessages(remote, 1, 500).catch(() => null);
    pub.publish('only-here/y', 'z');
    return (await n) !== null;
  }, { message: 'b\'s new interest known on a' });
  await remote.unsubscribeAsync('only-here/#');
  await waitFor(async () => {
    const sent = a.cluster!.counters.sentMessages;
    const n = nextMessages(local, 1);
    pub.publish('only-here/y', 'after');
    await n;
    return a.cluster!.counters.sentMessages === sent;
  }, { message: 'b\'s interest gone on a' });
  await noMessage(remote, 300);
  await end(local, pub, remote);
});

test('/api/cluster routes answer for the cluster', async () => {
  const n = await startBroker({ nodeName: 'node-d', admin: { enabled: true }, cluster: { enabled: true, natsUrl, localAddress: `127.0.0.1:${await freePort()}` } });
  try {
    await waitFor(() => n.cluster!.nodes().length === 4, { message: 'node-d sees the others' });
    const res = await fetch(`http://127.0.0.1:${n.admin!.port}/public/cluster`);
    const body = (await res.json()) as { nodes: { id: string; status: string }[] };
    assert.deepEqual(body.nodes.map((x) => x.id).sort(), ['node-a', 'node-b.example.com', 'node-c', 'node-d']);
  } finally {
    await n.stop();
  }
  // The others mark it down within a few seconds.
  await waitFor(() => nodes[0].cluster!.nodes().find((x) => x.id === 'node-d')?.status === 'down', { timeout: 10_000, message: 'node-d marked down' });
});
