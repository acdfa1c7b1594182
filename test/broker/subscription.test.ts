// SUBSCRIBE and UNSUBSCRIBE end to end: subscription identifiers, No Local, overlapping
// subscriptions, UNSUBACK codes, invalid filters, and $SYS topics against wildcards.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ sys: { enabled: true, interval: 1 } }); });
after(async () => { await broker.stop(); });

test('a delivered message carries the Subscription Identifier of the matching subscription [MQTT-3.3.4-3]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'sid-one' });
  await sub.subscribeAsync('sid/one/+', { qos: 1, properties: { subscriptionIdentifier: 42 } });
  await sub.subscribeAsync('sid/none', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'sid-one-pub' });
  const w = nextMessages(sub, 2);
  await pub.publishAsync('sid/one/x', 'a', { qos: 1 });
  await pub.publishAsync('sid/none', 'b', { qos: 1 });
  const [a, b] = await w;
  assert.deepEqual([a.packet.properties?.subscriptionIdentifier].flat(), [42]);
  assert.equal(b.packet.properties?.subscriptionIdentifier, undefined);
  await end(sub, pub);
});

test('overlapping subscriptions: one message, every matching Subscription Identifier, the highest QoS [MQTT-3.3.4-2][MQTT-3.3.4-4][MQTT-3.3.4-5]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'sid-overlap' });
  await sub.subscribeAsync('ov/#', { qos: 0, properties: { subscriptionIdentifier: 1 } });
  await sub.subscribeAsync('ov/+/x', { qos: 2, properties: { subscriptionIdentifier: 2 } });
  await sub.subscribeAsync('ov/a/+', { qos: 1, properties: { subscriptionIdentifier: 3 } });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'sid-overlap-pub' });
  const w = nextMessages(sub, 1);
  await pub.publishAsync('ov/a/x', 'm', { qos: 2 });
  const [m] = await w;
  assert.equal(m.packet.qos, 2);
  assert.deepEqual([m.packet.properties?.subscriptionIdentifier].flat().sort(), [1, 2, 3]);
  await noMessage(sub, 300);
  await end(sub, pub);
});

test('v3.1.1: overlapping subscriptions deliver one message at the highest QoS [MQTT-3.3.4-2]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 4, clientId: 'ov4' });
  await sub.subscribeAsync('ov4/#', { qos: 0 });
  await sub.subscribeAsync('ov4/+', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 4, clientId: 'ov4-pub' });
  const w = nextMessages(sub, 1);
  await pub.publishAsync('ov4/x', 'm', { qos: 2 });
  assert.equal((await w)[0].packet.qos, 1);
  await noMessage(sub, 300);
  await end(sub, pub);
});

test('No Local: a client does not get its own messages back on that subscription [MQTT-3.8.3-3]', async () => {
  const c = await connect(broker.url, { protocolVersion: 5, clientId: 'nl-self' });
  await c.subscribeAsync('nl/t', { qos: 1, nl: true });
  const other = await connect(broker.url, { protocolVersion: 5, clientId: 'nl-other' });
  await other.subscribeAsync('nl/t', { qos: 1 });
  const wOther = nextMessages(other, 2);
  await c.publishAsync('nl/t', 'mine', { qos: 1 });
  await noMessage(c, 300);
  // ... but messages from others still arrive, and others get this client's messages.
  const wSelf = nextMessages(c, 1);
  await other.publishAsync('nl/t', 'theirs', { qos: 1 });
  assert.equal((await wSelf)[0].payload, 'theirs');
  // Without No Local the publisher hears itself ('other' got 'mine' and its own 'theirs').
  assert.deepEqual((await wOther).map((g) => g.payload), ['mine', 'theirs']);
  await end(c, other);
});

test('v5 UNSUBSCRIBE: 0x00 for an existing subscription, 0x11 when none existed; nothing arrives afterwards [MQTT-3.11.3-1]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'unsub-5' });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'unsub/a', qos: 1 }] });
  await c.next('suback');
  c.send({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: ['unsub/a', 'unsub/never'] });
  const ack = await c.next('unsuback') as unknown as { messageId: number; granted: number[] };
  assert.equal(ack.messageId, 2);
  assert.deepEqual(ack.granted, [0x00, 0x11]);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'unsub-5-pub' });
  await pub.publishAsync('unsub/a', 'x', { qos: 1 });
  await assert.rejects(c.next('publish', 300));
  c.end();
  await end(pub);
});

