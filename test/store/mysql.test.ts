// The store suite against MySQL / MariaDB (each test in its own database, dropped afterwards),
// plus recovery after the server kills the store's connection, byte-exact keys and limits, and
// upgrades of an older schema (also after an interrupted migration). The throughput of concurrent
// addMessage calls is measured by bench/store-sql.ts.
// needs: mariadb
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';

import { StoreError } from '../../src/store/errors.ts';
import { MYSQL_MIGRATIONS } from '../../src/store/mysql/migrations.ts';
import { MysqlStore } from '../../src/store/mysql/mysql-store.ts';
import type { StoredMessage } from '../../src/store/types.ts';
import { MYSQL_URL, assertMigratedWills, uniqueName, withHint } from './databases.ts';
import { storeSuite } from './store-suite.ts';
import { waitFor } from '../helpers/wait.ts';

async function openStore(database: string): Promise<MysqlStore> {
  const store = new MysqlStore({ url: MYSQL_URL, database });
  try {
    await store.open();
  } catch (err) {
    throw withHint(err, MYSQL_URL);
  }
  return store;
}

function adminConnection(): Promise<mysql.Connection> {
  return mysql.createConnection({ uri: MYSQL_URL, supportBigNumbers: true, bigNumberStrings: true });
}

async function dropDatabase(database: string): Promise<void> {
  const conn = await adminConnection();
  try {
    await conn.query('DROP DATABASE IF EXISTS ??', [database]);
  } finally {
    await conn.end();
  }
}

function message(id: bigint, over: Partial<StoredMessage> = {}): StoredMessage {
  return { id, topic: `t/${id}`, payload: Buffer.from(`payload ${id}`), qos: 1, retain: false, properties: null, expiresAt: 0, ...over };
}

