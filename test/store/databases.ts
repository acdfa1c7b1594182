// Where the store tests find their databases (scripts/ensure-databases.sh sets them up; override
// with SPINDLE_TEST_PG_URL / SPINDLE_TEST_MYSQL_URL), and a unique name per test so reruns and
// parallel runs never see each other's data.
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';

import postgres from 'postgres';

import type { Store } from '../../src/store/types.ts';

export const PG_URL = process.env.SPINDLE_TEST_PG_URL || 'postgres://spindle:spindle@127.0.0.1:5432/spindle_test';
export const MYSQL_URL = process.env.SPINDLE_TEST_MYSQL_URL || 'mysql://spindle:spindle@127.0.0.1:3306/spindle_test';

export const SETUP_HINT = 'run scripts/ensure-databases.sh (or `make databases`) to install and start the test databases';

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** Rethrows a connection failure with the hint naming the setup script. */
export function withHint(err: unknown, url: string): Error {
  return new Error(`cannot use the test database at ${url.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error)?.message ?? String(err)}; ${SETUP_HINT}`, { cause: err });
}

/** A PostgreSQL schema of a test's own on the test database (made now; `drop` removes it and closes
 * the connection): its name, the store settings that use it, and a connection to look into it. */
export interface PgSchema {
  name: string;
  store: { storeType: 'POSTGRESQL'; datasource: { url: string } };
  sql: postgres.Sql;
  drop(): Promise<void>;
}

export async function pgSchema(prefix: string): Promise<PgSchema> {
  const name = uniqueName(prefix);
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE SCHEMA ${name}`);
  } catch (err) {
    await sql.end();
    throw withHint(err, PG_URL);
  }
  return {
    name,
    store: { storeType: 'POSTGRESQL', datasource: { url: `${PG_URL}?search_path=${name}` } },
    sql,
    async drop() {
      await sql.unsafe(`DROP SCHEMA ${name} CASCADE`);
      await sql.end();
    },
  };
}

/** The sessions the will-migration tests write at schema version 1 (wills holding minus their
 * interval), as every store must read them back after migrating. */
export async function assertMigratedWills(store: Store): Promise<void> {
  const sessions = await store.loadSessions();
  assert.deepEqual(
    sessions.map((s) => [s.clientId, s.will?.expiryInterval]).sort(),
    [['expiring', 30], ['never', 0], ['no-will', undefined]],
  );
  const will = sessions.find((s) => s.clientId === 'expiring')?.will;
  assert.deepEqual(will, { delay: 5, expiryInterval: 30, message: { topic: 'w', payload: Buffer.from('bye'), qos: 1, retain: true, properties: null } });
}