test('v3.1.1 UNSUBSCRIBE: UNSUBACK with the packet identifier; nothing arrives afterwards [MQTT-3.10.4-4]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 4, clientId: 'unsub-4' });
  await sub.subscribeAsync('unsub4/a', { qos: 1 });
  await sub.unsubscribeAsync(['unsub4/a', 'unsub4/never']);
  const pub = await connect(broker.url, { protocolVersion: 4, clientId: 'unsub-4-pub' });
  await pub.publishAsync('unsub4/a', 'x', { qos: 1 });
  await noMessage(sub, 300);
  await end(sub, pub);
});

// A filter that breaks the wildcard rules is not a correctly formed Topic Filter (SUBACK 0x8F is
// for well-formed filters the server will not accept): the broker treats the SUBSCRIBE as a
// protocol violation and closes the connection, v5 with DISCONNECT 0x8F (Topic Filter invalid).
for (const filter of ['bad/#/x', 'bad+/x']) {
  test(`v5: SUBSCRIBE to the ill-formed filter ${filter} gets DISCONNECT 0x8F [MQTT-4.7.1-1][MQTT-4.7.1-2]`, async () => {
    const c = await rawConnect(broker.ports.tcp!, { clientId: 'badfilter-5' });
    c.send({ cmd: 'subscribe', messageId: 7, subscriptions: [{ topic: 'good/+', qos: 1 }, { topic: filter, qos: 1 }] });
    const d = await c.next('disconnect');
    assert.equal((d as { reasonCode?: number }).reasonCode, 0x8f);
    await c.closed();
  });

  test(`v3.1.1: SUBSCRIBE to the ill-formed filter ${filter} closes the connection [MQTT-4.7.1-1][MQTT-4.8.0-1]`, async () => {
    const c = await rawConnect(broker.ports.tcp!, { clientId: 'badfilter-4' }, 4);
    c.send({ cmd: 'subscribe', messageId: 7, subscriptions: [{ topic: filter, qos: 1 }] });
    await c.closed();
    await assert.rejects(c.next('suback', 10));
  });
}

test('v5: No Local on a shared subscription is a protocol error (DISCONNECT 0x82) [MQTT-3.8.3-4]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'shared-nl' });
  c.send({ cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: '$share/g/nl', qos: 1, nl: true }] });
  const d = await c.next('disconnect');
  assert.equal((d as { reasonCode?: number }).reasonCode, 0x82);
  await c.closed();
});

test('$SYS topics reach "$SYS/#" subscribers but not "#" or "+/..." subscribers [MQTT-4.7.2-1]', async () => {
  const sys = await connect(broker.url, { protocolVersion: 5, clientId: 'sys-sub' });
  const hash = await connect(broker.url, { protocolVersion: 5, clientId: 'sys-hash' });
  const plus = await connect(broker.url, { protocolVersion: 4, clientId: 'sys-plus' });
  await hash.subscribeAsync('#', { qos: 0 });
  await plus.subscribeAsync(['+/broker/#', '+/broker/version'], { qos: 0 });
  const leaks: string[] = [];
  for (const c of [hash, plus]) c.on('message', (topic) => { if (topic.startsWith('$')) leaks.push(topic); });
  const w = nextMessages(sys, 1, 4000);
  await sys.subscribeAsync('$SYS/#', { qos: 0 });
  const [m] = await w;
  assert.match(m.topic, /^\$SYS\/broker\//);
  // Wait for at least one more $SYS round (interval 1 s) to reach everybody.
  await nextMessages(sys, 12, 4000);
  assert.deepEqual(leaks, []);
  await end(sys, hash, plus);
});

test('a client cannot publish to $SYS: v5 QoS 1 gets PUBACK 0x87 and subscribers see nothing from it', async () => {
  const sys = await connect(broker.url, { protocolVersion: 5, clientId: 'sys-fake-sub' });
  await sys.subscribeAsync('$SYS/fake', { qos: 1 });
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'sys-fake-pub' });
  c.send({ cmd: 'publish', topic: '$SYS/fake', payload: Buffer.from('x'), qos: 1, messageId: 5, retain: false, dup: false });
  const ack = await c.next('puback') as unknown as { messageId: number; reasonCode: number };
  assert.equal(ack.messageId, 5);
  assert.equal(ack.reasonCode, 0x87);
  await noMessage(sys, 300);
  c.end();
  await end(sys);
});
