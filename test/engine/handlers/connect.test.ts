// handle_connect unit tests: client identifiers, limits the client asked for, Server Keep Alive,
// session present, refusals with their CONNACK codes, a second CONNECT.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { engineConfig } from '../../helpers/engine.ts';
import { engine, connected, reasonOf } from './common.ts';

test('an empty client id in v5 gets an assigned one in CONNACK [MQTT-3.1.3-6]', async () => {
  const e = engine();
  const c = await connected(e, '');
  const ack = c.packets('connack')[0];
  assert.equal(reasonOf(ack), 0);
  assert.match(ack.properties.assignedClientIdentifier, /^spindle-[0-9a-f]{16}$/);
  assert.equal(c.clientId, ack.properties.assignedClientIdentifier);
});

test('a client id longer than limits.maxClientIdLength is refused with 0x85', async () => {
  const e = engine({ config: engineConfig({ limits: { maxClientIdLength: 23 } }) });
  const c = await connected(e, 'x'.repeat(24));
  assert.equal(reasonOf(c.packets('connack')[0]), 0x85);
});

test('keepalive above limits.maxKeepalive (and 0 in v5) is answered with Server Keep Alive [MQTT-3.2.2-21]', async () => {
  const e = engine({ config: engineConfig({ limits: { maxKeepalive: 100 } }) });
  const a = await connected(e, 'ka-a', { keepalive: 500 });
  const b = await connected(e, 'ka-b', { keepalive: 0 });
  const d = await connected(e, 'ka-d', { keepalive: 50 });
  assert.equal(a.packets('connack')[0].properties.serverKeepAlive, 100);
  assert.equal(b.packets('connack')[0].properties.serverKeepAlive, 100);
  assert.equal(d.packets('connack')[0].properties?.serverKeepAlive, undefined);
});

test('the limits a v5 client asks for are kept: Receive Maximum, Maximum Packet Size, Topic Alias Maximum', async () => {
  const e = engine();
  const c = await connected(e, 'lim', { properties: { receiveMaximum: 7, maximumPacketSize: 300, topicAliasMaximum: 4 } });
  assert.deepEqual([c.receiveMaximum, c.maxPacketSize, c.aliasMaxOut], [7, 300, 4]);
});

test('Session Expiry above limits.maxSessionExpiry is capped and the cap is answered in CONNACK', async () => {
  const e = engine({ config: engineConfig({ limits: { maxSessionExpiry: 60 } }) });
  const c = await connected(e, 'exp', { clean: false, properties: { sessionExpiryInterval: 3600 } });
  assert.equal(c.packets('connack')[0].properties.sessionExpiryInterval, 60);
  assert.equal(c.session?.expiryInterval, 60);
});

test('session present is 1 only when a session is resumed [MQTT-3.2.2-2, MQTT-3.2.2-3]', async () => {
  const e = engine();
  const first = await connected(e, 'sp', { clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.equal(first.packets('connack')[0].sessionPresent, false);
  first.close('normal');
  const again = await connected(e, 'sp', { clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.equal(again.packets('connack')[0].sessionPresent, true);
});

test('wrong credentials are refused with 0x86 and counted', async () => {
  const e = engine({ config: engineConfig({ auth: { allowAnonymous: false, users: [{ username: 'u', password: '$argon2id$v=19$m=19456,t=2,p=1$AsqZAD3RLictPo1WHDVPfA$H9zVLoXTRyZM0gbGrbUwx91Eyhn/aayt+XcbOEp8nUU' }] } }) });
  const c = await connected(e, 'bad', { username: 'u', password: Buffer.from('nope') });
  assert.equal(reasonOf(c.packets('connack')[0]), 0x86);
  assert.equal(e.workers[0].stats.authFailed, 1);
});

test('an authentication method the broker does not have is refused with 0x8C [MQTT-4.12.0-1]', async () => {
  const e = engine();
  const c = await connected(e, 'am', { properties: { authenticationMethod: 'SCRAM-SHA-1' } });
  assert.equal(reasonOf(c.packets('connack')[0]), 0x8c);
});

test('a second CONNECT is a protocol error: DISCONNECT 0x82 and close [MQTT-3.1.0-2]', async () => {
  const e = engine();
  const c = await connected(e, 'twice');
  await c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'twice', clean: true, keepalive: 60 });
  assert.equal(reasonOf(c.packets('disconnect')[0]), 0x82);
  assert.equal(c.isClosed(), true);
});
