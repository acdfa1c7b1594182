// Sessions end to end: Clean Start / Clean Session and Session Present, persistent sessions
// keeping subscriptions and queueing while the client is away, session expiry, the bound on
// the offline queue, and redelivery of unacknowledged messages with DUP after a reconnect.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ limits: { maxQueuedMessages: 5, queueDropPolicy: 'drop-oldest' } }); });
after(async () => { await broker.stop(); });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Options for a persistent session in either version. */
function persistent(protocolVersion: 4 | 5, clientId: string, expiry = 300) {
  return protocolVersion === 5
    ? { protocolVersion, clientId, clean: false, properties: { sessionExpiryInterval: expiry } }
    : { protocolVersion, clientId, clean: false };
}

async function queuedDrops(): Promise<number> {
  const stats = await broker.supervisor.collectStats();
  return stats.reduce((n, s) => n + s.dropped.queueFull, 0);
}

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: a clean connection has Session Present 0, also when a session existed [MQTT-3.2.2-2]`, async () => {
    const id = `clean-${protocolVersion}`;
    const a = await connectS(persistent(protocolVersion, id));
    await a.subscribeAsync('clean/x', { qos: 1 });
    await end(a);
    const b = await connectS({ protocolVersion, clientId: id, clean: true });
    assert.equal(await sessionPresent(b), false);
    await end(b);
    // The clean connection discarded the session: a persistent reconnect finds none.
    const c = await connectS(persistent(protocolVersion, id));
    const present = await sessionPresent(c);
    assert.equal(present, false);
    await end(c);
  });

  test(`v${protocolVersion}: a persistent session is resumed with Session Present 1 and keeps its subscriptions [MQTT-3.2.2-3] [MQTT-3.1.2-4]`, async () => {
    const id = `keep-${protocolVersion}`;
    const first = await connectS(persistent(protocolVersion, id));
    assert.equal(await sessionPresent(first), false);
    await first.subscribeAsync('keep/+', { qos: 1 });
    await end(first);
    const again = await connectS(persistent(protocolVersion, id));
    assert.equal(await sessionPresent(again), true);
    // No new SUBSCRIBE: the old subscription still routes.
    const pub = await connectS({ protocolVersion, clientId: `keep-pub-${protocolVersion}` });
    const w = nextMessages(again, 1);
    await pub.publishAsync('keep/a', 'still subscribed', { qos: 1 });
    assert.equal((await w)[0].payload, 'still subscribed');
    await end(again, pub);
  });

  test(`v${protocolVersion}: QoS 1 and 2 messages are queued while the client is away and delivered on reconnect [MQTT-3.1.2-5]`, async () => {
    const id = `queue-${protocolVersion}`;
    const sub = await connectS(persistent(protocolVersion, id));
    await sub.subscribeAsync('queue/#', { qos: 2 });
    await end(sub);
    const pub = await connectS({ protocolVersion, clientId: `queue-pub-${protocolVersion}` });
    await pub.publishAsync('queue/1', 'q1', { qos: 1 });
    await pub.publishAsync('queue/2', 'q2', { qos: 2 });
    await pub.publishAsync('queue/0', 'q0', { qos: 0 });
    // The broker handles a connection's packets in order: once a later QoS 1 publish of the same
    // connection is acknowledged, q0 has been routed, while the session was offline. Wherever q0
    // then is on its way between workers, it is not delivered to the connection attached after
    // it was routed (the broker orders routings and attaches; see Outbox.deliver).
    await pub.publishAsync('elsewhere', 'routed after q0', { qos: 1 });
    const back = mqttClient(persistent(protocolVersion, id));
    await nextMessagesOf(back, 2);
    // A marker published now arrives after anything routed to the session before it.
    const marker = nextMessagesOf(back, 1);
    await pub.publishAsync('queue/marker', 'marker', { qos: 1 });
    await marker;
    // QoS 0 messages are not queued for an offline session by default (limits.queueQos0).
    assert.deepEqual(back.received.map((g) => [g.payload, g.qos]), [['q1', 1], ['q2', 2], ['marker', 1]]);
    await end(await back.ready, pub);
  });
}

test('v5: a session with Session Expiry Interval 1 is gone after it expires [MQTT-3.1.2-23]', async () => {
  const sub = await connectS(persistent(5, 'expire-5', 1));
  await sub.subscribeAsync('expire/x', { qos: 1 });
  await end(sub);
  const pub = await connectS({ protocolVersion: 5, clientId: 'expire-pub' });
  await pub.publishAsync('expire/x', 'before expiry', { qos: 1 });
  // Elapsed time is what this test is about: the session's expiry of 1 s passes.
  await sleep(1600);
  await pub.publishAsync('expire/x', 'after expiry', { qos: 1 });
  const back = mqttClient(persistent(5, 'expire-5', 60));
  assert.equal(await sessionPresent(await back.ready), false);
  // Nothing of the old session arrives: the first message is a marker subscribed to now.
  await back.client.subscribeAsync('expire/marker', { qos: 1 });
  const marker = nextMessagesOf(back, 1);
  await pub.publishAsync('expire/marker', 'marker', { qos: 1 });
  await marker;
  assert.deepEqual(back.received.map((g) => g.payload), ['marker']);
  await end(await back.ready, pub);
});

test('v5: a session with Session Expiry Interval 0 ends with the connection [MQTT-3.1.2-23]', async () => {
  const sub = await connectS({ protocolVersion: 5, clientId: 'expire0', clean: false, properties: { sessionExpiryInterval: 0 } });
  await sub.subscribeAsync('expire0/x', { qos: 1 });
  await end(sub);
  const back = await connectS(persistent(5, 'expire0'));
  assert.equal(await sessionPresent(back), false);
  await end(back);
});

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: the offline queue is bounded (limits.maxQueuedMessages) and drops the oldest, counted as queueFull`, async () => {
    const id = `bound-${protocolVersion}`;
    const sub = await connectS(persistent(protocolVersion, id));
    await sub.subscribeAsync(`bound/${protocolVersion}`, { qos: 1 });
    await end(sub);
    const before = await queuedDrops();
    const pub = await connectS({ protocolVersion, clientId: `bound-pub-${protocolVersion}` });
    for (let i = 0; i < 8; i++) await pub.publishAsync(`bound/${protocolVersion}`, `m${i}`, { qos: 1 });
    const back = mqttClient(persistent(protocolVersion, id));
    await nextMessagesOf(back, 5);
    // Nothing more: a marker published now is the next message [the queue held only five].
    const marker = nextMessagesOf(back, 1);
    await pub.publishAsync(`bound/${protocolVersion}`, 'marker', { qos: 1 });
    await marker;
    assert.deepEqual(back.received.map((g) => g.payload), ['m3', 'm4', 'm5', 'm6', 'm7', 'marker']);
    assert.equal(await queuedDrops() - before, 3);
    await end(await back.ready, pub);
  });

  test(`v${protocolVersion}: unacknowledged QoS 1 and 2 messages are resent with DUP=1 and the same packet id after reconnect [MQTT-4.4.0-1] [MQTT-3.3.1-1]`, async () => {
    const id = `dup-${protocolVersion}`;
    const props = protocolVersion === 5 ? { properties: { sessionExpiryInterval: 300 } } : {};
    const { client: raw } = await RawClient.connect(broker.url, { protocolVersion, clientId: id, clean: false, ...props });
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `dup/${protocolVersion}/+`, qos: 2 }] } as never);
    await raw.next('suback');
    const pub = await connectS({ protocolVersion, clientId: `dup-pub-${protocolVersion}` });
    await pub.publishAsync(`dup/${protocolVersion}/1`, 'one', { qos: 1 });
    await pub.publishAsync(`dup/${protocolVersion}/2`, 'two', { qos: 2 });
    const p1 = await raw.next('publish');
    const p2 = await raw.next('publish');
    assert.equal(p1.dup, false);
    assert.equal(p2.dup, false);
    // Not acknowledged: the connection drops (the next CONNECT takes over whether or not the
    // broker has seen the close yet).
    raw.destroy();
    const { client: again, connack } = await RawClient.connect(broker.url, { protocolVersion, clientId: id, clean: false, ...props });
    assert.equal(connack.sessionPresent, true);
    const r1 = await again.next('publish');
    const r2 = await again.next('publish');
    assert.deepEqual([r1.dup, r1.qos, r1.messageId, r1.payload.toString()], [true, 1, p1.messageId, 'one']);
    assert.deepEqual([r2.dup, r2.qos, r2.messageId, r2.payload.toString()], [true, 2, p2.messageId, 'two']);
    // Acknowledged now: nothing more is resent on the next reconnect.
    again.send({ cmd: 'puback', messageId: r1.messageId } as never);
    again.send({ cmd: 'pubrec', messageId: r2.messageId } as never);
    const rel = await again.next('pubrel');
    assert.equal(rel.messageId, r2.messageId);
    again.destroy();
    // PUBREL unanswered: it is the PUBREL that is resent, not the PUBLISH [MQTT-4.4.0-1].
    const { client: third } = await RawClient.connect(broker.url, { protocolVersion, clientId: id, clean: false, ...props });
    const relAgain = await third.next('pubrel');
    assert.equal(relAgain.messageId, r2.messageId);
    third.send({ cmd: 'pubcomp', messageId: r2.messageId } as never);
    assert.deepEqual((await third.collect(300)).map((p) => p.cmd), []);
    third.destroy();
    await end(pub);
  });
}

