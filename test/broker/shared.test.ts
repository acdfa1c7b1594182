// Shared subscriptions (MQTT 5.0 section 4.8.2): "$share/<group>/<filter>" and "$queue/<filter>"
// spread the matching messages over the group's members, each message to one member.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

/** Records what each client receives: payloads by client index (markers apart). */
function record(clients: MqttClient[]): string[][] {
  const got = clients.map(() => [] as string[]);
  clients.forEach((c, i) => c.on('message', (t, payload) => {
    if (!t.startsWith('marker/')) got[i].push(payload.toString());
  }));
  return got;
}

/**
 * "Nothing more arrives", without a timed silence: every client subscribes (plainly) to a marker
 * topic, `pub` publishes the marker after its messages, and each client must get it. Deliveries
 * from one publisher to one subscriber keep their order, so a duplicate of any earlier message
 * would have arrived before the marker.
 */
async function flush(pub: MqttClient, clients: MqttClient[], name: string): Promise<void> {
  const topic = `marker/${name}`;
  await Promise.all(clients.map((c) => c.subscribeAsync(topic, { qos: 1 })));
  const marked = clients.map(() => false);
  clients.forEach((c, i) => c.on('message', (t) => {
    if (t === topic) marked[i] = true;
  }));
  await pub.publishAsync(topic, 'marker', { qos: 1 });
  await waitFor(() => marked.every(Boolean), { message: `the marker ${topic} at every client` });
}

const total = (got: string[][]) => got.reduce((a, g) => a + g.length, 0);

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: $share/g/t gives each message to exactly one member, spread over members on both workers [MQTT-4.8.2-2 context]`, async () => {
    // Six members: the kernel spreads their connections over both workers.
    const members = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => connect(broker.url, { protocolVersion, clientId: `sh-${protocolVersion}-${i}` })));
    await Promise.all(members.map((m) => m.subscribeAsync(`$share/g/sh/${protocolVersion}`, { qos: 1 })));
    const got = record(members);
    const pub = await connect(broker.url, { protocolVersion, clientId: `sh-${protocolVersion}-pub` });
    for (let i = 0; i < 60; i++) await pub.publishAsync(`sh/${protocolVersion}`, `m${i}`, { qos: 1 });
    await waitFor(() => total(got) >= 60);
    await flush(pub, members, `sh-${protocolVersion}`); // nothing more may arrive
    const all = got.flat().sort();
    assert.equal(all.length, 60, 'every message delivered once in total');
    assert.deepEqual(all, Array.from({ length: 60 }, (_, i) => `m${i}`).sort());
    assert.ok(got.filter((g) => g.length > 0).length > 1, `spread over members: ${got.map((g) => g.length)}`);
    await end(pub, ...members);
  });
}

test('$queue/t is a shared subscription: each message to one member', async () => {
  const members = await Promise.all([0, 1, 2, 3].map((i) => connect(broker.url, { protocolVersion: 5, clientId: `q-${i}` })));
  await Promise.all(members.map((m) => m.subscribeAsync('$queue/q/t', { qos: 1 })));
  const got = record(members);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'q-pub' });
  for (let i = 0; i < 40; i++) await pub.publishAsync('q/t', `m${i}`, { qos: 1 });
  await waitFor(() => total(got) >= 40);
  await flush(pub, members, 'q');
  assert.deepEqual(got.flat().sort(), Array.from({ length: 40 }, (_, i) => `m${i}`).sort());
  assert.ok(got.filter((g) => g.length > 0).length > 1, `spread over members: ${got.map((g) => g.length)}`);
  await end(pub, ...members);
});

test('two share groups on one filter each get every message once; a plain subscriber gets all [MQTT-4.8.2-2 context]', async () => {
  const a = await Promise.all([0, 1].map((i) => connect(broker.url, { protocolVersion: 5, clientId: `grp-a-${i}` })));
  const b = await Promise.all([0, 1].map((i) => connect(broker.url, { protocolVersion: 5, clientId: `grp-b-${i}` })));
  const plain = await connect(broker.url, { protocolVersion: 5, clientId: 'grp-plain' });
  await Promise.all(a.map((m) => m.subscribeAsync('$share/a/grp/t', { qos: 1 })));
  await Promise.all(b.map((m) => m.subscribeAsync('$share/b/grp/+', { qos: 1 })));
  await plain.subscribeAsync('grp/t', { qos: 1 });
  const gotA = record(a);
  const gotB = record(b);
  const wPlain = nextMessages(plain, 10);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'grp-pub' });
  for (let i = 0; i < 10; i++) await pub.publishAsync('grp/t', `m${i}`, { qos: 1 });
  assert.equal((await wPlain).length, 10);
  await waitFor(() => total(gotA) >= 10 && total(gotB) >= 10);
  await flush(pub, [...a, ...b], 'grp');
  const expected = Array.from({ length: 10 }, (_, i) => `m${i}`).sort();
  assert.deepEqual(gotA.flat().sort(), expected);
  assert.deepEqual(gotB.flat().sort(), expected);
  await end(pub, plain, ...a, ...b);
});

test('a member that leaves (unsubscribes or disconnects) gets nothing more; the rest get every message', async () => {
  const members = await Promise.all([0, 1, 2, 3].map((i) => connect(broker.url, { protocolVersion: 5, clientId: `leave-${i}` })));
  await Promise.all(members.map((m) => m.subscribeAsync('$share/g/leave/t', { qos: 1 })));
  await members[0].unsubscribeAsync('$share/g/leave/t');
  await members[1].endAsync();
  const stay = members.slice(2);
  const got = record(members);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'leave-pub' });
  for (let i = 0; i < 30; i++) await pub.publishAsync('leave/t', `m${i}`, { qos: 1 });
  await waitFor(() => total(got) >= 30);
  await flush(pub, [members[0], ...stay], 'leave');
  assert.equal(got[0].length, 0, 'the unsubscribed member gets nothing');
  assert.equal(got[1].length, 0);
  assert.deepEqual(got.flat().sort(), Array.from({ length: 30 }, (_, i) => `m${i}`).sort());
  assert.ok(got[2].length > 0 && got[3].length > 0, `both remaining members served: ${got.map((g) => g.length)}`);
  await end(pub, members[0], ...stay);
});

test('a shared subscription gets no retained messages; a plain one does (MQTT 5.0 section 3.3.1.3: retained messages go to new non-shared subscriptions)', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'sh-ret-pub' });
  await pub.publishAsync('shret/t', 'kept', { qos: 1, retain: true });
  const shared = await connect(broker.url, { protocolVersion: 5, clientId: 'sh-ret-member' });
  await shared.subscribeAsync('$share/g/shret/t', { qos: 1 });
  const q = await connect(broker.url, { protocolVersion: 4, clientId: 'sh-ret-queue' });
  await q.subscribeAsync('$queue/shret/t', { qos: 1 });
  const plain = await connect(broker.url, { protocolVersion: 5, clientId: 'sh-ret-plain' });
  const w = nextMessages(plain, 1);
  await plain.subscribeAsync('shret/t', { qos: 1 });
  assert.equal((await w)[0].packet.retain, true);
  // A live marker on the topic comes after any retained message the shared SUBSCRIBEs would get.
  const firsts = Promise.all([nextMessages(shared, 1), nextMessages(q, 1)]);
  await pub.publishAsync('shret/t', 'marker', { qos: 1 });
  for (const [m] of await firsts) assert.deepEqual([m.payload, m.packet.retain], ['marker', false], 'no retained message on a shared subscription');
  await pub.publishAsync('shret/t', '', { qos: 1, retain: true });
  await end(pub, shared, q, plain);
});
