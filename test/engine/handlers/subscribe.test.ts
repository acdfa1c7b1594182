// handle_subscribe and handle_unsubscribe unit tests: SUBACK codes, retained messages by Retain
// Handling, shared subscriptions, refused filters, UNSUBACK codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { engineConfig } from '../../helpers/engine.ts';
import { engine, connected } from './common.ts';

test('SUBACK grants the requested QoS per filter; a filter with too many levels gets 0x8F', async () => {
  const e = engine({ config: engineConfig({ limits: { maxTopicLevels: 3 } }) });
  const c = await connected(e, 's');
  await c.send({ cmd: 'subscribe', messageId: 4, subscriptions: [{ topic: 'a', qos: 0 }, { topic: 'b/+', qos: 2 }, { topic: 'a/b/c/d', qos: 1 }] });
  const ack = c.packets('suback')[0];
  assert.equal(ack.messageId, 4);
  assert.deepEqual(ack.granted, [0, 2, 0x8f]);
});

test('retained messages follow Retain Handling: 0 always, 1 only for a new subscription, 2 never [MQTT-3.3.1-9 .. MQTT-3.3.1-11]', async () => {
  const e = engine();
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 'rh/x', payload: Buffer.from('kept'), qos: 0, retain: true });
  const c = await connected(e, 's');
  const sub = (rh: number) => c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'rh/#', qos: 0, rh }] });
  await sub(1);
  await sub(1);
  await sub(0);
  await sub(2);
  assert.equal(c.packets('publish').length, 2, 'one for the new subscription (rh 1), one for rh 0');
  assert.equal(c.packets('publish').every((p) => p.retain), true);
});

test('a shared subscription gets no retained messages', async () => {
  const e = engine();
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 'sh/x', payload: Buffer.from('kept'), qos: 0, retain: true });
  const c = await connected(e, 's');
  await c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$share/g/sh/#', qos: 0 }] });
  assert.deepEqual(c.packets('suback')[0].granted, [0]);
  assert.equal(c.packets('publish').length, 0);
});

test('UNSUBACK answers 0x00 for a subscription removed and 0x11 for none; the removed one no longer routes', async () => {
  const e = engine();
  const c = await connected(e, 's');
  await c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'u/#', qos: 0 }] });
  await c.send({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: ['u/#', 'never'] });
  assert.deepEqual(c.packets('unsuback')[0].granted, [0, 0x11]);
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 'u/1', payload: Buffer.from('x'), qos: 1, messageId: 1 });
  assert.equal(pub.packets('puback')[0].reasonCode, 0x10);
});
