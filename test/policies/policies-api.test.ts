// Auth and ACL policies end to end (spec 4.7) on a 2-worker broker with mqtt.js clients and real
// PostgreSQL and MariaDB: the routes as a new user tries them, a policy applied at once on both
// workers, the chain (policy, then the static users), cached answers dropped on a change, a source
// that goes down answered as ignore (counted, never an allow), superusers, ACL rows with %u/%c,
// denied PUBLISH and SUBSCRIBE with their reason codes, the dry run at add time, and policies
// kept across a restart.
// needs: broker, postgresql, mariadb
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import mysql from 'mysql2/promise';
import postgres from 'postgres';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import type { MqttClient } from 'mqtt';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';
import { MYSQL_URL, PG_URL, uniqueName } from '../store/databases.ts';
import { TcpProxy } from '../sources/helpers.ts';
import { hashWithStrategy } from '../../src/auth/strategies/password-strategy.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-policies-'));
let b: AdminBroker;
let urls: string[];
const pg = postgres(PG_URL, { onnotice: () => {} });
const users = uniqueName('mqtt_user');
const acl = uniqueName('mqtt_acl');
let my: mysql.Connection;

before(async () => {
  await pg.unsafe(`CREATE TABLE ${users} (username text PRIMARY KEY, password_hash text NOT NULL, salt text, is_superuser boolean DEFAULT false)`);
  my = await mysql.createConnection(MYSQL_URL);
  await my.query(`CREATE TABLE ${acl} (id int AUTO_INCREMENT PRIMARY KEY, username varchar(100), permission varchar(10), action varchar(10), topic varchar(200))`);
  b = await startAdminBroker({ dataDir, auth: { allowAnonymous: false, users: [], aclDefault: 'deny' } });
  urls = await workerUrls(b);
});

after(async () => {
  await b.stop();
  await pg.unsafe(`DROP TABLE IF EXISTS ${users}`);
  await pg.end();
  await my.query(`DROP TABLE IF EXISTS ${acl}`);
  await my.end();
});

async function addUser(username: string, password: string, superuser = false): Promise<void> {
  const salt = `s-${username}`;
  const hash = await hashWithStrategy({ strategy: 'sha256', saltType: 'suffix' }, password, salt);
  await pg.unsafe(`INSERT INTO ${users} (username, password_hash, salt, is_superuser) VALUES ($1, $2, $3, $4)
    ON CONFLICT (username) DO UPDATE SET password_hash = $2, salt = $3, is_superuser = $4`, [username, hash, salt, superuser]);
}

/** The CONNACK reason code of a connection attempt (0: accepted). */
async function connackOf(url: string, options: Record<string, unknown>): Promise<number> {
  try {
    const c = await connect(url, { protocolVersion: 5, reconnectPeriod: 0, ...options });
    await end(c);
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}

async function authPolicyId(name: string): Promise<string> {
  const q = await b.api('POST', '/auth/query', { body: { name } });
  assert.equal(q.status, 200, q.text);
  const found = q.json.data.find((p: { name: string }) => p.name === name);
  assert.ok(found, `${name} is listed`);
  return found.id;
}

/** The SUBACK codes of one SUBSCRIBE (mqtt.js rejects when one is a refusal: read them from its packet). */
async function grants(client: MqttClient, filters: Record<string, { qos: 0 | 1 | 2 }>): Promise<number[]> {
  try {
    return (await client.subscribeAsync(filters)).map((g) => g.qos);
  } catch (err) {
    const packet = (err as { packet?: { granted?: number[] } }).packet;
    if (!packet?.granted) throw err;
    return packet.granted;
  }
}

const pgAuth = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'database',
  config: {
    datasource: { url: PG_URL.replace('postgres://spindle:spindle@', 'postgres://'), username: 'spindle', password: 'spindle' },
    sql: `SELECT password_hash, salt, is_superuser FROM ${users} WHERE username = \${username} LIMIT 1`,
    passwordHash: { strategy: 'sha256', saltType: 'suffix' },
  },
  ...extra,
});

