// handle_disconnect, handle_auth and the dispatcher's refusals: expiry at DISCONNECT, the will
// after a normal DISCONNECT and after 0x04, AUTH outside an exchange, packets only a server sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { engine, connected, reasonOf } from './common.ts';

const will = { topic: 'w/x', payload: Buffer.from('gone'), qos: 0, retain: false };

test('a session that was to end with the connection cannot be given an expiry at DISCONNECT: 0x82 [MQTT-3.14.2-2]', async () => {
  const e = engine();
  const c = await connected(e, 'c');
  await c.send({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 30 } });
  assert.equal(reasonOf(c.packets('disconnect')[0]), 0x82);
});

test('a normal DISCONNECT discards the will; 0x04 sends it [MQTT-3.1.2-10]', async () => {
  const e = engine();
  const watcher = await connected(e, 'watch');
  await watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w/#', qos: 0 }] });
  const a = await connected(e, 'a', { will });
  await a.send({ cmd: 'disconnect', reasonCode: 0 });
  assert.equal(watcher.packets('publish').length, 0);
  const b = await connected(e, 'b', { will });
  await b.send({ cmd: 'disconnect', reasonCode: 0x04 });
  assert.deepEqual(watcher.packets('publish').map((p) => p.topic), ['w/x']);
});

test('a connection lost without DISCONNECT publishes the will at once (no delay)', async () => {
  const e = engine();
  const watcher = await connected(e, 'watch');
  await watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w/#', qos: 0 }] });
  const a = await connected(e, 'a', { will });
  a.close('socket_error');
  assert.deepEqual(watcher.packets('publish').map((p) => p.topic), ['w/x']);
});

test('AUTH outside an authentication exchange is a protocol error', async () => {
  const e = engine();
  const c = await connected(e, 'c');
  await c.send({ cmd: 'auth', reasonCode: 0x19, properties: { authenticationMethod: 'X' } });
  assert.equal(reasonOf(c.packets('disconnect')[0]), 0x82);
});

test('a packet only a server sends (SUBACK) is a protocol error', async () => {
  const e = engine();
  const c = await connected(e, 'c');
  await c.send({ cmd: 'suback', messageId: 1, granted: [0] });
  assert.equal(reasonOf(c.packets('disconnect')[0]), 0x82);
});

test('before CONNACK nothing but CONNECT is accepted', async () => {
  const e = engine();
  const c = e.client();
  c.state = 'connecting';
  await c.send({ cmd: 'pingreq' });
  assert.equal(c.isClosed(), true);
  assert.equal(c.received.length, 0, 'no DISCONNECT before CONNACK [MQTT-3.14.0-1]');
});
