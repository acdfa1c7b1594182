// The speed target of the operator's tools (issue 27): "a run in which 10,000 bans, 10,000
// built-in clients with 5 ACL rules each, and per-client rate limits set well above the offered
// load are all active. Targets: fan-in and fan-out throughput within 5 % of the same run without
// them; CONNECT rate within 10 %."
//
// Two Spindle processes side by side, the same load against each, rounds interleaved (which goes
// first alternates) and the medians compared:
//  - plain: anonymous access, no ban, no built-in client, no rate limit;
//  - guarded: anonymous clients refused; OPERATOR_BANS bans (client ids, usernames, addresses and
//    CIDR blocks, none matching the load's clients); OPERATOR_CLIENTS built-in clients dev0 ..
//    dev<N-1> (one argon2id hash shared to keep the setup short), each with a role of 5 rules
//    (100 roles) that grants the load's topics and denies others (no deny intersects the load's
//    subscriptions, so no delivery is checked per message); and a rate limit on its MQTT endpoint,
//    per client, far above what one load client offers.
// The load's clients sign in as dev<i> on both (the plain broker takes the username as identity).
// Cases: fan-in QoS 1 (10 publishers, 1 subscriber), fan-out QoS 0 (1 publisher, 100 subscribers),
// and the CONNECT rate with the verified-credentials cache warm (each worker keeps its own; warm-up
// passes over every user until one has no miss). A refusal, an error, a loss, a throttled client,
// an ACL denial or a ban refusal during a run stops the bench: no number is taken from it.
// Printed and written to bench/results/operator.{json,md}.
// Needs make build and the load generator (make bench-operator does both). Settings:
// OPERATOR_ROUNDS (5), OPERATOR_BANS (10000), OPERATOR_CLIENTS (10000), OPERATOR_SECONDS (5),
// OPERATOR_CONCURRENCY (64); `--spindle-root DIR` measures another checkout's Spindle.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT, processCpuSeconds, setSpindleRoot, spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { hashPassword } from '../src/auth/password.ts';
import { positiveSetting } from './lib/fanin-run.ts';

const run = promisify(execFile);
const LOADGEN = process.env.LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');
const setting = positiveSetting;
const ROUNDS = setting('OPERATOR_ROUNDS', 5);
const BANS = setting('OPERATOR_BANS', 10_000);
const CLIENTS = setting('OPERATOR_CLIENTS', 10_000);
const SECONDS = setting('OPERATOR_SECONDS', 5);
const CONCURRENCY = setting('OPERATOR_CONCURRENCY', 64);
/** OPERATOR_PARTS: which guards the guarded broker has (bans, clients, limits; default all), to
 * find which one costs what. OPERATOR_CASES: which cases run (fanin, fanout, connrate). */
const PARTS = new Set((process.env.OPERATOR_PARTS ?? 'bans,clients,limits').split(','));
const rootArg = process.argv.indexOf('--spindle-root');
const SPINDLE_ROOT = rootArg > 0 ? path.resolve(process.argv[rootArg + 1]) : ROOT;
setSpindleRoot(SPINDLE_ROOT);

const PASSWORD = 'bench-operator-password';
/** The load's topics: <prefix>/... (the load generator's --prefix). */
const PREFIX = 'op';
const CREDENTIALS = ['--username', 'dev', '--users', String(CLIENTS), '--password', PASSWORD];
/** Per client, far above what one load client offers (a fan-in publisher sends ~10-30k msgs/s). */
const RATE_LIMIT = { messagesPerSecond: 1_000_000, messagesBurst: 1_000_000, bytesPerSecond: 1_000_000_000, bytesBurst: 1_000_000_000 };

