// The command routes (spec 4.9 and the documented additions) without a source server: the types
// this build implements (all the spec names), an unknown type (400 naming type), every bad field a 400 naming
// it with nothing stored, passwords never answered (add, query, update, runtime), update merges
// the config (the password kept), name conflicts 409, unknown ids 404, a viewer reads but does
// not write, and a command on a closed port is reconnecting until deleted.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { closedPort } from '../helpers/services.ts';
import { addCommand, stateOf } from './helpers.ts';

let b: AdminBroker;
let port: number;

before(async () => {
  b = await startAdminBroker();
  port = await closedPort();
});
after(() => b.stop());

test('GET /command/type answers the implemented types', async () => {
  const r = await b.api('GET', '/command/type');
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, ['KAFKA', 'ROCKETMQ', 'RABBITMQ', 'PULSAR', 'NACOS']);
});

test('an unknown type is a 400 naming type (every type the spec names is implemented)', async () => {
  const r = await b.api('POST', '/command/add', { body: { type: 'kafka', config: {} } });
  assert.equal(r.status, 400);
  assert.equal(r.json.field, 'type');
});

test('every bad field is a 400 naming it, and nothing is stored', async () => {
  const kafka = { bootstrapServers: `127.0.0.1:${port}`, topic: 't', mqttTopic: 'k/${key}' };
  const rabbit = { url: `amqp://127.0.0.1:${port}`, queue: 'q', mqttTopic: 'r' };
  const cases: [Record<string, unknown>, string][] = [
    [{ type: 'KAFKA' }, 'config'],
    [{ type: 'KAFKA', config: [] }, 'config'],
    [{ type: 'KAFKA', config: kafka, extra: 1 }, 'extra'],
    [{ type: 'KAFKA', config: kafka, enabled: 'yes' }, 'enabled'],
    [{ type: 'KAFKA', config: kafka, id: 'a b' }, 'id'],
    [{ type: 'KAFKA', config: { ...kafka, mqttTopic: undefined } }, 'config.mqttTopic'],
    [{ type: 'KAFKA', config: { ...kafka, mqttTopic: 'a/#' } }, 'config.mqttTopic'],
    [{ type: 'KAFKA', config: { ...kafka, mqttTopic: 'a/${' } }, 'config.mqttTopic'],
    [{ type: 'KAFKA', config: { ...kafka, qos: 3 } }, 'config.qos'],
    [{ type: 'KAFKA', config: { ...kafka, retain: 'no' } }, 'config.retain'],
    [{ type: 'KAFKA', config: { ...kafka, topic: undefined } }, 'config.topic'],
    [{ type: 'KAFKA', config: { ...kafka, topic: 'a b' } }, 'config.topic'],
    [{ type: 'KAFKA', config: { ...kafka, topics: [] , topic: undefined } }, 'config.topics'],
    [{ type: 'KAFKA', config: { ...kafka, bootstrapServers: 'nohost' } }, 'config.bootstrapServers'],
    [{ type: 'KAFKA', config: { ...kafka, sasl: { mechanism: 'gssapi', username: 'u' } } }, 'config.sasl.mechanism'],
    [{ type: 'KAFKA', config: { ...kafka, batchSize: 0 } }, 'config.batchSize'],
    [{ type: 'KAFKA', config: { ...kafka, fromBeginning: 1 } }, 'config.fromBeginning'],
    [{ type: 'KAFKA', config: { ...kafka, topik: 't' } }, 'config.topik'],
    [{ type: 'RABBITMQ', config: { ...rabbit, url: 'http://x' } }, 'config.url'],
    [{ type: 'RABBITMQ', config: { ...rabbit, queue: undefined } }, 'config.queue'],
    [{ type: 'RABBITMQ', config: { ...rabbit, prefetch: 0 } }, 'config.prefetch'],
    [{ type: 'RABBITMQ', config: { ...rabbit, exchangeType: 'x' } }, 'config.exchangeType'],
    [{ type: 'RABBITMQ', config: { ...rabbit, url: undefined } }, 'config.host'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/command/add', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.field, field, `${JSON.stringify(body)}: ${r.text}`);
  }
  const q = await b.api('POST', '/command/query', { body: {} });
  assert.equal(q.json.total, 0);
});

test('passwords are never answered: add, query, update, runtime; update merges the config and keeps the password', async () => {
  const secret = 'sup3r-s3cret-pw';
  const rabbit = await addCommand(b, { name: 'pw-rabbit', type: 'RABBITMQ', config: { url: `amqp://bob:${secret}@127.0.0.1:${port}/prod`, queue: 'q', mqttTopic: 'r', connectTimeout: 200 } });
  const kafka = await addCommand(b, { name: 'pw-kafka', type: 'KAFKA', config: { bootstrapServers: `127.0.0.1:${port}`, topic: 't', sasl: { mechanism: 'scram-sha-256', username: 'bob', password: secret }, mqttTopic: 'k', connectTimeout: 200 } });
  assert.equal(rabbit.config.url, `amqp://bob@127.0.0.1:${port}/prod`);
  assert.deepEqual(kafka.config.sasl, { mechanism: 'scram-sha-256', username: 'bob' });
  const answers = [
    await b.api('POST', '/command/query', { body: {} }),
    await b.api('POST', '/command/update', { body: { id: rabbit.id, config: { prefetch: 5 } } }),
    await b.api('POST', '/command/runtime', { body: { id: rabbit.id } }),
    await b.api('POST', '/command/runtime', { body: { id: kafka.id } }),
    await b.api('POST', '/command/stop', { body: { id: kafka.id } }),
  ];
  for (const r of answers) {
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(secret), r.text);
  }
  const updated = answers[1].json.data;
  assert.equal(updated.config.prefetch, 5);
  assert.equal(updated.config.queue, 'q');
  const stored = await b.admin!.context.store.getAdmin<{ config: { url: string; prefetch: number } }>('command', rabbit.id);
  assert.equal(stored!.config.url, `amqp://bob:${secret}@127.0.0.1:${port}/prod`, 'the store keeps the password');
  // null removes a field; the type cannot change.
  const removed = await b.api('POST', '/command/update', { body: { id: rabbit.id, config: { prefetch: null } } });
  assert.equal(removed.json.data.config.prefetch, undefined);
  const retyped = await b.api('POST', '/command/update', { body: { id: rabbit.id, type: 'KAFKA' } });
  assert.equal(retyped.status, 400);
  assert.equal(retyped.json.field, 'type');
  const bad = await b.api('POST', '/command/update', { body: { id: rabbit.id, config: { prefetch: -1 } } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'config.prefetch');
  for (const id of [rabbit.id, kafka.id]) assert.equal((await b.api('POST', '/command/delete', { body: { id } })).status, 200);
});

test('names are unique (409), unknown ids are 404, a viewer reads but does not write, query pages and filters', async () => {
  const base = { type: 'RABBITMQ', enabled: false, config: { host: '127.0.0.1', port, queue: 'q', mqttTopic: 'r' } };
  const one = await addCommand(b, { ...base, name: 'one' });
  const two = await addCommand(b, { ...base, name: 'two' });
  assert.equal(one.state, 'stopped');
  const dup = await b.api('POST', '/command/add', { body: { ...base, name: 'one' } });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.field, 'name');
  const rename = await b.api('POST', '/command/update', { body: { id: two.id, name: 'one' } });
  assert.equal(rename.status, 409);
  for (const path of ['/command/delete', '/command/start', '/command/stop', '/command/runtime', '/command/update']) {
    const r = await b.api('POST', path, { body: { id: 'nope' } });
    assert.equal(r.status, 404, `${path}: ${r.text}`);
  }
  assert.equal((await b.api('POST', '/command/add', { body: { ...base, name: 'three' }, as: 'viewer' })).status, 403);
  assert.equal((await b.api('POST', '/command/stop', { body: { id: one.id }, as: 'viewer' })).status, 403);
  const page = await b.api('POST', '/command/query', { body: { page: 2, size: 1 }, as: 'viewer' });
  assert.deepEqual([page.json.total, page.json.data.map((c: { name: string }) => c.name)], [2, ['two']]);
  const byName = await b.api('POST', '/command/query', { body: { name: 'tw' } });
  assert.deepEqual(byName.json.data.map((c: { id: string }) => c.id), [two.id]);
  assert.equal((await b.api('POST', '/command/query', { body: { type: 'KAFKA' } })).json.total, 0);
  assert.equal((await b.api('POST', '/command/query', { body: { type: 'MQTT' } })).status, 400);
  for (const id of [one.id, two.id]) await b.api('POST', '/command/delete', { body: { id } });
});

test('a RabbitMQ that is not there: reconnecting, with the error; stop makes it stopped at once', async () => {
  const c = await addCommand(b, { name: 'down', type: 'RABBITMQ', config: { url: `amqp://127.0.0.1:${port}`, queue: 'q', mqttTopic: 'r', connectTimeout: 500 } });
  const rt = await stateOf(b, c.id, 'reconnecting');
  assert.match(rt.lastError, /refused/);
  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.json.data.state, 'stopped');
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});
