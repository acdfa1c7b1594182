// The store suite against the LOCAL store (SQLite file in a temporary data directory), plus LOCAL
// specifics: SIGKILL crash safety in a child process (this same file, run with
// SPINDLE_LOCAL_CRASH_CHILD set), the process-wide shared native store, and per-call failures.
// Schema migrations and the refusal of a newer schema are tested in native/core/tests/store_local.rs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { StoreError } from '../../src/store/errors.ts';
import { LocalStore } from '../../src/store/local/local-store.ts';
import type { StoredMessage } from '../../src/store/types.ts';
import { spawnWorker } from '../../src/threads/spawn.ts';
import { storeSuite } from './store-suite.ts';

const tempDir = () => mkdtempSync(path.join(os.tmpdir(), 'spindle-local-'));

async function openStore(dataDir: string): Promise<LocalStore> {
  const store = new LocalStore({ dataDir });
  await store.open();
  return store;
}

const message = (id: bigint): StoredMessage => ({ id, topic: `crash/${id}`, payload: Buffer.alloc(64, Number(id & 0xffn)), qos: 1, retain: false, properties: null, expiresAt: 0 });

const CHILD = process.env.SPINDLE_LOCAL_CRASH_CHILD;

/** Crash child: writes messages one at a time, printing "ACK n" only after write n resolved; the
 * parent kills it with SIGKILL. */
async function crashChild(dataDir: string): Promise<never> {
  const store = await openStore(dataDir);
  const existing = (await store.loadDeliveries('crash')).length;
  for (let i = existing; ; i++) {
    const id = BigInt(i);
    await store.addMessage(message(id), [{ clientId: 'crash', seq: id, qos: 1, retain: false, subscriptionIds: [] }]);
    process.stdout.write(`ACK ${i}\n`);
  }
}

/** Worker thread: opens the same file (joining the process-wide native store), writes its own
 * messages concurrently with the other workers, reports how many handles share the store. */
async function workerMain(data: { localStoreDir: string; index: number; count: number }): Promise<void> {
  const store = await openStore(data.localStoreDir);
  const base = BigInt(data.index) << 32n;
  const calls: Promise<void>[] = [];
  for (let i = 0; i < data.count; i++) {
    const id = base + BigInt(i);
    calls.push(store.addMessage(message(id), [{ clientId: `w${data.index}`, seq: BigInt(i), qos: 1, retain: false, subscriptionIds: [i] }]));
  }
  await Promise.all(calls);
  const deliveries = (await store.loadDeliveries(`w${data.index}`)).length;
  parentPort!.postMessage({ deliveries });
  await store.close();
}

if (CHILD) await crashChild(CHILD);
else if (!isMainThread && workerData?.localStoreDir) await workerMain(workerData);
else registerTests();

function registerTests(): void {

  storeSuite('LOCAL', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    return { store, reopen: () => openStore(dir), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  });

  test('LOCAL: every acknowledged write survives SIGKILL of the writing process', { timeout: 120_000 }, async () => {
    const dir = tempDir();
    try {
      let acked = -1;
      for (let round = 0; round < 3; round++) {
        const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
          env: { ...process.env, SPINDLE_LOCAL_CRASH_CHILD: dir },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        const target = acked + 200;
        const lines = createInterface({ input: child.stdout! });
        for await (const line of lines) {
          const m = /^ACK (\d+)$/.exec(line);
          if (m) acked = Math.max(acked, Number(m[1]));
          if (acked >= target) break;
        }
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        assert.ok(acked >= target, `child stopped early at ${acked}`);

        const store = await openStore(dir);
        const got = await store.loadDeliveries('crash');
        const ids = new Set(got.map((d) => d.messageId));
        for (let i = 0; i <= acked; i++) assert.ok(ids.has(BigInt(i)), `round ${round}: acknowledged message ${i} lost (${ids.size} present)`);
        const sample = got.find((d) => d.messageId === BigInt(acked))!;
        assert.ok(sample.message.payload.equals(message(BigInt(acked)).payload));
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('LOCAL: stores of one file share one native store; the last close closes it', async () => {
    const dir = tempDir();
    try {
      const a = await openStore(dir);
      const b = await openStore(dir);
      await a.saveSession({ clientId: 'x', expiryInterval: 10, disconnectedAt: null, username: null, will: null });
      assert.equal((await b.loadSessions()).length, 1);
      await a.close();
      assert.equal((await b.stats()).sessions, 1, 'b still works after a closed');
      await assert.rejects(a.stats(), (err: unknown) => err instanceof StoreError && err.code === 'STORE_CLOSED');
      await b.close();
      await b.close();
      const c = await openStore(dir);
      assert.equal((await c.stats()).sessions, 1);
      await c.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('LOCAL: out-of-range ids reject with STORE_INVALID; the calls around them are unaffected', async () => {
    const dir = tempDir();
    try {
      const store = await openStore(dir);
      const d = (seq: bigint) => [{ clientId: 'a', seq, qos: 1 as const, retain: false, subscriptionIds: [] }];
      const invalid = (err: unknown) => err instanceof StoreError && err.code === 'STORE_INVALID';
      const calls = [
        store.addMessage(message(1n), d(1n)),
        assert.rejects(store.addMessage(message(2n ** 63n), d(2n)), invalid),
        assert.rejects(store.addMessage(message(-1n), d(3n)), invalid),
        assert.rejects(store.addMessage(message(4n), d(-4n)), invalid),
        assert.rejects(store.updateDelivery('a', 1n, 'inflight', 65_536), invalid),
        store.addMessage(message(5n), d(5n)),
      ];
      await Promise.all(calls);
      assert.deepEqual(await store.stats(), { sessions: 0, messages: 2, deliveries: 2, retained: 0 });
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('LOCAL: worker threads share one native store and each gets its own results', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    try {
      const main = await openStore(dir);
      const WORKERS = 4;
      const COUNT = 2000;
      const workers = Array.from({ length: WORKERS }, (_, index) => spawnWorker(new URL(import.meta.url), { localStoreDir: dir, index, count: COUNT }));
      const exited = workers.map((w) => once(w, 'exit'));
      const results = await Promise.all(workers.map(async (w) => (await once(w, 'message'))[0] as { deliveries: number }));
      await Promise.all(exited);
      assert.deepEqual(results.map((r) => r.deliveries), Array(WORKERS).fill(COUNT));
      assert.deepEqual(await main.stats(), { sessions: 0, messages: WORKERS * COUNT, deliveries: WORKERS * COUNT, retained: 0 });
      await main.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