const CASES = {
  fanin: { label: 'fan-in QoS 1, 10 → 1', unit: 'msgs/s', target: 0.95, args: ['throughput', '--topology', 'fanin', '--pubs', '10', '--qos', '1', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', PREFIX] },
  fanout: { label: 'fan-out QoS 0, 1 → 100', unit: 'deliveries/s', target: 0.95, args: ['throughput', '--topology', 'fanout', '--subs', '100', '--qos', '0', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', PREFIX] },
  connrate: { label: 'CONNECT rate, cache warm', unit: 'conn/s', target: 0.9, args: ['connrate', '--concurrency', String(CONCURRENCY), '--warmup', '0.5', '--duration', String(SECONDS), '--prefix', PREFIX] },
} as const;
type Case = keyof typeof CASES;
const RUN_CASES = (process.env.OPERATOR_CASES ?? 'fanin,fanout,connrate').split(',').filter((c): c is Case => c in CASES);

interface Measured {
  rate: number;
  /** The broker's CPU over the whole load generator run, in cores. */
  cores: number;
}

/** Pinned (the default): each broker on one core with one worker (taskset on all its threads),
 * the load generator on the other, as the comparison bench's pinned mode; the spread between runs
 * is then a few per cent instead of 15-20 %. OPERATOR_PINNED=0: default workers, unpinned. */
const PINNED = process.env.OPERATOR_PINNED !== '0';
const BROKER_CORE = 0;
const LOADGEN_CORE = 1;

async function loadgen(s: BenchSpindle, args: readonly string[], what: string): Promise<Measured> {
  const cpu = processCpuSeconds(s.pid);
  const t0 = performance.now();
  const [command, ...pinned] = PINNED ? ['taskset', '-c', String(LOADGEN_CORE), LOADGEN] : [LOADGEN];
  const { stdout } = await run(command, [...pinned, ...args, '--port', String(s.port), '--version', '5', '--sources', '16', ...CREDENTIALS], { maxBuffer: 16 * 1024 * 1024 });
  const seconds = (performance.now() - t0) / 1000;
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.ok === false || r.refused > 0 || r.errors > 0 || r.loss > 0) {
    throw new Error(`${what}: the run failed: ${r.refused ?? 0} refused (0x${Number(r.refusedCode ?? 0).toString(16)}), ${r.errors} errors ${JSON.stringify(r.errorSamples)}, ${r.loss ?? 0} lost${r.failure ? ` (${r.failure})` : ''}`);
  }
  return { rate: r.rate, cores: (processCpuSeconds(s.pid) - cpu) / seconds };
}

// The broker's counters.

/** Sum of the samples of `name` (with `labels`); NaN when the broker has no such series. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = NaN;
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3]);
  }
  return sum;
}

interface Guards {
  bans: number;
  banRefusals: number;
  throttled: number;
  aclDenied: number;
  readDenied: number;
  authOk: number;
  cacheHits: number;
}

async function guards(s: BenchSpindle): Promise<Guards> {
  const t = await s.text('/prometheus');
  const zero = (v: number) => (Number.isNaN(v) ? 0 : v);
  return {
    bans: zero(metric(t, 'spindle_banned_entries')),
    banRefusals: zero(metric(t, 'spindle_banned_refused_total')),
    throttled: zero(metric(t, 'spindle_rate_limit_throttled_total')),
    aclDenied: zero(metric(t, 'spindle_acl_denials_total')),
    readDenied: zero(metric(t, 'spindle_messages_dropped_total', { reason: 'read_denied' })),
    authOk: zero(metric(t, 'spindle_client_db_auth_total', { result: 'success' })),
    cacheHits: zero(metric(t, 'spindle_client_db_auth_cache_hits_total')),
  };
}

/** Throws when something refused, throttled or denied during a guarded run. */
function checkQuiet(what: string, before: Guards, after: Guards): void {
  const grew = (['banRefusals', 'throttled', 'aclDenied', 'readDenied'] as const).filter((k) => after[k] !== before[k]);
  if (grew.length > 0) throw new Error(`${what}: ${grew.map((k) => `${k} +${after[k] - before[k]}`).join(', ')}: the guards were not above the load`);
}

// The guarded broker's contents.

async function addBans(s: BenchSpindle): Promise<void> {
  const bans: { as: string; who: string; reason: string }[] = [];
  for (let i = 0; bans.length < BANS; i++) {
    const j = i >> 2; // each kind's own count: the addresses and blocks below are distinct for j < 2^22
    const kind = i % 4;
    if (kind === 0) bans.push({ as: 'clientid', who: `banned-client-${j}`, reason: 'bench' });
    else if (kind === 1) bans.push({ as: 'username', who: `banned-user-${j}`, reason: 'bench' });
    else if (kind === 2) bans.push({ as: 'peerhost', who: `10.${(j >> 16) & 255}.${(j >> 8) & 255}.${j & 255}`, reason: 'bench' });
    else bans.push({ as: 'peerhost_net', who: `${64 + ((j >> 16) & 63)}.${(j >> 8) & 255}.${j & 255}.0/24`, reason: 'bench' });
  }
  for (let from = 0; from < bans.length; from += 10_000) await s.api('/api/banned/bulk', { bans: bans.slice(from, from + 10_000) });
  const g = await guards(s);
  if (g.bans !== BANS) throw new Error(`the guarded broker holds ${g.bans} bans, not ${BANS}`);
}

async function addClients(s: BenchSpindle, hash: string): Promise<void> {
  const roles = Array.from({ length: 100 }, (_, i) => ({
    name: `role-${i}`,
    rules: [
      { action: 'publish', permission: 'deny', topic: `private/%u/#` },
      { action: 'subscribe', permission: 'deny', topic: `cmd/${i}/secret/#` },
      { action: 'subscribe', permission: 'allow', topic: `cmd/${i}/#` },
      { action: 'all', permission: 'allow', topic: `fleet/%c/#` },
      { action: 'all', permission: 'allow', topic: `${PREFIX}/#` },
    ],
  }));
  const clients = Array.from({ length: CLIENTS }, (_, i) => ({ username: `dev${i}`, passwordHash: hash, enabled: true, roles: [{ name: `role-${i % 100}` }] }));
  await s.api('/api/client-db/import', { mode: 'replace', data: { clients, roles } });
}

// The bench.

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  const hash = await hashPassword(PASSWORD);
  const common = { SPINDLE_ADMIN_MAX_BODY_SIZE: String(64 * 1024 * 1024), SPINDLE_LIMITS_AUTH_MAX_FAILURES: '0' };
  if (PINNED) Object.assign(common, { SPINDLE_WORKERS: '1' });
  // The CONNECT rate runs on a pair of its own: hundreds of thousands of connections leave a
  // broker's memory larger for a while (each its own client id), which would slow the throughput
  // runs that follow on the same broker.
  const start = async (name: string, guard: boolean) => {
    const env = guard ? { ...common, ...(PARTS.has('clients') ? { SPINDLE_AUTH_ALLOW_ANONYMOUS: 'false' } : {}), ...(PARTS.has('limits') ? rateLimitEnv() : {}) } : common;
    const s = await startBenchSpindle(`operator-${name}`, { env, root: SPINDLE_ROOT });
    brokers.push(s);
    if (PINNED) await run('taskset', ['-a', '-cp', String(BROKER_CORE), String(s.pid)]);
    if (guard) {
      if (PARTS.has('bans')) await addBans(s);
      if (PARTS.has('clients')) await addClients(s, hash);
      if (PARTS.has('clients')) await refusesAnonymous(s);
      if (PARTS.has('limits')) await rateLimited(s);
    }
    return s;
  };
  const brokers: BenchSpindle[] = [];
  const rates = Object.fromEntries(Object.keys(CASES).flatMap((c) => [[`${c}-plain`, [] as number[]], [`${c}-guarded`, [] as number[]]])) as Record<string, number[]>;
  const cores: Record<string, number[]> = {};
  const warmups: number[] = [];
  try {
    const t0 = performance.now();
    const throughput = RUN_CASES.some((c) => c !== 'connrate') ? { plain: await start('plain', false), guarded: await start('guarded', true) } : null;
    const connrate = RUN_CASES.includes('connrate') ? { plain: await start('plain-connect', false), guarded: await start('guarded-connect', true) } : null;
    const setupSeconds = (performance.now() - t0) / 1000;

    const measure = async (c: Case, s: BenchSpindle, which: 'plain' | 'guarded', round: number) => {
      const before = await guards(s);
      const m = await loadgen(s, CASES[c].args, `round ${round + 1} ${c} ${which}`);
      if (which === 'guarded') checkQuiet(`round ${round + 1} ${c}`, before, await guards(s));
      rates[`${c}-${which}`].push(m.rate);
      (cores[`${c}-${which}`] ??= []).push(m.cores);
      console.error(`round ${round + 1}/${ROUNDS} ${c} ${which}: ${Math.round(m.rate)} ${CASES[c].unit} (broker ${m.cores.toFixed(2)} cores)`);
    };
    if (connrate !== null && PARTS.has('clients')) warmups.push(await warmCache(connrate.guarded));
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of RUN_CASES) {
        const pair = c === 'connrate' ? connrate! : throughput!;
        const order: ['plain' | 'guarded', BenchSpindle][] = round % 2 === 0 ? [['plain', pair.plain], ['guarded', pair.guarded]] : [['guarded', pair.guarded], ['plain', pair.plain]];
        for (const [which, s] of order) await measure(c, s, which, round);
      }
    }
    const rows: Row[] = [];
    const verdicts: string[] = [];
    for (const c of RUN_CASES) {
      const p = median(rates[`${c}-plain`]);
      const g = median(rates[`${c}-guarded`]);
      const ratio = g / p;
      rows.push({ case: `${CASES[c].label}: plain`, measured: Math.round(p), unit: CASES[c].unit, 'broker cores': median(cores[`${c}-plain`]).toFixed(2), ratio: '' });
      rows.push({ case: `${CASES[c].label}: bans, built-in clients, rate limits`, measured: Math.round(g), unit: CASES[c].unit, 'broker cores': median(cores[`${c}-guarded`]).toFixed(2), ratio: Number(ratio.toFixed(3)) });
      verdicts.push(`${CASES[c].label}: ${(ratio * 100).toFixed(1)} % of plain (target at least ${CASES[c].target * 100} %): ${ratio >= CASES[c].target ? 'HOLDS' : 'DOES NOT HOLD'}.`);
    }
    const notes = [
      ...verdicts,
      `Per round (${ROUNDS}, interleaved, which broker goes first alternating): ${Object.entries(rates).map(([k, v]) => `${k} ${v.map(Math.round).join(', ')}`).join('; ')}.`,
      `Guarded broker: ${BANS} bans (client ids, usernames, IPv4 addresses, /24 blocks; none matching the load), ${CLIENTS} built-in clients with a role of 5 rules each (100 roles), anonymous refused, a per-client rate limit of ${RATE_LIMIT.messagesPerSecond} msgs/s and ${RATE_LIMIT.bytesPerSecond} B/s on its endpoint; set up (both guarded brokers, one for the throughput runs, one for the CONNECT rate) in ${setupSeconds.toFixed(1)} s through the admin API. No ban refused, no client was throttled and no ACL denial happened during a measured run (checked from its metrics).`,
      `CONNECT rate: the guarded broker with the verified-credentials cache warm (warm-up passes over every user: ${warmups.join(', ')}); a client's first CONNECT on a worker verifies argon2id (bench/client-db.ts measures that rate).`,
      `Spindle ${spindleCommit()}, ${PINNED ? `pinned: each broker on core ${BROKER_CORE} with one worker, the load generator on core ${LOADGEN_CORE}` : 'default worker count, unpinned'}; load generator MQTT 5.0, 16 source addresses, ${SECONDS} s per run.`,
    ];
    printResults('Operator tools: bans, built-in clients and rate limits on the hot path', rows, notes);
    if (PARTS.size === 3 && RUN_CASES.length === 3) writeResults('operator', 'Operator tools: bans, built-in clients and rate limits on the hot path', rows, notes, { rates, cores });
  } finally {
    for (const s of brokers) await s.stop();
  }
}

