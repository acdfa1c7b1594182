// The store suite against PostgreSQL (each test in its own schema, dropped afterwards), plus
// recovery after the server drops every connection and upgrades of an older schema.
// needs: postgresql
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';

import { StoreError } from '../../src/store/errors.ts';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { PG_URL, assertMigratedWills, uniqueName, withHint } from './databases.ts';
import { storeSuite } from './store-suite.ts';
import { waitFor } from '../helpers/wait.ts';

async function openStore(schema: string): Promise<PostgresStore> {
  const store = new PostgresStore({ url: PG_URL, schema });
  try {
    await store.open();
  } catch (err) {
    throw withHint(err, PG_URL);
  }
  return store;
}

async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(PG_URL, { onnotice: () => {}, max: 1 });
  try {
    await sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

storeSuite('postgres', async () => {
  const schema = uniqueName('spindle_t');
  const store = await openStore(schema);
  return { store, reopen: () => openStore(schema), cleanup: () => dropSchema(schema) };
});

test('postgres: a write whose connection the server kills rejects with StoreError; the next write reconnects', { timeout: 60_000 }, async () => {
  const schema = uniqueName('spindle_t');
  const store = await openStore(schema);
  const admin = postgres(PG_URL, { onnotice: () => {}, max: 1 });
  try {
    await store.putAdmin('k', 'before', 1);
    assert.equal(store.healthy, true);
    // Hold the store's batch inside its transaction (blocked on a table lock), then terminate its
    // backend, as a server restart would: the batch fails mid-transaction.
    const held = admin.begin(async (tx) => {
      await tx`LOCK TABLE ${tx(schema)}.spindle_admin IN ACCESS EXCLUSIVE MODE`;
      const during = store.putAdmin('k', 'during', 2);
      during.catch(() => {});
      const killed = await waitFor(async () => (await tx`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                              WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).length,
      { interval: 10, message: "the store's blocked backend to be found and terminated" });
      assert.equal(killed, 1, 'the store\'s blocked backend was found and terminated');
      return during;
    });
    await assert.rejects(held, (err: unknown) => {
      assert.ok(err instanceof StoreError, `expected StoreError, got ${String(err)}`);
      assert.equal(err.code, 'STORE_UNAVAILABLE');
      assert.ok(err.cause, 'the driver error is kept as cause');
      return true;
    });
    assert.equal(store.healthy, false);
    // Recovery: the next write reconnects (after the backoff) and commits; the failed one left nothing.
    await store.putAdmin('k', 'recovered', 4);
    assert.equal(store.healthy, true);
    assert.deepEqual((await store.listAdmin('k')).map((d) => d.id), ['before', 'recovered']);
  } finally {
    await admin.end({ timeout: 5 });
    await store.close();
    await dropSchema(schema);
  }
});

test("postgres: migration 2 turns a will's negative will_expires_at (version 1) into its expiryInterval", { timeout: 60_000 }, async () => {
  const schema = uniqueName('spindle_t');
  const sql = postgres(PG_URL, { onnotice: () => {}, max: 1, connection: { search_path: schema } });
  try {
    // A database as version 1 left it: its schema, its version row, wills with minus the interval.
    await sql`CREATE SCHEMA ${sql(schema)}`;
    for (const statement of POSTGRES_MIGRATIONS[0].statements) await sql.unsafe(statement);
    await sql`CREATE TABLE spindle_schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
    await sql`INSERT INTO spindle_schema_version (version, name) VALUES (1, ${POSTGRES_MIGRATIONS[0].name})`;
    for (const [clientId, expiresAt] of [['expiring', -30], ['never', 0]] as const) {
      await sql`INSERT INTO spindle_sessions (client_id, expiry_interval, disconnected_at, expires_at, username,
                  will_topic, will_payload, will_qos, will_retain, will_properties, will_expires_at, will_delay)
                VALUES (${clientId}, 60, 1000, 61000, null, 'w', ${Buffer.from('bye')}, 1, true, null, ${expiresAt}, 5)`;
    }
    await sql`INSERT INTO spindle_sessions (client_id, expiry_interval) VALUES ('no-will', 0)`;
  } finally {
    await sql.end({ timeout: 5 });
  }
  const store = await openStore(schema);
  try {
    await assertMigratedWills(store);
  } finally {
    await store.close();
    await dropSchema(schema);
  }
});