// ---- helpers ------------------------------------------------------------------------------

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';

/** Session Present from the CONNACK mqtt.js received. */
async function sessionPresent(client: MqttClient): Promise<boolean> {
  const present = lastConnack.get(client);
  assert.notEqual(present, undefined, 'no CONNACK recorded');
  return present!;
}
const lastConnack = new WeakMap<MqttClient, boolean>();

/** connect() that records Session Present. */
async function connectS(options: IClientOptions): Promise<MqttClient> {
  const c = mqttClient(options);
  return c.ready;
}

/** A client whose message listener is attached before CONNECT, so queued messages delivered
 * right after CONNACK are not missed. */
function mqttClient(options: IClientOptions): { client: MqttClient; ready: Promise<MqttClient>; received: { payload: string; qos: number }[] } {
  const client = mqtt.connect(broker.url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
  const received: { payload: string; qos: number }[] = [];
  client.on('message', (_t, payload, packet) => received.push({ payload: payload.toString(), qos: packet.qos }));
  const ready = new Promise<MqttClient>((resolve, reject) => {
    client.once('connect', (ack) => { lastConnack.set(client, ack.sessionPresent); resolve(client); });
    client.once('error', reject);
  });
  return { client, ready, received };
}

function nextMessagesOf(c: { client: MqttClient }, n: number) {
  return nextMessages(c.client, n);
}