/** An anonymous client must be refused, or the guarded numbers would not be checked sign-ins. */
async function refusesAnonymous(s: BenchSpindle): Promise<void> {
  const { stdout } = await run(LOADGEN, ['connrate', '--port', String(s.port), '--version', '5', '--count', '1']);
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.refused !== 1) throw new Error(`the guarded broker did not refuse an anonymous client: ${JSON.stringify(r)}`);
}

/** The guarded endpoint must carry the rate limit (else the guarded numbers would not pay for it). */
async function rateLimited(s: BenchSpindle): Promise<void> {
  const { data } = await s.api('/api/rate-limits', undefined, 'GET');
  const limited = (data?.endpoints ?? []).filter((e: { rateLimit?: { messagesPerSecond?: number } }) => e.rateLimit?.messagesPerSecond === RATE_LIMIT.messagesPerSecond);
  if (limited.length === 0) throw new Error(`no endpoint of the guarded broker carries the rate limit: ${JSON.stringify(data).slice(0, 500)}`);
}

/** Passes over every built-in client until one had no cache miss (each worker keeps its own). */
async function warmCache(s: BenchSpindle): Promise<number> {
  for (let pass = 1; pass <= 30; pass++) {
    const a = await guards(s);
    await loadgen(s, ['connrate', '--concurrency', String(CONCURRENCY), '--count', String(CLIENTS), '--prefix', PREFIX], 'warm-up');
    const b = await guards(s);
    if (b.authOk - a.authOk === b.cacheHits - a.cacheHits) return pass;
  }
  throw new Error('still cache misses after 30 warm-up passes');
}

/** The guarded endpoint's per-client rate limit, as configuration (mqtt.rateLimit.*). */
function rateLimitEnv(): NodeJS.ProcessEnv {
  return {
    SPINDLE_MQTT_RATE_LIMIT_MESSAGES_PER_SECOND: String(RATE_LIMIT.messagesPerSecond),
    SPINDLE_MQTT_RATE_LIMIT_MESSAGES_BURST: String(RATE_LIMIT.messagesBurst),
    SPINDLE_MQTT_RATE_LIMIT_BYTES_PER_SECOND: String(RATE_LIMIT.bytesPerSecond),
    SPINDLE_MQTT_RATE_LIMIT_BYTES_BURST: String(RATE_LIMIT.bytesBurst),
  };
}

await main();
