// Authentication and authorization end to end: static users with argon2 and bcrypt hashes,
// anonymous clients refused, the ordered ACL with %c and %u, and an unsupported enhanced
// authentication method.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { hashPassword } from '../../src/auth/index.ts';
import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';

let broker: TestBroker;
before(async () => {
  broker = await startBroker({
    auth: {
      allowAnonymous: false,
      users: [
        { username: 'alice', password: await hashPassword('alice-pw', 'argon2') },
        { username: 'bob', password: await hashPassword('bob-pw', 'bcrypt', 4) },
      ],
      aclDefault: 'deny',
      acl: [
        { permission: 'deny', action: 'publish', topic: 'readonly/#' },
        { permission: 'allow', action: 'subscribe', topic: 'readonly/#' },
        { permission: 'allow', action: 'pubsub', topic: 'clients/%c/#' },
        { permission: 'allow', action: 'pubsub', topic: 'users/%u/#' },
        { permission: 'allow', action: 'publish', topic: 'bobonly/#', username: 'bob' },
        { permission: 'allow', action: 'subscribe', topic: 'bobonly/#' },
        { permission: 'allow', action: 'pubsub', topic: 'public/#' },
      ],
    },
  });
});
after(async () => { await broker.stop(); });

const alice = { username: 'alice', password: 'alice-pw' };
const bob = { username: 'bob', password: 'bob-pw' };

for (const [who, creds] of [['argon2', alice], ['bcrypt', bob]] as const) {
  for (const protocolVersion of [4, 5] as const) {
    test(`v${protocolVersion}: a user with a ${who} hash connects with the right password (MQTT 5.0 sections 3.1.3.5, 3.1.3.6: User Name and Password)`, async () => {
      const c = await rawConnect(broker.ports.tcp!, { clientId: `ok-${who}-${protocolVersion}`, ...creds }, protocolVersion);
      assert.equal((c.connack as { returnCode?: number; reasonCode?: number })[protocolVersion === 5 ? 'reasonCode' : 'returnCode'], 0);
      c.end();
    });

    test(`v${protocolVersion}: a user with a ${who} hash and a wrong password gets CONNACK ${protocolVersion === 5 ? '0x86' : '0x04'} and is closed [MQTT-3.2.2-5] (3.1.1) [MQTT-3.2.2-7] (5.0)`, async () => {
      const c = await rawConnect(broker.ports.tcp!, { clientId: `bad-${who}-${protocolVersion}`, username: creds.username, password: 'wrong' }, protocolVersion);
      assert.equal((c.connack as { returnCode?: number; reasonCode?: number })[protocolVersion === 5 ? 'reasonCode' : 'returnCode'], protocolVersion === 5 ? 0x86 : 0x04);
      assert.equal((c.connack as { sessionPresent: boolean }).sessionPresent, false);
      await c.closed();
    });
  }
}

test('an unknown user gets CONNACK 0x86 (v5)', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'nobody', username: 'mallory', password: 'x' });
  assert.equal((c.connack as { reasonCode?: number }).reasonCode, 0x86);
  await c.closed();
});

test('allowAnonymous false: a client without a username is refused, CONNACK 0x87 (v5) / 0x05 (v3.1.1)', async () => {
  const c5 = await rawConnect(broker.ports.tcp!, { clientId: 'anon-5' });
  assert.equal((c5.connack as { reasonCode?: number }).reasonCode, 0x87);
  await c5.closed();
  const c4 = await rawConnect(broker.ports.tcp!, { clientId: 'anon-4' }, 4);
  assert.equal((c4.connack as { returnCode?: number }).returnCode, 0x05);
  await c4.closed();
  // mqtt.js reports the refusal as an error.
  await assert.rejects(connect(broker.url, { protocolVersion: 5, clientId: 'anon-js' }));
});

for (const [protocolVersion, code] of [[5, 0x87], [4, 0x80]] as const) {
  test(`v${protocolVersion}: a SUBSCRIBE the ACL denies gets SUBACK 0x${code.toString(16)}; allowed filters in the same packet are granted [MQTT-3.9.3-1]`, async () => {
    const c = await rawConnect(broker.ports.tcp!, { clientId: `acl-sub-${protocolVersion}`, ...alice }, protocolVersion);
    c.send({ cmd: 'subscribe', messageId: 3, subscriptions: [
      { topic: 'public/#', qos: 1 },
      { topic: 'secret/#', qos: 1 },
      { topic: '#', qos: 0 }, // granted in part (allow rules lie inside it): its deliveries are checked
      { topic: 'readonly/x', qos: 2 },
    ] });
    const ack = await c.next('suback') as unknown as { granted: number[] };
    assert.deepEqual(ack.granted, [1, code, 0, 2]);
    c.end();
  });
}

