// needs: broker, rabbitmq
// With admin.enabled false, the stored features run: a script converts, a JWT auth policy admits
// a client with a good token and refuses one with a bad token, and a RABBITMQ command brings
// RabbitMQ's messages into MQTT. Each was stored through the admin API of a first run on the same
// data directory; the second run has no HTTP server at all (src/node builds the features from
// the store whatever serves HTTP).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { SignJWT } from 'jose';
import mqtt from 'mqtt';

import { startAdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, startBroker, type TestBroker } from '../helpers/broker.ts';
import { tempDir } from '../helpers/process-broker.ts';
import { ensureRabbitMq } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';
import { RABBITMQ, addCommand, publishRabbit } from '../commands/helpers.ts';

const SECRET = 'an-admin-off-test-secret-0123456789';
const run = `${process.pid}-${Date.now()}`;
const exchange = `admin-off-ex-${run}`;
let b: TestBroker;

before(async () => {
  ensureRabbitMq();
  const dataDir = tempDir();
  const first = await startAdminBroker({ dataDir });
  try {
    const script = await first.api('POST', '/script/add', { body: { name: 'shout', type: 'javascript', topic: 'conv/#', content: 'function convert(topic, payload) { return payload.toString().toUpperCase(); }' } });
    assert.equal(script.status, 200, script.text);
    const policy = await first.api('POST', '/auth/add', { body: { name: 'tokens', type: 'jwt', config: { secret: SECRET } } });
    assert.equal(policy.status, 200, policy.text);
    await addCommand(first, { name: 'from-rabbit', type: 'RABBITMQ', config: { url: RABBITMQ, queue: `admin-off-${run}`, exchange, routingKey: '#', declare: true, mqttTopic: 'rabbit/${routingKey}', qos: 1 } });
  } finally {
    await first.stop();
  }
  b = await startBroker({ dataDir, admin: { enabled: false } });
  assert.equal(b.admin, null, 'no admin API in the second run');
});
after(() => b?.stop());

test('a stored script converts', async () => {
  const sub = await connect(b.url);
  await sub.subscribeAsync('conv/#', { qos: 1 });
  const pub = await connect(b.url);
  const got = nextMessages(sub, 1);
  await pub.publishAsync('conv/a', 'hello', { qos: 1 });
  assert.equal((await got)[0].payload, 'HELLO');
  await end(sub, pub);
});

test('a stored JWT auth policy admits a good token and refuses a bad one', async () => {
  const token = await new SignJWT({ sub: 'device-1' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(SECRET));
  const connack = (password: string) => new Promise<number>((resolve) => {
    const c = mqtt.connect(b.url, { username: 'device-1', password, protocolVersion: 5, reconnectPeriod: 0 });
    c.once('connect', (p) => {
      c.end(true);
      resolve(p.reasonCode ?? 0);
    });
    c.once('error', (err) => {
      c.end(true);
      resolve((err as { code?: number }).code ?? -1);
    });
  });
  assert.equal(await connack(token), 0, 'the policy admits a token signed with its secret');
  const forged = await new SignJWT({ sub: 'device-1' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(`${SECRET}-not`));
  assert.equal(await connack(forged), 0x86, 'and refuses one signed with another secret');
});

test('a stored RABBITMQ command brings messages in', async () => {
  const sub = await connect(b.url);
  await sub.subscribeAsync('rabbit/#', { qos: 1 });
  const got = nextMessages(sub, 1);
  // The command may still be connecting: publish until a message comes through (at least once).
  await waitFor(async () => {
    await publishRabbit(exchange, [{ routingKey: 'sensor.1', body: 'from rabbit' }]);
    return Promise.race([got.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 500))]);
  }, { message: 'a RabbitMQ message reached MQTT through the command' });
  const [m] = await got;
  assert.equal(m.topic, 'rabbit/sensor.1');
  assert.equal(m.payload, 'from rabbit');
  await end(sub);
});
