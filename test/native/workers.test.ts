// The addon loaded in many worker threads at once: all of them share one routing core, and
// concurrent subscribe/match/remove calls leave it consistent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';

import { Router } from '../../src/native/index.ts';
import { spawnWorker } from '../../src/threads/spawn.ts';

test('8 worker threads subscribe and match concurrently on one shared router', async () => {
  const name = `workers-${process.pid}`;
  const router = Router.open(name, { cacheCapacity: 256 });
  const WORKERS = 8;
  const SESSIONS = 500;
  const workers = Array.from({ length: WORKERS }, (_, index) =>
    spawnWorker(new URL('./router-worker.ts', import.meta.url), { name, index, sessions: SESSIONS, topics: 37 }));
  const results = await Promise.all(workers.map(async (w) => (await once(w, 'message'))[0] as { matched: number }));
  await Promise.all(workers.map((w) => w.terminate()));
  for (const r of results) assert.equal(r.matched, SESSIONS, 'each session saw its own subscription');
  // Each worker kept half of its sessions, two subscriptions each.
  assert.equal(router.subscriptionCount, WORKERS * (SESSIONS / 2) * 2);
  // The main thread sees the workers' subscriptions: one delivery per remaining session.
  const out = new Uint32Array(1 << 16);
  const n = Number(router.match('w/1/3', 0xffffffff, 0, out));
  const sessions = new Set<number>();
  for (let i = 0; i < n; i += 3 + out[i + 2]) sessions.add(out[i]);
  // w/1/# : sessions with s%37==1 and odd s, in every worker; w/+/3 : all odd sessions of worker 3.
  let expected = 0;
  for (let index = 0; index < WORKERS; index++) {
    for (let s = 1; s < SESSIONS; s += 2) if (s % 37 === 1 || index === 3) expected++;
  }
  assert.equal(sessions.size, expected);
  Router.close(name);
});
