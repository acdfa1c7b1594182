// The CONNECT rate of built-in clients (issue 27: "CONNECT rate within 10 %"), with and without
// the verified-credentials cache (auth.clientDbCache), against no authentication (the ceiling).
// Two Spindle processes, each with CLIENTDB_USERS built-in clients (argon2id hashes, the library's
// default cost; one hash shared to keep the setup short) and 100 roles of 5 rules, one role per
// client: `cached` (the default) and `uncached` (auth.clientDbCache false: every CONNECT verifies
// argon2). Rounds interleave: no auth (anonymous, on `cached`), uncached, cached warm (after a
// pass over every user had no miss). A refusal or an error stops the bench. Printed and written to
// bench/results/client-db.{json,md}.
// Needs make build and the load generator (cargo build --release -p spindle-loadgen; make
// bench-client-db does both). Settings: CLIENTDB_USERS (10000), CLIENTDB_ROUNDS (3),
// CLIENTDB_SECONDS (5), CLIENTDB_CONCURRENCY (64), LOADGEN (its path).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT, spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { hashPassword } from '../src/auth/password.ts';

const run = promisify(execFile);
const LOADGEN = process.env.LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');
const setting = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const USERS = setting('CLIENTDB_USERS', 10_000);
const ROUNDS = setting('CLIENTDB_ROUNDS', 3);
const SECONDS = setting('CLIENTDB_SECONDS', 5);
const CONCURRENCY = setting('CLIENTDB_CONCURRENCY', 64);
const PASSWORD = 'bench-client-db-password';
const TIMED = ['--concurrency', String(CONCURRENCY), '--warmup', '0.5', '--duration', String(SECONDS)];
const CREDENTIALS = ['--username', 'dev', '--users', String(USERS), '--password', PASSWORD];

async function loadgen(s: BenchSpindle, args: string[], what: string): Promise<{ rate: number; completed: number }> {
  const { stdout } = await run(LOADGEN, ['connrate', '--port', String(s.port), '--version', '5', '--sources', '16', ...args], { maxBuffer: 16 * 1024 * 1024 });
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.refused > 0 || r.errors > 0) throw new Error(`${what}: ${r.refused} refused, ${r.errors} errors: ${JSON.stringify(r.errorSamples)}`);
  return r;
}

async function cacheHits(s: BenchSpindle): Promise<number> {
  return (await counts(s)).hits;
}

/** Successful CONNECTs of built-in clients, and those answered from the cache. */
async function counts(s: BenchSpindle): Promise<{ ok: number; hits: number }> {
  const text = await s.text('/prometheus');
  const ok = Number(/spindle_client_db_auth_total\{result="success"\} (\d+)/.exec(text)?.[1] ?? NaN);
  const hits = Number(/spindle_client_db_auth_cache_hits_total (\d+)/.exec(text)?.[1] ?? NaN);
  return { ok, hits };
}

