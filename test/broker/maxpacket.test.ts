// Maximum Packet Size in both directions: the client's (v5 CONNECT property) bounds what the
// broker sends it; the broker's (limits.maxPacketSize) bounds what it accepts.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';

let broker: TestBroker;
const BROKER_MAX = 2048;
before(async () => { broker = await startBroker({ limits: { maxPacketSize: BROKER_MAX } }); });
after(async () => { await broker.stop(); });

const tooLarge = async () => (await broker.supervisor.collectStats()).reduce((a, s) => a + s.dropped.tooLarge, 0);

test('a message larger than the client Maximum Packet Size is not sent to it, is counted, and others still get it [MQTT-3.1.2-25]', async () => {
  const small = await connect(broker.url, { protocolVersion: 5, clientId: 'mp-small', properties: { maximumPacketSize: 200 } });
  const big = await connect(broker.url, { protocolVersion: 5, clientId: 'mp-big' });
  await small.subscribeAsync('mp/t', { qos: 1 });
  await big.subscribeAsync('mp/t', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'mp-pub' });
  const before = await tooLarge();
  const wBig = nextMessages(big, 2);
  const wSmall = nextMessages(small, 1);
  await pub.publishAsync('mp/t', Buffer.alloc(500, 0x61), { qos: 1 });
  await pub.publishAsync('mp/t', 'fits', { qos: 1 });
  assert.deepEqual((await wBig).map((g) => g.packet.payload.length), [500, 4]);
  // The small client gets only the message that fits, and its session carries on.
  assert.equal((await wSmall)[0].payload, 'fits');
  await noMessage(small, 200);
  assert.equal(await tooLarge() - before, 1);
  await end(small, big, pub);
});

test('a message too large for the client does not use up a topic alias the client never saw [MQTT-3.1.2-25][MQTT-3.3.2-12]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'mp-alias', properties: { maximumPacketSize: 200, topicAliasMaximum: 5 } });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'mp/alias', qos: 0 }] });
  await c.next('suback');
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'mp-alias-pub' });
  await pub.publishAsync('mp/alias', Buffer.alloc(500, 0x61), { qos: 0 });
  await pub.publishAsync('mp/alias', 'fits', { qos: 0 });
  const m = await c.next('publish') as unknown as { topic: string; payload: Buffer };
  // The first PUBLISH this client sees on the topic must name it: an alias alone would be unknown.
  assert.equal(m.topic, 'mp/alias');
  assert.equal(m.payload.toString(), 'fits');
  c.end();
  await end(pub);
});

test('v5: a packet larger than limits.maxPacketSize gets DISCONNECT 0x95 [MQTT-3.2.2-15 context]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'mp-over-5' });
  assert.equal((c.connack as { properties?: { maximumPacketSize?: number } }).properties?.maximumPacketSize, BROKER_MAX);
  c.send({ cmd: 'publish', topic: 'mp/over', payload: Buffer.alloc(BROKER_MAX + 10), qos: 0, retain: false, dup: false });
  const d = await c.next('disconnect');
  assert.equal((d as { reasonCode?: number }).reasonCode, 0x95);
  await c.closed();
});

test('v3.1.1: a packet larger than limits.maxPacketSize closes the connection', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'mp-over-4' }, 4);
  c.send({ cmd: 'publish', topic: 'mp/over', payload: Buffer.alloc(BROKER_MAX + 10), qos: 0, retain: false, dup: false });
  await c.closed();
});

test('a packet of exactly limits.maxPacketSize is accepted', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'mp-exact-sub' });
  await sub.subscribeAsync('mp/exact', { qos: 0 });
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'mp-exact' });
  // Fixed header 1 + 2 (remaining length < 16384) + topic 2 + 8 + properties length 1.
  const payload = Buffer.alloc(BROKER_MAX - (3 + 2 + 8 + 1), 0x62);
  const w = nextMessages(sub, 1);
  c.send({ cmd: 'publish', topic: 'mp/exact', payload, qos: 0, retain: false, dup: false });
  assert.equal((await w)[0].packet.payload.length, payload.length);
  c.end();
  await end(sub);
});