test('the strategies and salt types are listed; encrypt makes the hash a policy verifies', async () => {
  const salts = await b.api('POST', '/auth/salt/type', { body: {} });
  assert.deepEqual((await b.api('GET', '/auth/salt/type')).json.data, ['disable', 'prefix', 'suffix']);
  assert.equal(salts.status, 200, salts.text);
  assert.deepEqual(salts.json.data, ['disable', 'prefix', 'suffix']);
  const strategies = await b.api('POST', '/auth/password/encrypt', { body: {} });
  assert.deepEqual(strategies.json.data.map((s: { strategy: string }) => s.strategy), ['plain', 'md5', 'sha1', 'sha256', 'sha512', 'bcrypt', 'pbkdf2', 'argon2']);
  const made = await b.api('POST', '/auth/password/encrypt', { body: { strategy: 'sha256', password: 'pw', salt: 'abc', saltType: 'prefix' } });
  assert.equal(made.status, 200, made.text);
  assert.equal(made.json.data.hash, await hashWithStrategy({ strategy: 'sha256', saltType: 'prefix' }, 'pw', 'abc'));
  const bad = await b.api('POST', '/auth/password/encrypt', { body: { strategy: 'rot13', password: 'x' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'strategy');
});

test('a database policy applies at once on both workers: right password in, wrong one 0x86, unknown user to the static users (none: refused)', async () => {
  await addUser('alice', 'alice-pw');
  for (const url of urls) assert.equal(await connackOf(url, { clientId: 'before', username: 'alice', password: 'alice-pw' }), 0x86, 'no policy yet, no static user');
  const add = await b.api('POST', '/auth/add', { body: pgAuth('pg-users') });
  assert.equal(add.status, 200, add.text);
  assert.equal(add.json, 'success');
  for (const [w, url] of urls.entries()) {
    assert.equal(await connackOf(url, { clientId: `alice-${w}`, username: 'alice', password: 'alice-pw' }), 0, `worker ${w}`);
    assert.equal(await connackOf(url, { clientId: `alice-${w}`, username: 'alice', password: 'nope' }), 0x86, `worker ${w}`);
    assert.equal(await connackOf(url, { clientId: `mallory-${w}`, username: "' OR '1'='1", password: 'x' }), 0x86, 'not found: ignore, then no static user');
  }
  const listed = await b.api('POST', '/auth/query', { body: { page: 1, size: 10 } });
  assert.equal(listed.json.total, 1);
  const p = listed.json.data[0];
  assert.equal(p.config.datasource.password, undefined, 'the password is never answered');
  assert.ok(!listed.text.includes('spindle:spindle'));
  assert.ok(p.stats.allow >= 1 && p.stats.deny >= 1 && p.stats.ignore >= 1, JSON.stringify(p.stats));
  const prom = (await b.api('GET', '/prometheus')).text;
  assert.match(prom, new RegExp(`spindle_policy_answers_total\\{kind="auth",policy="${p.id}",type="database",result="allow"\\} [1-9]`));
  assert.match(prom, /spindle_policy_cache_total\{kind="auth",result="miss"\} [1-9]/);
});

test('answers are cached until the policy changes; delete applies at once', async () => {
  const id = await authPolicyId('pg-users');
  await addUser('bob', 'bob-1');
  assert.equal(await connackOf(urls[0], { clientId: 'bob', username: 'bob', password: 'bob-1' }), 0);
  await addUser('bob', 'bob-2');
  assert.equal(await connackOf(urls[0], { clientId: 'bob', username: 'bob', password: 'bob-1' }), 0, 'the cached answer (auth.policyCacheTtl)');
  const update = await b.api('POST', '/auth/update', { body: { id, order: 5 } });
  assert.equal(update.status, 200, update.text);
  assert.equal(await connackOf(urls[0], { clientId: 'bob', username: 'bob', password: 'bob-1' }), 0x86, 'a change empties every cache');
  assert.equal(await connackOf(urls[1], { clientId: 'bob', username: 'bob', password: 'bob-2' }), 0);
  const off = await b.api('POST', '/auth/update', { body: { id, enabled: false } });
  assert.equal(off.json.data.enabled, false);
  assert.equal(await connackOf(urls[1], { clientId: 'bob', username: 'bob', password: 'bob-2' }), 0x86, 'disabled: out of the chain');
  await b.api('POST', '/auth/update', { body: { id, enabled: true } });
  assert.equal(await connackOf(urls[1], { clientId: 'bob', username: 'bob', password: 'bob-2' }), 0);
});

test('a policy whose query cannot run is refused at add time, naming the field; bad fields are 400s', async () => {
  const syntax = await b.api('POST', '/auth/add', { body: pgAuth('broken', { config: { ...pgAuth('x').config, sql: 'SELEC password_hash FROM nowhere WHERE username = ${username}' } }) });
  assert.equal(syntax.status, 400, syntax.text);
  assert.equal(syntax.json.field, 'config.sql');
  const column = await b.api('POST', '/auth/add', { body: pgAuth('broken', { config: { ...pgAuth('x').config, sql: `SELECT username FROM ${users} WHERE username = \${username}` } }) });
  assert.equal(column.status, 400, column.text);
  assert.equal(column.json.field, 'config.sql');
  const type = await b.api('POST', '/auth/add', { body: { name: 'x', type: 'kerberos', config: {} } });
  assert.equal(type.status, 400);
  assert.equal(type.json.field, 'type');
  const dup = await b.api('POST', '/auth/add', { body: pgAuth('pg-users') });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.field, 'name');
  const missing = await b.api('POST', '/auth/delete', { body: { id: 'auth-nope' } });
  assert.equal(missing.status, 404);
  const unknownField = await b.api('POST', '/auth/add', { body: { ...pgAuth('y'), color: 'red' } });
  assert.equal(unknownField.status, 400);
});

test('a source that goes down is answered as ignore (counted, never an allow); back up, it answers again', async () => {
  const target = new URL(PG_URL);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const port = await proxy.start();
  const src = await b.api('POST', '/source/add', { body: { name: 'pg-proxied', type: 'postgresql', config: { host: '127.0.0.1', port, database: target.pathname.slice(1), username: 'spindle', password: 'spindle', requestTimeout: 1000, connectTimeout: 1000 } } });
  assert.equal(src.status, 200, src.text);
  const sourceId = src.json.data.id;
  const main = await authPolicyId('pg-users');
  await b.api('POST', '/auth/update', { body: { id: main, enabled: false } });
  const add = await b.api('POST', '/auth/add', { body: { name: 'via-proxy', type: 'database', config: { source: sourceId, sql: pgAuth('x').config.sql, passwordHash: { strategy: 'sha256', saltType: 'suffix' } } } });
  assert.equal(add.status, 200, add.text);
  const id = await authPolicyId('via-proxy');
  await addUser('carol', 'carol-pw');
  assert.equal(await connackOf(urls[0], { clientId: 'carol', username: 'carol', password: 'carol-pw' }), 0);
  const inUse = await b.api('POST', '/source/delete', { body: { id: sourceId } });
  assert.equal(inUse.status, 409, 'a source a policy reads cannot be deleted');

  await proxy.stop();
  assert.equal(await connackOf(urls[1], { clientId: 'carol-2', username: 'carol', password: 'other' }), 0x86, 'down: ignore, then no static user; never allowed');
  const stats = (await b.api('POST', '/auth/query', { body: { id } })).json.data[0].stats;
  assert.ok(stats.error >= 1, JSON.stringify(stats));
  await proxy.start(port);
  await waitFor(async () => (await connackOf(urls[1], { clientId: 'carol-3', username: 'carol', password: 'carol-pw' })) === 0, { message: 'the policy answers again once its source is back' });
  await b.api('POST', '/auth/delete', { body: { id } });
  await b.api('POST', '/auth/update', { body: { id: main, enabled: true } });
  assert.equal((await b.api('POST', '/source/delete', { body: { id: sourceId } })).status, 200);
  await proxy.stop();
});

test('ACL policy rows from MariaDB: %u/%c patterns, deny before allow, PUBLISH 0x87 and SUBSCRIBE 0x87 / 0x80; superusers skip it', async () => {
  await my.query(`INSERT INTO ${acl} (username, permission, action, topic) VALUES
    ('dave', 'deny', 'publish', 'devices/%c/secret'),
    ('dave', 'allow', 'all', 'devices/%c/#'),
    ('dave', 'allow', 'subscribe', 'news/+')`);
  const add = await b.api('POST', '/acl/add', { body: { name: 'maria-acl', type: 'database', config: {
    datasource: { url: MYSQL_URL },
    sql: `SELECT permission, action, topic FROM ${acl} WHERE username = \${username} ORDER BY id`,
  } } });
  assert.equal(add.status, 200, add.text);
  assert.equal(add.json.data.config.datasource.url.includes('spindle:spindle'), false, 'the url password is not answered');
  await addUser('dave', 'dave-pw');
  await addUser('root', 'root-pw', true);
  const aclId = add.json.data.id;

  const dave = await connect(urls[1], { protocolVersion: 5, clientId: 'dev-9', username: 'dave', password: 'dave-pw' });
  const granted = await grants(dave, { 'devices/dev-9/#': { qos: 1 }, 'news/+': { qos: 1 }, 'news/#': { qos: 1 }, 'devices/dev-8/#': { qos: 1 } });
  assert.deepEqual(granted, [1, 1, 1, 0x87], 'news/# is granted in part (news/+ may be read), another device not at all');
  const own = nextMessages(dave, 1);
  await dave.publishAsync('devices/dev-9/temp', '21', { qos: 1 });
  assert.equal((await own)[0].payload, '21');
  await assert.rejects(dave.publishAsync('devices/dev-9/secret', 'x', { qos: 1 }), (err: { code?: number }) => err.code === 0x87);

  const v3 = await connect(urls[0], { protocolVersion: 4, clientId: 'dev-7', username: 'dave', password: 'dave-pw' });
  const v3grant = await grants(v3, { 'devices/dev-7/+': { qos: 0 }, 'devices/dev-9/+': { qos: 0 } });
  assert.deepEqual(v3grant, [0, 0x80]);

  const root = await connect(urls[0], { protocolVersion: 5, clientId: 'root', username: 'root', password: 'root-pw' });
  const all = await root.subscribeAsync('devices/#', { qos: 1 });
  assert.equal(all[0].qos, 1, 'a superuser skips the ACL');
  // Through news/#, only what the rows let dave read arrives: news/a/b is checked and dropped.
  const news = nextMessages(dave, 1);
  await root.publishAsync('news/a/b', 'deep', { qos: 1 });
  await root.publishAsync('news/a', 'flat', { qos: 1 });
  assert.deepEqual((await news).map((m) => [m.topic, String(m.payload)]), [['news/a', 'flat']]);
  const denials = (await b.api('POST', '/acl/query', { body: { id: aclId } })).json.data[0].stats;
  assert.ok(denials.deny >= 1 && denials.allow >= 2, JSON.stringify(denials));
  const probe = await b.api('POST', '/acl/test', { body: { clientid: 'dev-9', username: 'dave', action: 'publish', topic: 'devices/dev-9/secret' } });
  assert.equal(probe.json.data.result, 'deny');
  await end(dave, v3, root);
});

test('policies are kept in the store and run again after a restart', async () => {
  await addUser('erin', 'erin-pw');
  await b.stop();
  b = await startAdminBroker({ dataDir, auth: { allowAnonymous: false, users: [], aclDefault: 'deny' } });
  urls = await workerUrls(b);
  assert.equal(await connackOf(urls[1], { clientId: 'erin', username: 'erin', password: 'erin-pw' }), 0);
  const q = await b.api('POST', '/acl/query', { body: {} });
  assert.equal(q.json.total, 1);
});