async function fill(s: BenchSpindle, hash: string): Promise<void> {
  const roles = Array.from({ length: 100 }, (_, i) => ({
    name: `role-${i}`,
    rules: [
      { action: 'publish', permission: 'deny', topic: `bench/%u/secret/#` },
      { action: 'publish', permission: 'allow', topic: `bench/%u/#` },
      { action: 'subscribe', permission: 'deny', topic: `cmd/${i}/secret/#` },
      { action: 'subscribe', permission: 'allow', topic: `cmd/${i}/#` },
      { action: 'all', permission: 'allow', topic: 'fleet/%c/#' },
    ],
  }));
  const clients = Array.from({ length: USERS }, (_, i) => ({ username: `dev${i}`, passwordHash: hash, enabled: true, roles: [{ name: `role-${i % 100}` }] }));
  await s.api('/api/client-db/import', { mode: 'replace', data: { clients, roles } });
}

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  const hash = await hashPassword(PASSWORD);
  const env = { SPINDLE_ADMIN_MAX_BODY_SIZE: String(64 * 1024 * 1024), SPINDLE_LIMITS_AUTH_MAX_FAILURES: '0' };
  const cached = await startBenchSpindle('clientdb-cached', { env });
  const uncached = await startBenchSpindle('clientdb-uncached', { env: { ...env, SPINDLE_AUTH_CLIENT_DB_CACHE: 'false' } });
  const rates = { noauth: [] as number[], uncached: [] as number[], cached: [] as number[] };
  const warmups: number[] = [];
  try {
    const t0 = performance.now();
    await fill(cached, hash);
    await fill(uncached, hash);
    const importSeconds = (performance.now() - t0) / 2000;
    for (let round = 0; round < ROUNDS; round++) {
      rates.noauth.push((await loadgen(cached, TIMED, 'no auth')).rate);
      const before = await cacheHits(uncached);
      rates.uncached.push((await loadgen(uncached, [...TIMED, ...CREDENTIALS], 'uncached')).rate);
      if ((await cacheHits(uncached)) !== before) throw new Error('the uncached broker answered from its cache');
      // Each worker caches the users that connected to it: passes over every user until one has
      // no miss (a client lands on either worker), then timed.
      for (let pass = 0; ; pass++) {
        const a = await counts(cached);
        await loadgen(cached, ['--concurrency', String(CONCURRENCY), '--count', String(USERS), ...CREDENTIALS], 'warm-up');
        const b = await counts(cached);
        const misses = (b.ok - a.ok) - (b.hits - a.hits);
        if (misses === 0) {
          warmups.push(pass + 1);
          break;
        }
        if (pass === 30) throw new Error(`still ${misses} cache misses after ${pass + 1} warm-up passes`);
      }
      const hits = await cacheHits(cached);
      rates.cached.push((await loadgen(cached, [...TIMED, ...CREDENTIALS], 'cached')).rate);
      if (!((await cacheHits(cached)) > hits)) throw new Error('the cached run had no cache hit');
      console.error(`round ${round + 1}: no auth ${Math.round(rates.noauth.at(-1)!)}, uncached ${Math.round(rates.uncached.at(-1)!)}, cached ${Math.round(rates.cached.at(-1)!)} conn/s`);
    }
    const [noauth, off, on] = [median(rates.noauth), median(rates.uncached), median(rates.cached)];
    const rows: Row[] = [
      { case: 'connrate, no authentication (the ceiling)', measured: Math.round(noauth), unit: 'conn/s', ratio: '' },
      { case: `connrate, ${USERS} built-in clients, argon2id verified on every CONNECT (auth.clientDbCache false)`, measured: Math.round(off), unit: 'conn/s', ratio: Number((off / noauth).toFixed(3)) },
      { case: `connrate, ${USERS} built-in clients, verified-credentials cache warm (default)`, measured: Math.round(on), unit: 'conn/s', ratio: Number((on / noauth).toFixed(3)) },
    ];
    const notes = [
      `Target (CONNECT rate within 10 % of the same run without the database): cached ${(on / noauth * 100).toFixed(1)} % of no authentication: ${on / noauth >= 0.9 ? 'HOLDS' : 'DOES NOT HOLD'}; without the cache ${(off / noauth * 100).toFixed(1)} %.`,
      `ratio: to no authentication. Per round (${ROUNDS} interleaved): no auth ${rates.noauth.map(Math.round).join(', ')}; uncached ${rates.uncached.map(Math.round).join(', ')}; cached ${rates.cached.map(Math.round).join(', ')}.`,
      `Warm-up passes over every user before each cached run (until one had no cache miss: each worker keeps its own cache): ${warmups.join(', ')}. The first CONNECT of a client on a worker verifies argon2id, at the uncached rate.`,
      `Each broker: ${USERS} clients and 100 roles of 5 rules imported in ${importSeconds.toFixed(1)} s (POST /api/client-db/import, LOCAL store).`,
      `Spindle ${spindleCommit()}, default worker count; load generator MQTT 5.0, ${CONCURRENCY} handshakes at once, 16 source addresses, ${SECONDS} s after 0.5 s.`,
    ];
    printResults('Built-in client database: CONNECT rate', rows, notes);
    writeResults('client-db', 'Built-in client database: CONNECT rate', rows, notes);
  } finally {
    await cached.stop();
    await uncached.stop();
  }
}

await main();
