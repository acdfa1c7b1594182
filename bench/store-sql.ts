// SQL store write benchmark: N addMessage calls (one delivery each, 64-byte payload) issued at once
// from one thread, timed until the last Promise resolved (= committed), for MYSQL and POSTGRESQL,
// each on a database or schema of its own that is dropped afterwards. The group commit is what
// makes this fast: calls queued while a batch runs become the next batch's multi-row INSERTs.
// Needs the test databases (make databases). Run: node --import tsx bench/store-sql.ts
// (SQL_BENCH_MESSAGES=10000 messages per run, SQL_BENCH_RUNS=3 runs per store).
import mysql from 'mysql2/promise';
import postgres from 'postgres';

import { MysqlStore } from '../src/store/mysql/mysql-store.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { Store, StoredMessage } from '../src/store/types.ts';
import { MYSQL_URL, PG_URL, uniqueName } from '../test/store/databases.ts';
import { median, writeResults, type Row } from './lib/report.ts';

const MESSAGES = Number(process.env.SQL_BENCH_MESSAGES ?? 10_000);
const RUNS = Number(process.env.SQL_BENCH_RUNS ?? 3);
const payload = Buffer.alloc(64, 7);

interface Target {
  store: Store;
  drop(): Promise<void>;
}

async function mysqlTarget(): Promise<Target> {
  const database = uniqueName('bench');
  const store = new MysqlStore({ url: MYSQL_URL, database });
  await store.open();
  return {
    store,
    drop: async () => {
      const conn = await mysql.createConnection(MYSQL_URL);
      try {
        await conn.query('DROP DATABASE IF EXISTS ??', [database]);
      } finally {
        await conn.end();
      }
    },
  };
}

async function postgresTarget(): Promise<Target> {
  const schema = uniqueName('bench');
  const store = new PostgresStore({ url: PG_URL, schema });
  await store.open();
  return {
    store,
    drop: async () => {
      const sql = postgres(PG_URL, { onnotice: () => {}, max: 1 });
      try {
        await sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`;
      } finally {
        await sql.end({ timeout: 5 });
      }
    },
  };
}

function message(id: bigint): StoredMessage {
  return { id, topic: `t/${id}`, payload, qos: 1, retain: false, properties: null, expiresAt: 0 };
}

/** Messages per second of RUNS runs of MESSAGES concurrent addMessage calls, on one store. */
async function measure(store: Store): Promise<number[]> {
  await store.saveSession({ clientId: 'c', expiryInterval: 0, disconnectedAt: null, username: null, will: null });
  const rates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const base = BigInt(run * MESSAGES);
    const start = performance.now();
    const calls: Promise<void>[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const id = base + BigInt(i) + 1n;
      calls.push(store.addMessage(message(id), [{ clientId: 'c', seq: id, qos: 1, retain: false, subscriptionIds: [1] }]));
    }
    await Promise.all(calls);
    rates.push(MESSAGES / ((performance.now() - start) / 1000));
  }
  const stats = await store.stats();
  if (stats.messages !== RUNS * MESSAGES) throw new Error(`expected ${RUNS * MESSAGES} messages, found ${JSON.stringify(stats)}`);
  return rates;
}

const rows: Row[] = [];
for (const [name, open] of [['MYSQL', mysqlTarget], ['POSTGRESQL', postgresTarget]] as const) {
  const { store, drop } = await open();
  try {
    const rates = await measure(store);
    const m = median(rates);
    rows.push({
      store: name,
      'msgs/s (median)': Math.round(m),
      runs: rates.map((r) => Math.round(r).toLocaleString('en-US')).join(', '),
      'spread %': ((Math.max(...rates) - Math.min(...rates)) / m) * 100,
    });
  } finally {
    await store.close();
    await drop();
  }
  console.error(`${name}: done`);
}

writeResults('store-sql', 'SQL stores: concurrent addMessage, committed messages per second', rows, [
  `${RUNS} runs of ${MESSAGES.toLocaleString('en-US')} addMessage calls issued at once, one delivery each, 64-byte payload, one Node thread issuing; the runs share one fresh database (MYSQL) or schema (POSTGRESQL).`,
  'Timed until the last Promise resolved (its transaction committed); the servers are the local test databases with their default durability settings.',
]);
