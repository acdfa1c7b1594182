// Data sources (spec 4.6) through the admin API, and rule actions writing to them, against real
// servers: PostgreSQL and MariaDB (scripts/ensure-databases.sh), Redis, Kafka and FerretDB
// (scripts/ensure-redis.sh, ensure-kafka.sh, ensure-ferretdb.sh), a node:http webhook receiver.
// Passwords are never answered; a check really connects and says what failed; a source a rule
// uses cannot be deleted; rows written by save_postgresql / save_mysql arrive; a webhook gets its
// JSON.
// needs: broker, postgresql, mariadb, redis, kafka, ferretdb
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import postgres from 'postgres';
import mysql from 'mysql2/promise';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { PG_URL, MYSQL_URL, uniqueName } from '../store/databases.ts';
import { ensureRedis, ensureKafka, ensureFerretDb } from '../helpers/services.ts';
import { readKafka, type KafkaRecord } from '../helpers/kafka.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker();
});
after(() => b.stop());

const pgUrl = new URL(PG_URL);

async function addSource(name: string, type: string, config: Record<string, unknown>): Promise<string> {
  const r = await b.api('POST', '/source/add', { body: { name, type, config } });
  assert.equal(r.status, 200, r.text);
  return r.json.data.id as string;
}

test('types, add, query and info: passwords stored but never answered', async () => {
  const types = await b.api('GET', '/source/type');
  assert.deepEqual(types.json, ['mysql', 'postgresql', 'redis', 'kafka', 'mongodb', 'http']);
  const id = await addSource('pg-main', 'postgresql', { host: pgUrl.hostname, port: Number(pgUrl.port), database: pgUrl.pathname.slice(1), username: pgUrl.username, password: pgUrl.password });
  const q = await b.api('POST', '/source/query', { body: { type: 'postgresql' } });
  assert.equal(q.status, 200);
  const rec = q.json.data.find((s: { id: string }) => s.id === id);
  assert.equal(rec.name, 'pg-main');
  assert.equal(rec.config.password, undefined, 'no password in a query answer');
  assert.ok(!q.text.includes('"password"'));
  const info = await b.api('POST', '/source/query/info', { body: { id } });
  assert.equal(info.status, 200);
  assert.ok(!info.text.includes('"password"'), 'no password in info');
  assert.ok(['connecting', 'up', 'down'].includes(info.json.data.health.state));
  assert.equal((await b.api('POST', '/source/add', { body: { name: 'pg-main', type: 'postgresql', config: { url: PG_URL } } })).status, 409);
  const bad = await b.api('POST', '/source/add', { body: { name: 'x', type: 'postgresql', config: { port: 'five' } } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.field, /^config\./);
  assert.equal((await b.api('POST', '/source/add', { body: { name: 'x', type: 'oracle', config: {} } })).status, 400);
});

test('check really connects: ok, refused, dns and auth are told apart', async () => {
  const id = await addSource('pg-check', 'postgresql', { url: PG_URL });
  const good = await b.api('POST', '/source/check', { body: { id } });
  assert.equal(good.status, 200);
  assert.equal(good.json.data.ok, true, good.text);
  const refused = await b.api('POST', '/source/check', { body: { type: 'postgresql', config: { url: 'postgres://u:p@127.0.0.1:1/db' } } });
  assert.deepEqual([refused.json.data.ok, refused.json.data.failure], [false, 'refused']);
  const dns = await b.api('POST', '/source/check', { body: { type: 'mysql', config: { url: 'mysql://u:p@nonexistent.invalid:3306/db' } } });
  assert.deepEqual([dns.json.data.ok, dns.json.data.failure], [false, 'dns']);
  const wrong = new URL(PG_URL);
  wrong.password = 'not-the-password';
  const auth = await b.api('POST', '/source/check', { body: { type: 'postgresql', config: { url: wrong.toString() } } });
  assert.deepEqual([auth.json.data.ok, auth.json.data.failure], [false, 'auth']);
  assert.ok(!auth.text.includes('not-the-password'));
  assert.equal((await b.api('POST', '/source/check', { body: { id: 'source-missing' } })).status, 404);
});

test('save_postgresql: every message a rule selects becomes a row; the source cannot be deleted while used', async () => {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  const table = uniqueName('rule_rows');
  await sql.unsafe(`CREATE TABLE ${table} (topic text, temp double precision, device text)`);
  try {
    const source = await addSource('pg-rows', 'postgresql', { url: PG_URL });
    const add = await b.api('POST', '/rule/add', { body: { name: 'to-pg', sql: 'SELECT topic, payload.temp AS temp, topic(2) AS device FROM "dev/+/temp" WHERE payload.temp > 30', actions: [{ type: 'save_postgresql', config: { source, table, columns: { topic: '${topic}', temp: '${temp}', device: '${device}' } } }] } });
    assert.equal(add.status, 200, add.text);
    const pub = await connect(b.url, { clientId: 'pg-pub' });
    for (let i = 0; i < 200; i++) await pub.publishAsync(`dev/d${i % 4}/temp`, JSON.stringify({ temp: 25 + (i % 10) }), { qos: i % 2 as 0 | 1 });
    await end(pub);
    const expected = Array.from({ length: 200 }, (_, i) => 25 + (i % 10)).filter((t) => t > 30).length;
    const rows = await waitFor(async () => {
      const r = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`);
      return r[0].n === expected && r[0].n;
    });
    assert.equal(rows, expected);
    const sample = await sql.unsafe(`SELECT topic, temp, device FROM ${table} ORDER BY temp DESC LIMIT 1`);
    assert.equal(sample[0].temp, 34);
    assert.match(sample[0].device, /^d[0-3]$/);
    const del = await b.api('POST', '/source/delete', { body: { id: source } });
    assert.equal(del.status, 409);
    const info = await b.api('POST', '/source/query/info', { body: { id: source } });
    assert.equal(info.json.data.queries.length, 1);
    assert.equal(info.json.data.queries[0].runtime.success, expected);
    // Removing the query (the action) frees the source.
    assert.equal((await b.api('POST', '/source/query/delete', { body: { id: info.json.data.queries[0].id } })).status, 200);
    assert.equal((await b.api('POST', '/source/delete', { body: { id: source } })).status, 200);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.end();
  }
});

test('save_mysql into MariaDB, with the output fields as columns', async () => {
  const conn = await mysql.createConnection(MYSQL_URL);
  const table = uniqueName('rule_rows');
  await conn.query(`CREATE TABLE ${table} (clientid VARCHAR(64), n INT)`);
  try {
    const source = await addSource('my-rows', 'mysql', { url: MYSQL_URL });
    const add = await b.api('POST', '/rule/add', { body: { name: 'to-mysql', sql: 'SELECT clientid, payload.n AS n FROM "my/#"', actions: [{ type: 'save_mysql', config: { source, table } }] } });
    assert.equal(add.status, 200, add.text);
    const pub = await connect(b.url, { clientId: 'my-pub' });
    for (let n = 0; n < 50; n++) await pub.publishAsync('my/x', JSON.stringify({ n }), { qos: 1 });
    await end(pub);
    const sum = await waitFor(async () => {
      const [r] = await conn.query(`SELECT count(*) AS c, sum(n) AS s FROM ${table} WHERE clientid = 'my-pub'`) as unknown as [{ c: number; s: string }[]];
      return Number(r[0].c) === 50 && Number(r[0].s);
    });
    assert.equal(sum, (49 * 50) / 2);
  } finally {
    await conn.query(`DROP TABLE IF EXISTS ${table}`);
    await conn.end();
  }
});

test('webhook: a rule POSTs each output as JSON to an http source', async () => {
  const received: { path: string; body: unknown; header: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url!, body: JSON.parse(Buffer.concat(chunks).toString()), header: req.headers['x-device'] as string | undefined });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as AddressInfo).port;
    const source = await addSource('hook', 'http', { url: `http://127.0.0.1:${port}/in` });
    const add = await b.api('POST', '/rule/add', { body: { name: 'to-hook', sql: 'SELECT clientid, payload.v AS v FROM "hook/#"', actions: [{ type: 'webhook', config: { source, path: '/${clientid}', headers: { 'x-device': '${clientid}' } } }] } });
    assert.equal(add.status, 200, add.text);
    const pub = await connect(b.url, { clientId: 'hook-pub' });
    await pub.publishAsync('hook/a', JSON.stringify({ v: 7 }), { qos: 1 });
    await end(pub);
    await waitFor(() => received.length === 1);
    assert.deepEqual(received[0], { path: '/in/hook-pub', body: { clientid: 'hook-pub', v: 7 }, header: 'hook-pub' });
  } finally {
    server.close();
  }
});

test('save_redis, save_kafka and save_mongodb: outputs arrive in Redis, Kafka and FerretDB (MongoDB wire protocol)', async () => {
  ensureRedis();
  ensureKafka();
  ensureFerretDb();
  const tag = uniqueName('t');
  const redisSource = await addSource('redis-out', 'redis', { url: 'redis://127.0.0.1:6379/0' });
  const kafkaSource = await addSource('kafka-out', 'kafka', { bootstrapServers: '127.0.0.1:9092' });
  const mongoSource = await addSource('mongo-out', 'mongodb', { url: 'mongodb://127.0.0.1:27017/spindle_test' });
  for (const id of [redisSource, kafkaSource, mongoSource]) {
    const check = await b.api('POST', '/source/check', { body: { id } });
    assert.equal(check.json.data.ok, true, check.text);
  }
  const kafkaTopic = `${tag}-out`;
  const add = await b.api('POST', '/rule/add', { body: { name: 'fan-out-stores', sql: `SELECT clientid, payload.n AS n, topic FROM "${tag}/#"`, actions: [
    { type: 'save_redis', config: { source: redisSource, command: ['HSET', `${tag}:\${clientid}`, 'n${n}', '${topic}'] } },
    { type: 'save_kafka', config: { source: kafkaSource, topic: kafkaTopic, key: '${clientid}' } },
    { type: 'save_mongodb', config: { source: mongoSource, collection: tag, document: { device: '${clientid}', n: '${n}' } } },
  ] } });
  assert.equal(add.status, 200, add.text);
  const ruleId = (await b.api('POST', '/rule/query', { body: { name: 'fan-out-stores' } })).json.data[0].id as string;
  /** The rule's counters (per action success, failed, dropped, last error), for failure messages. */
  const runtime = async (): Promise<string> => (await b.api('POST', '/rule/runtime', { body: { id: ruleId } })).text;
  const pub = await connect(b.url, { clientId: 'stores-pub' });
  for (let n = 0; n < 20; n++) await pub.publishAsync(`${tag}/x`, JSON.stringify({ n }), { qos: 1 });
  await end(pub);

  const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await redis.connect();
  const hash = await waitFor(async () => {
    const h = await redis.hgetall(`${tag}:stores-pub`);
    return Object.keys(h).length === 20 && h;
  }).catch(async (err: Error) => {
    throw new Error(`${err.message}; rule runtime: ${await runtime()}`);
  });
  assert.equal(hash.n7, `${tag}/x`);
  await redis.del(`${tag}:stores-pub`);
  redis.disconnect();

  const mongo = new MongoClient('mongodb://127.0.0.1:27017/');
  await mongo.connect();
  const docs = await waitFor(async () => {
    const d = await mongo.db('spindle_test').collection(tag).find({}, { projection: { _id: 0 } }).sort({ n: 1 }).toArray();
    return new Set(d.map((x) => x.n)).size === 20 && d; // a retried insertMany may add a document twice
  }).catch(async (err: Error) => {
    throw new Error(`${err.message}; rule runtime: ${await runtime()}`);
  });
  assert.deepEqual(docs[3], { device: 'stores-pub', n: 3 });
  await mongo.db('spindle_test').collection(tag).drop();
  await mongo.close();

  // save_kafka retries a batch whose produce timed out, so a record may arrive twice (at least
  // once, as Kafka producers without idempotence are): every n arrives, keyed, first in order.
  const all = Array.from({ length: 20 }, (_, i) => i);
  const distinct = (rs: KafkaRecord[]): number[] => [...new Set(rs.map((r) => (JSON.parse(r.value) as { n: number }).n))];
  const records = await readKafka(kafkaTopic, (rs) => distinct(rs).length >= 20).catch(async (err: Error) => {
    throw new Error(`${err.message}; rule runtime: ${await runtime()}`);
  });
  assert.deepEqual(distinct(records), all, await runtime());
  assert.ok(records.every((r) => r.key === 'stores-pub'));
});