test('v5: a PUBLISH the ACL denies is not delivered and QoS 1 gets PUBACK 0x87, QoS 2 PUBREC 0x87', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'acl-pub-sub', ...bob });
  await sub.subscribeAsync('readonly/#', { qos: 1 });
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'acl-pub-5', ...alice });
  c.send({ cmd: 'publish', topic: 'readonly/x', payload: Buffer.from('no'), qos: 1, messageId: 10, retain: false, dup: false });
  const puback = await c.next('puback') as unknown as { messageId: number; reasonCode: number };
  assert.deepEqual([puback.messageId, puback.reasonCode], [10, 0x87]);
  c.send({ cmd: 'publish', topic: 'readonly/y', payload: Buffer.from('no'), qos: 2, messageId: 11, retain: false, dup: false });
  const pubrec = await c.next('pubrec') as unknown as { messageId: number; reasonCode: number };
  assert.deepEqual([pubrec.messageId, pubrec.reasonCode], [11, 0x87]);
  await noMessage(sub, 300);
  c.end();
  await end(sub);
});

test('v3.1.1: a PUBLISH the ACL denies is acknowledged and not delivered; allowed ones are', async () => {
  const sub = await connect(broker.url, { protocolVersion: 4, clientId: 'acl-pub4-sub', ...bob });
  await sub.subscribeAsync(['readonly/#', 'public/#'], { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 4, clientId: 'acl-pub4', ...alice });
  const w = nextMessages(sub, 1);
  await pub.publishAsync('readonly/x', 'denied', { qos: 1 });
  await pub.publishAsync('public/x', 'allowed', { qos: 1 });
  assert.deepEqual((await w).map((g) => g.payload), ['allowed']);
  await noMessage(sub, 300);
  await end(sub, pub);
});

test('a rule with username applies only to that user', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'bo-sub', ...alice });
  await sub.subscribeAsync('bobonly/#', { qos: 1 });
  const a = await rawConnect(broker.ports.tcp!, { clientId: 'bo-alice', ...alice });
  a.send({ cmd: 'publish', topic: 'bobonly/x', payload: Buffer.from('a'), qos: 1, messageId: 1, retain: false, dup: false });
  assert.equal((await a.next('puback') as unknown as { reasonCode: number }).reasonCode, 0x87);
  const b = await connect(broker.url, { protocolVersion: 5, clientId: 'bo-bob', ...bob });
  const w = nextMessages(sub, 1);
  await b.publishAsync('bobonly/x', 'b', { qos: 1 });
  assert.equal((await w)[0].payload, 'b');
  a.end();
  await end(sub, b);
});

test('%c in a rule stands for the client id, %u for the username', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'dev-7', ...alice });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [
    { topic: 'clients/dev-7/#', qos: 1 },
    { topic: 'clients/dev-8/#', qos: 1 },
    { topic: 'users/alice/in', qos: 1 },
    { topic: 'users/bob/in', qos: 1 },
    { topic: 'clients/+/x', qos: 1 }, // a wildcard in place of %c: granted in part, each delivery checked
  ] });
  const ack = await c.next('suback') as unknown as { granted: number[] };
  assert.deepEqual(ack.granted, [1, 0x87, 1, 0x87, 1]);
  // Publishing follows the same rules.
  c.send({ cmd: 'publish', topic: 'clients/dev-7/x', payload: Buffer.from('own'), qos: 1, messageId: 2, retain: false, dup: false });
  const own = await c.next('publish') as unknown as { payload: Buffer };
  assert.equal(own.payload.toString(), 'own');
  assert.equal((await c.next('puback') as unknown as { reasonCode?: number }).reasonCode ?? 0, 0);
  c.send({ cmd: 'publish', topic: 'users/bob/in', payload: Buffer.from('x'), qos: 1, messageId: 3, retain: false, dup: false });
  assert.equal((await c.next('puback') as unknown as { reasonCode: number }).reasonCode, 0x87);
  c.end();
});

test('v5: CONNECT with an authentication method the broker does not support gets CONNACK 0x8C [MQTT-4.12.0-1]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'enh-auth', ...alice, properties: { authenticationMethod: 'GS2-KRB5', authenticationData: Buffer.from('client-first') } });
  assert.equal((c.connack as { reasonCode?: number }).reasonCode, 0x8c);
  await c.closed();
});