function isStoreError(code: string) {
  return (err: unknown) => {
    assert.ok(err instanceof StoreError, `expected StoreError, got ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  };
}

storeSuite('mysql', async () => {
  const database = uniqueName('spindle_t');
  const store = await openStore(database);
  return { store, reopen: () => openStore(database), cleanup: () => dropDatabase(database) };
});

test('mysql: a write whose connection is KILLed mid-transaction rejects with StoreError; the next write reconnects', { timeout: 60_000 }, async (t) => {
  const database = uniqueName('spindle_t');
  const store = await openStore(database);
  const admin = await adminConnection();
  try {
    await store.putAdmin('k', 'before', 1);
    assert.equal(store.healthy, true);
    const id = store.connectionId;
    assert.ok(id !== null);
    // Hold the store's batch inside its transaction: another transaction holds the row it upserts.
    await admin.query('START TRANSACTION');
    await admin.query('INSERT INTO ??.spindle_admin (kind, id, doc) VALUES (?, ?, ?)', [database, 'k', 'during', '0']);
    const during = store.putAdmin('k', 'during', 2);
    during.catch(() => {});
    await waitFor(async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SELECT 1 FROM information_schema.processlist WHERE id = ? AND info LIKE ?', [id, 'INSERT INTO spindle_admin%']);
      return rows.length > 0;
    }, { interval: 10, message: "the store's batch to be blocked on the row lock" });
    await admin.query(`KILL ${Number(id)}`);
    await assert.rejects(during, (err: unknown) => {
      isStoreError('STORE_UNAVAILABLE')(err);
      const cause = (err as StoreError).cause as { code?: string } | undefined;
      assert.ok(cause, 'the driver error is kept as cause');
      t.diagnostic(`killed batch: ${(err as Error).message} (${cause.code})`);
      return true;
    });
    await admin.query('ROLLBACK');
    assert.equal(store.healthy, false);

    // Recovery: the next write connects afresh (after the backoff) and commits; the failed one left nothing.
    await store.putAdmin('k', 'recovered', 4);
    assert.equal(store.healthy, true);
    assert.notEqual(store.connectionId, id, 'a new connection');
    assert.deepEqual((await store.listAdmin('k')).map((d) => d.id), ['before', 'recovered']);
  } finally {
    await admin.end();
    await store.close();
    await dropDatabase(database);
  }
});

test('mysql: a connection KILLed while idle is replaced without failing the next write', { timeout: 60_000 }, async () => {
  const database = uniqueName('spindle_t');
  const store = await openStore(database);
  const admin = await adminConnection();
  try {
    await store.putAdmin('k', 'before', 1);
    const id = store.connectionId;
    await admin.query(`KILL ${Number(id)}`);
    // Let the client see the close (an unhandled 'error' event here would crash the process):
    // the store forgets the connection when its 'error' event comes.
    await waitFor(() => store.connectionId === null, { message: 'the store to notice its connection was killed' });
    await store.putAdmin('k', 'after', 2);
    assert.equal(store.healthy, true);
    assert.notEqual(store.connectionId, id, 'a new connection');
    assert.deepEqual((await store.listAdmin('k')).map((d) => d.id), ['after', 'before']);
  } finally {
    await admin.end();
    await store.close();
    await dropDatabase(database);
  }
});

test('mysql: an unreachable server fails open() with STORE_UNAVAILABLE', { timeout: 30_000 }, async () => {
  const url = new URL(MYSQL_URL);
  url.port = '1'; // nothing listens there
  const store = new MysqlStore({ url: url.toString(), database: uniqueName('spindle_t') });
  await assert.rejects(store.open(), isStoreError('STORE_UNAVAILABLE'));
});

test('mysql: keys compare byte-exact (case, trailing spaces); over-long keys are refused alone', { timeout: 60_000 }, async () => {
  const database = uniqueName('spindle_t');
  const store = await openStore(database);
  try {
    const s = (clientId: string) => ({ clientId, expiryInterval: 0, disconnectedAt: null, username: null, will: null });
    const writes = [store.saveSession(s('a')), store.saveSession(s('A')), store.saveSession(s('a ')), store.saveSession(s('ä'))];
    const tooLong = store.addSubscription({ clientId: 'a', filter: 'x/'.repeat(2000), options: 0, subscriptionId: 0 });
    writes.push(store.addSubscription({ clientId: 'a', filter: 'ok', options: 0, subscriptionId: 0 }));
    await assert.rejects(tooLong, isStoreError('STORE_INVALID'));
    await Promise.all(writes);
    assert.deepEqual((await store.loadSessions()).map((x) => x.clientId).sort(), ['A', 'a', 'a ', 'ä']);
    assert.deepEqual((await store.loadSubscriptions()).map((x) => x.filter), ['ok']);
    await store.setRetained('r', message(1n, { topic: 'r' }));
    await store.setRetained('r ', message(2n, { topic: 'r ' }));
    assert.equal((await store.loadRetained()).length, 2);
  } finally {
    await store.close();
    await dropDatabase(database);
  }
});

/** A database as version 1 left it: its tables, its version row, wills with minus the interval. */
async function databaseAtVersion1(database: string): Promise<mysql.Connection> {
  const conn = await adminConnection();
  try {
    await conn.query('CREATE DATABASE ??', [database]);
    await conn.query('USE ??', [database]);
    for (const statement of MYSQL_MIGRATIONS[0].statements) await conn.query(statement);
    await conn.query(`CREATE TABLE spindle_schema_version (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
      applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await conn.query('INSERT INTO spindle_schema_version (version, name) VALUES (1, ?)', [MYSQL_MIGRATIONS[0].name]);
    for (const [clientId, expiresAt] of [['expiring', -30], ['never', 0]] as const) {
      await conn.query(
        `INSERT INTO spindle_sessions (client_id, expiry_interval, disconnected_at, expires_at, username,
           will_topic, will_payload, will_qos, will_retain, will_properties, will_expires_at, will_delay)
         VALUES (?, 60, 1000, 61000, NULL, 'w', ?, 1, 1, NULL, ?, 5)`,
        [clientId, Buffer.from('bye'), expiresAt],
      );
    }
    await conn.query("INSERT INTO spindle_sessions (client_id, expiry_interval) VALUES ('no-will', 0)");
  } catch (err) {
    conn.destroy();
    throw err;
  }
  return conn;
}

async function assertWillIntervals(database: string): Promise<void> {
  const store = await openStore(database);
  try {
    await assertMigratedWills(store);
  } finally {
    await store.close();
  }
}

test("mysql: migration 2 turns a will's negative will_expires_at (version 1) into its expiryInterval", { timeout: 60_000 }, async () => {
  const database = uniqueName('spindle_t');
  try {
    await (await databaseAtVersion1(database)).end();
    await assertWillIntervals(database);
  } finally {
    await dropDatabase(database);
  }
});

test('mysql: migration 2 interrupted after its rename (DDL commits at once) runs again to the end', { timeout: 60_000 }, async () => {
  const database = uniqueName('spindle_t');
  try {
    const conn = await databaseAtVersion1(database);
    await conn.query('ALTER TABLE spindle_sessions RENAME COLUMN will_expires_at TO will_expiry_interval');
    await conn.end();
    await assertWillIntervals(database);
  } finally {
    await dropDatabase(database);
  }
});
