// handle_publish unit tests: acknowledgements with their reason codes, delivery, topic aliases,
// QoS 2 exactly once, Receive Maximum, $ topics, topic levels.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { engineConfig } from '../../helpers/engine.ts';
import { engine, connected, reasonOf } from './common.ts';

test('QoS 1 without subscribers is acknowledged with 0x10; with one, delivered and acknowledged with 0', async () => {
  const e = engine();
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 't/1', payload: Buffer.from('a'), qos: 1, messageId: 1 });
  assert.equal(reasonOf(pub.packets('puback')[0]), 0x10);
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 't/#', qos: 1 }] });
  await pub.send({ cmd: 'publish', topic: 't/1', payload: Buffer.from('b'), qos: 1, messageId: 2 });
  assert.equal(reasonOf(pub.packets('puback')[1]) ?? 0, 0);
  assert.deepEqual(sub.packets('publish').map((p) => [p.topic, p.payload.toString(), p.qos]), [['t/1', 'b', 1]]);
});

test('a topic alias is set with a topic and used without one [MQTT-3.3.2-10 .. MQTT-3.3.2-12]', async () => {
  const e = engine();
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'al/#', qos: 0 }] });
  const pub = await connected(e, 'p');
  await pub.send(
    { cmd: 'publish', topic: 'al/x', payload: Buffer.from('1'), qos: 0, properties: { topicAlias: 3 } },
    { cmd: 'publish', topic: '', payload: Buffer.from('2'), qos: 0, properties: { topicAlias: 3 } },
  );
  assert.deepEqual(sub.packets('publish').map((p) => [p.topic, p.payload.toString()]), [['al/x', '1'], ['al/x', '2']]);
});

test('an unknown topic alias is a protocol error (0x82); one above the maximum is 0x94', async () => {
  const e = engine();
  const a = await connected(e, 'a');
  await a.send({ cmd: 'publish', topic: '', payload: Buffer.from('x'), qos: 0, properties: { topicAlias: 2 } });
  assert.equal(reasonOf(a.packets('disconnect')[0]), 0x82);
  const b = await connected(e, 'b');
  await b.send({ cmd: 'publish', topic: 'x', payload: Buffer.from('x'), qos: 0, properties: { topicAlias: 65000 } });
  assert.equal(reasonOf(b.packets('disconnect')[0]), 0x94);
});

test('QoS 2 is routed once: a resent PUBLISH with the same id is acknowledged, not delivered again, until PUBREL [MQTT-4.3.3-10]', async () => {
  const e = engine();
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'q2', qos: 0 }] });
  const pub = await connected(e, 'p');
  const publish = { cmd: 'publish', topic: 'q2', payload: Buffer.from('once'), qos: 2, messageId: 9 };
  await pub.send(publish, { ...publish, dup: true });
  assert.equal(pub.packets('pubrec').length, 2);
  assert.equal(sub.packets('publish').length, 1);
  await pub.send({ cmd: 'pubrel', messageId: 9 }, publish);
  assert.equal(pub.packets('pubcomp').length, 1);
  assert.equal(sub.packets('publish').length, 2, 'after PUBREL the id is free: a new message');
});

test('QoS 2 beyond our Receive Maximum is DISCONNECT 0x93 [MQTT-3.3.4-8]', async () => {
  const e = engine({ config: engineConfig({ limits: { receiveMaximum: 2 } }) });
  const pub = await connected(e, 'p');
  await pub.send(...[1, 2, 3].map((id) => ({ cmd: 'publish', topic: 'rm', payload: Buffer.from('x'), qos: 2, messageId: id })));
  assert.equal(pub.packets('pubrec').length, 2);
  assert.equal(reasonOf(pub.packets('disconnect')[0]), 0x93);
});

test('PUBLISH to $SYS is refused (v5: 0x87) and not delivered', async () => {
  const e = engine();
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$SYS/#', qos: 0 }] });
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: '$SYS/fake', payload: Buffer.from('x'), qos: 1, messageId: 1 });
  assert.equal(reasonOf(pub.packets('puback')[0]), 0x87);
  assert.equal(sub.packets('publish').length, 0);
});

test('a topic with more levels than limits.maxTopicLevels is refused with 0x90 (v5) or a close (v3)', async () => {
  const e = engine({ config: engineConfig({ limits: { maxTopicLevels: 3 } }) });
  const v5 = await connected(e, 'v5');
  await v5.send({ cmd: 'publish', topic: 'a/b/c/d', payload: Buffer.from('x'), qos: 1, messageId: 1 });
  assert.equal(reasonOf(v5.packets('puback')[0]), 0x90);
  const v4 = await connected(e, 'v4', { protocolVersion: 4 });
  await v4.send({ cmd: 'publish', topic: 'a/b/c/d', payload: Buffer.from('x'), qos: 1, messageId: 1 });
  assert.equal(v4.isClosed(), true);
});

test('PUBLISH before CONNACK is a protocol error', async () => {
  const e = engine();
  const c = e.client();
  c.state = 'connecting';
  c.session = null;
  await e.workers[0].dispatch.publish(c, Buffer.from([0x30, 3, 0, 1, 0x61]), new Uint32Array([0x30, 0, 5, 2, 1, 0, 0, 0, 5, 0, 0, 0]), 0);
  assert.equal(c.isClosed(), true);
});
