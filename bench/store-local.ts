// LOCAL store write benchmark: N addMessage calls (one delivery each, 64-byte payload) issued at
// once from one thread, timed until the last Promise resolved (= everything durable), for
// synchronous=FULL (the default: fsync per commit) and NORMAL (fsync at checkpoints only). Group
// commit is what makes this fast: the calls issued while a commit is in flight share the next one.
// The broker's target is 50 000 messages/s persisted with LOCAL on a 2-core machine.
// Run: node --import tsx bench/store-local.ts   (STORE_BENCH_SIZES=10000,100000 to choose sizes)
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { LocalStore } from '../src/store/local/local-store.ts';
import { writeResults, type Row } from './lib/report.ts';

const SIZES = (process.env.STORE_BENCH_SIZES ?? '10000,100000').split(',').map(Number);
const ROUNDS = Number(process.env.STORE_BENCH_ROUNDS ?? 3);
const TARGET = 50_000;
const payload = Buffer.alloc(64, 0x5a);

async function run(n: number, synchronous: 'FULL' | 'NORMAL'): Promise<{ rate: number; issueMs: number; totalMs: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spindle-bench-local-'));
  const store = new LocalStore({ dataDir: dir, synchronous });
  await store.open();
  try {
    await store.saveSession({ clientId: 'sub', expiryInterval: 0xffffffff, disconnectedAt: null, username: null, will: null });
    const t0 = performance.now();
    const calls: Promise<void>[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const id = BigInt(i + 1);
      calls[i] = store.addMessage(
        { id, topic: 'bench/sensor/1/temperature', payload, qos: 1, retain: false, properties: null, expiresAt: 0 },
        [{ clientId: 'sub', seq: id, qos: 1, retain: false, subscriptionIds: [] }],
      );
    }
    const issued = performance.now();
    await Promise.all(calls);
    const done = performance.now();
    const stats = await store.stats();
    if (stats.messages !== n || stats.deliveries !== n) throw new Error(`expected ${n} messages, found ${JSON.stringify(stats)}`);
    return { rate: n / ((done - t0) / 1000), issueMs: issued - t0, totalMs: done - t0 };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One write at a time, each awaited: every call pays a whole commit (with FULL, one fsync). */
async function sequential(n: number, synchronous: 'FULL' | 'NORMAL'): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spindle-bench-local-'));
  const store = new LocalStore({ dataDir: dir, synchronous });
  await store.open();
  try {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const id = BigInt(i + 1);
      await store.addMessage(
        { id, topic: 'bench/sensor/1/temperature', payload, qos: 1, retain: false, properties: null, expiresAt: 0 },
        [{ clientId: 'sub', seq: id, qos: 1, retain: false, subscriptionIds: [] }],
      );
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const SEQUENTIAL = Number(process.env.STORE_BENCH_SEQUENTIAL ?? 2000);
const rows: Row[] = [];
for (const synchronous of ['FULL', 'NORMAL'] as const) {
  for (const n of SIZES) {
    const results = [];
    for (let r = 0; r < ROUNDS; r++) results.push(await run(n, synchronous));
    results.sort((a, b) => a.rate - b.rate);
    const median = results[Math.floor(results.length / 2)];
    rows.push({
      synchronous,
      messages: n,
      'msgs/s persisted (median)': Math.round(median.rate),
      'best msgs/s': Math.round(results[results.length - 1].rate),
      'issue ms': Number(median.issueMs.toFixed(1)),
      'total ms': Number(median.totalMs.toFixed(1)),
      [`vs ${TARGET.toLocaleString('en-US')}/s`]: median.rate >= TARGET ? 'meets' : 'below',
    });
  }
  const rate = await sequential(SEQUENTIAL, synchronous);
  rows.push({ synchronous, messages: `${SEQUENTIAL} one at a time`, 'msgs/s persisted (median)': Math.round(rate), 'total ms': Number(((SEQUENTIAL / rate) * 1000).toFixed(1)) });
}

writeResults('store-local', 'LOCAL store: concurrent addMessage, persisted messages per second', rows, [
  `${ROUNDS} rounds per row, each on a fresh database in ${os.tmpdir()}; one delivery per message, 64-byte payload, one Node thread issuing.`,
  'The "one at a time" rows await each call before the next: one commit per message, so they show the cost of a commit (with FULL, an fsync).',
  '"issue ms" is the time to make the calls (JS + N-API), "total ms" until the last Promise resolved (its transaction committed).',
  'FULL: fsync of the WAL per commit (survives power loss). NORMAL: fsync at checkpoints only (survives a process crash, may lose the last commits on power loss).',
]);
