// Persistent QoS 1 fan-in, per store: 10 publishers send QoS 1 messages to one persistent
// subscriber that is offline (every message is stored before it is acknowledged), then the
// subscriber comes back and drains them. Reports messages per second persisted and drained.
// Target (issue 5): at least 50 000 msgs/s persisted with LOCAL on our 2-core machines.
import postgres from 'postgres';
import mysql from 'mysql2/promise';

import { startBroker } from '../test/helpers/broker.ts';
import { PG_URL, MYSQL_URL, uniqueName } from '../test/store/databases.ts';
import { publishQos1, persistentSubscribe, drain } from './lib/raw-clients.ts';
import { writeResults, median, type Row } from './lib/report.ts';

const PUBLISHERS = 10;
const PER_PUBLISHER = Number(process.env.PERSIST_MESSAGES ?? 20_000);
const WINDOW = 200;
const RUNS = Number(process.env.PERSIST_RUNS ?? 3);
const PAYLOAD = Buffer.alloc(64, 0x70);

async function once(store: Record<string, unknown>): Promise<{ persisted: number; drained: number }> {
  const broker = await startBroker({ store, limits: { maxQueuedMessages: PUBLISHERS * PER_PUBLISHER } });
  try {
    const port = broker.ports.tcp!;
    await persistentSubscribe(port, 'fanin-sub', 'fanin/#');
    const t0 = performance.now();
    await Promise.all(Array.from({ length: PUBLISHERS }, (_, i) => publishQos1(port, `fanin-pub-${i}`, `fanin/${i}`, PAYLOAD, PER_PUBLISHER, WINDOW)));
    const t1 = performance.now();
    await drain(port, 'fanin-sub', PUBLISHERS * PER_PUBLISHER);
    const t2 = performance.now();
    const total = PUBLISHERS * PER_PUBLISHER;
    return { persisted: total / ((t1 - t0) / 1000), drained: total / ((t2 - t1) / 1000) };
  } finally {
    await broker.stop();
  }
}

async function pgSchema(): Promise<{ url: string; drop(): Promise<void> }> {
  const schema = uniqueName('bench');
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await sql.unsafe(`CREATE SCHEMA ${schema}`);
  return { url: `${PG_URL}?search_path=${schema}`, drop: async () => { await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`); await sql.end(); } };
}

async function mysqlDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = uniqueName('bench');
  const conn = await mysql.createConnection(MYSQL_URL);
  await conn.query(`CREATE DATABASE ${name}`);
  const url = new URL(MYSQL_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: async () => { await conn.query(`DROP DATABASE ${name}`); await conn.end(); } };
}

const rows: Row[] = [];
const stores: [string, () => Promise<{ store: Record<string, unknown>; drop(): Promise<void> }>][] = [
  ['MEMORY', async () => ({ store: { storeType: 'MEMORY' }, drop: async () => {} })],
  ['LOCAL', async () => ({ store: { storeType: 'LOCAL' }, drop: async () => {} })],
  ['POSTGRESQL', async () => { const db = await pgSchema(); return { store: { storeType: 'POSTGRESQL', datasource: { url: db.url } }, drop: db.drop }; }],
  ['MYSQL', async () => { const db = await mysqlDatabase(); return { store: { storeType: 'MYSQL', datasource: { url: db.url } }, drop: db.drop }; }],
];
for (const [name, make] of stores) {
  const persisted: number[] = [];
  const drained: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const { store, drop } = await make();
    try {
      const res = await once(store);
      persisted.push(res.persisted);
      drained.push(res.drained);
    } finally {
      await drop();
    }
  }
  const spread = (xs: number[]) => ((Math.max(...xs) - Math.min(...xs)) / median(xs)) * 100;
  rows.push({
    store: name,
    'persisted msg/s': Math.round(median(persisted)),
    'drained msg/s': Math.round(median(drained)),
    'spread %': Math.max(spread(persisted), spread(drained)),
    target: name === 'LOCAL' ? '>= 50 000 persisted' : '',
  });
  console.error(`${name}: done`);
}

writeResults('persistence', 'Persistent QoS 1 fan-in: 10 publishers to 1 offline persistent subscriber', rows, [
  `${PUBLISHERS} publishers x ${PER_PUBLISHER.toLocaleString('en-US')} QoS 1 messages (64-byte payload, MQTT 3.1.1, ${WINDOW} in flight each) to one persistent subscriber that is offline: every message is stored before its PUBACK. Then the subscriber reconnects and acknowledges them all (drained).`,
  'Broker: 2 worker threads in the benchmark process; clients are lean raw-socket clients (pre-encoded frames, native framer) in the same process. MEMORY stores nothing and is the reference.',
  `Median of ${RUNS} runs; spread is (max - min) / median. LOCAL is SQLite with synchronous=FULL (an fsync per group commit).`,
]);
process.exit(0);
