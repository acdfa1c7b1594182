// The speed target of authentication and ACL policies (issue 13): "connections per second with a
// postgresql auth policy (bcrypt, cache cold and warm) and with an ACL policy on every PUBLISH
// (cache warm), against the same with static users; target: warm cache within 10 % of static
// users". Driven by bench/loadgen; printed and written to bench/results/policies.{json,md}:
//  1. connrate with no authentication (allowAnonymous, no users): the ceiling;
//  2. connrate with one static user (auth.users, a bcrypt hash of cost 10) that every client uses;
//  3. connrate with a postgresql auth policy over POLICIES_USERS users, each with its own bcrypt
//     hash (cost 10), answer cache cold: one pass where every user connects once, each a miss
//     (a query and a bcrypt verify);
//  4. the same, cache warm: warm-up passes until three in a row had no miss (each worker caches
//     its own answers, and a client lands on either), then a timed run over the same users;
//  5. fan-in QoS 1 with a postgresql ACL policy on every PUBLISH (the per-connection cache warm
//     after each publisher's first message) against the same broker with no ACL policy.
// Three brokers run side by side (no auth; static users; policies with anonymous refused), so each
// round runs every case once; rounds are interleaved and the medians compared. A refusal, error,
// loss, a policy API error or a cache count that says the run was not what it claims stops the
// bench: no number is taken from such a run.
// Needs make build, cargo build --release -p spindle-loadgen and scripts/ensure-databases.sh
// (make bench-policies does all of it). Settings: POLICIES_ROUNDS (5), POLICIES_USERS (2000),
// POLICIES_CONNRATE_SECONDS (5), POLICIES_FANIN_SECONDS (8), POLICIES_CONCURRENCY (64);
// `--only noauth,static,policy,acl` runs some of the parts and prints them (no file written);
// `--spindle-root DIR` measures the Spindle of another checkout (this tree's load generator).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import postgres from 'postgres';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT, processCpuSeconds, setSpindleRoot, spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { hashWithStrategy, type StrategyOptions } from '../src/auth/strategies/password-strategy.ts';
import { PG_URL, uniqueName } from '../test/store/databases.ts';

const run = promisify(execFile);
const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = setting('POLICIES_ROUNDS', 5);
const USERS = setting('POLICIES_USERS', 2000);
const CONNRATE_SECONDS = setting('POLICIES_CONNRATE_SECONDS', 5);
const FANIN_SECONDS = setting('POLICIES_FANIN_SECONDS', 8);
const CONCURRENCY = setting('POLICIES_CONCURRENCY', 64);
/** Warm-up passes over every user end after this many in a row without a cache miss. With 2
 * workers a client lands on either, so a user a worker lacks is missed by a pass half the time:
 * one clean pass still leaves a few behind at 2000 users, three leave them unlikely (a miss in the
 * warm run costs a bcrypt verify, hundreds of cached answers' worth; its hit ratio is reported). */
const CLEAN_WARMUP_PASSES = 3;
const MAX_WARMUP_PASSES = 40;
const BCRYPT: StrategyOptions = { strategy: 'bcrypt', saltType: 'disable', bcryptCost: 10 };
/** Every bench user's password (each user's hash has its own salt). */
const PASSWORD = 'bench-policies-password';
const STATIC_USER = 'bench';
/** Policy users are dev0 .. dev<USERS-1>: the load generator's --username dev --users USERS. */
const USER_PREFIX = 'dev';
/** Fan-in topics are pa/in/<i> (the load generator's --prefix); the ACL rows allow pa/#. */
const TOPIC_PREFIX = 'pa';
const MQTT_VERSION = '5';
/** Source addresses the load generator rotates over (ephemeral ports for the connection rates). */
const SOURCES = '16';

const PARTS = ['noauth', 'static', 'policy', 'acl'] as const;
type Part = (typeof PARTS)[number];
const onlyArg = process.argv.indexOf('--only');
const ONLY = new Set<Part>(onlyArg > 0 ? process.argv[onlyArg + 1].split(',').map(partName) : PARTS);
const rootArg = process.argv.indexOf('--spindle-root');
const SPINDLE_ROOT = rootArg > 0 ? path.resolve(process.argv[rootArg + 1]) : ROOT;
setSpindleRoot(SPINDLE_ROOT);

function setting(name: string, fallback: number): number {
  const v = Number(process.env[name] ?? fallback);
  if (!(v > 0)) throw new Error(`${name}: a positive number, not ${process.env[name]}`);
  return v;
}

function partName(p: string): Part {
  if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: ${p} is not one of ${PARTS.join(', ')}`);
  return p as Part;
}

// The load generator.

const NO_CREDENTIALS: string[] = [];
const STATIC_CREDENTIALS = ['--username', STATIC_USER, '--password', PASSWORD];
const POLICY_CREDENTIALS = ['--username', USER_PREFIX, '--users', String(USERS), '--password', PASSWORD];
const TIMED = ['--concurrency', String(CONCURRENCY), '--warmup', '0.5', '--duration', String(CONNRATE_SECONDS)];
/** Connection i signs in as user i % USERS: one pass of USERS connections is every user once. */
const ONE_PASS = ['--concurrency', String(CONCURRENCY), '--count', String(USERS)];
const FANIN = ['--topology', 'fanin', '--pubs', '10', '--qos', '1', '--window', '4096', '--warmup', '2', '--duration', String(FANIN_SECONDS), '--prefix', TOPIC_PREFIX];

interface Measured {
  /** The load generator's JSON result. */
  result: any;
  /** The broker's CPU over the load generator's whole run (setup included), in cores. */
  brokerCores: number;
}

async function loadgen(s: BenchSpindle, scenario: string, args: string[]): Promise<Measured> {
  const cpu = processCpuSeconds(s.pid);
  const t0 = performance.now();
  const { stdout } = await run(LOADGEN, [scenario, '--port', String(s.port), '--version', MQTT_VERSION, '--sources', SOURCES, ...args], { maxBuffer: 16 * 1024 * 1024 });
  const seconds = (performance.now() - t0) / 1000;
  return { result: JSON.parse(stdout.trim().split('\n').at(-1)!), brokerCores: (processCpuSeconds(s.pid) - cpu) / seconds };
}

/** Throws unless the run had no refusal, error or loss. */
function clean(what: string, m: Measured): Measured {
  const r = m.result;
  if (r.ok === true) return m;
  const refused = r.refused > 0 ? `; ${r.refused} CONNACKs refused, the first with code 0x${Number(r.refusedCode).toString(16)}` : '';
  const lost = r.loss > 0 || r.unacked > 0 ? `; ${r.loss} messages lost, ${r.unacked} unacknowledged` : '';
  throw new Error(`${what}: the run failed${refused}${lost}; ${r.errors} errors, e.g. ${JSON.stringify(r.errorSamples)}${r.failure ? ` (${r.failure})` : ''}`);
}

// The broker's counters.

/** Sum of the samples of `name` carrying `labels`; throws when the broker has no such metric. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let known = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line === `# TYPE ${name} counter`) known = true;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    known = true;
    const have = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) sum += Number(m[3]);
  }
  if (!known) throw new Error(`/prometheus has no ${name}`);
  return sum;
}

interface PolicyCounts {
  authHit: number;
  authMiss: number;
  authAllow: number;
  aclHit: number;
  aclMiss: number;
  aclAllow: number;
  aclDenials: number;
}

async function policyCounts(s: BenchSpindle): Promise<PolicyCounts> {
  const t = await s.text('/prometheus');
  const cache = (kind: string, result: string) => metric(t, 'spindle_policy_cache_total', { kind, result });
  const answers = (kind: string) => metric(t, 'spindle_policy_answers_total', { kind, result: 'allow' });
  return {
    authHit: cache('auth', 'hit'),
    authMiss: cache('auth', 'miss'),
    authAllow: answers('auth'),
    aclHit: cache('acl', 'hit'),
    aclMiss: cache('acl', 'miss'),
    aclAllow: answers('acl'),
    aclDenials: metric(t, 'spindle_acl_denials_total'),
  };
}

/** The counts `fn` adds up on `s`, with what it returns. */
async function counting<T>(s: BenchSpindle, fn: () => Promise<T>): Promise<[T, PolicyCounts]> {
  const before = await policyCounts(s);
  const value = await fn();
  const after = await policyCounts(s);
  const d = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof PolicyCounts]])) as unknown as PolicyCounts;
  return [value, d];
}

// The policies: users and ACL rows in PostgreSQL, policies through the admin API.

/** The policies' own data source: PG_URL without credentials, and the credentials apart. */
function datasource(): { url: string; username: string; password: string } {
  const u = new URL(PG_URL);
  const username = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return { url: u.toString(), username, password };
}

async function createUsers(sql: postgres.Sql, table: string): Promise<number> {
  const t0 = performance.now();
  await sql.unsafe(`CREATE TABLE ${table} (username text PRIMARY KEY, password_hash text NOT NULL, salt text, is_superuser boolean NOT NULL DEFAULT false)`);
  const batch = 200;
  for (let from = 0; from < USERS; from += batch) {
    const names = Array.from({ length: Math.min(batch, USERS - from) }, (_, k) => `${USER_PREFIX}${from + k}`);
    const rows = await Promise.all(names.map(async (username) => ({ username, password_hash: await hashWithStrategy(BCRYPT, PASSWORD) })));
    await sql`INSERT INTO ${sql(table)} ${sql(rows, 'username', 'password_hash')}`;
  }
  return (performance.now() - t0) / 1000;
}

async function createAclRows(sql: postgres.Sql, table: string): Promise<void> {
  await sql.unsafe(`CREATE TABLE ${table} (username text NOT NULL, permission text NOT NULL, action text NOT NULL, topic text NOT NULL)`);
  await sql.unsafe(`CREATE INDEX ON ${table} (username)`);
  const rows = Array.from({ length: USERS }, (_, i) => ({ username: `${USER_PREFIX}${i}`, permission: 'allow', action: 'all', topic: `${TOPIC_PREFIX}/#` }));
  for (let from = 0; from < rows.length; from += 1000) await sql`INSERT INTO ${sql(table)} ${sql(rows.slice(from, from + 1000))}`;
}

async function policyId(s: BenchSpindle, kind: 'auth' | 'acl', name: string): Promise<string> {
  const answer = await s.api(`/${kind}/query`, {});
  const found = Array.isArray(answer?.data) ? answer.data.find((p: { name?: string }) => p.name === name) : undefined;
  if (typeof found?.id !== 'string') throw new Error(`/${kind}/query: no policy named ${name} in ${JSON.stringify(answer).slice(0, 500)}`);
  return found.id;
}

async function addAuthPolicy(s: BenchSpindle, name: string, table: string): Promise<string> {
  const config = {
    datasource: datasource(),
    sql: `SELECT password_hash, salt, is_superuser FROM ${table} WHERE username = \${username} LIMIT 1`,
    passwordHash: { strategy: 'bcrypt' },
  };
  const answer = await s.api('/auth/add', { name, type: 'database', config });
  if (answer !== 'success') throw new Error(`/auth/add ${name}: answered ${JSON.stringify(answer)}, not "success"`);
  return policyId(s, 'auth', name);
}

async function addAclPolicy(s: BenchSpindle, name: string, table: string): Promise<string> {
  const config = { datasource: datasource(), sql: `SELECT permission, action, topic FROM ${table} WHERE username = \${username}` };
  const answer = await s.api('/acl/add', { name, type: 'database', config });
  if (answer?.code !== 200 || typeof answer?.data?.id !== 'string') throw new Error(`/acl/add ${name}: answered ${JSON.stringify(answer)}`);
  return answer.data.id;
}

/** A new auth policy in place of `old`: a policy change empties every worker's answer cache.
 * The new one is added before the old one goes, so the chain is never empty (a worker told late
 * still asks a policy, never the static users). */
async function freshAuthPolicy(s: BenchSpindle, table: string, old: string | undefined, name: string): Promise<string> {
  const id = await addAuthPolicy(s, name, table);
  if (old !== undefined) await s.api('/auth/delete', { id: old });
  return id;
}

// The bench.

interface Series {
  rates: number[];
  /** The broker's CPU, in cores. */
  cores: number[];
  /** The load generator's CPU over its measured window, as a fraction of its one core. */
  generator: number[];
}
const series = (): Series => ({ rates: [], cores: [], generator: [] });
const CASES = ['noauth', 'static', 'cold', 'warm', 'fanin', 'faninAcl'] as const;
const results = Object.fromEntries(CASES.map((c) => [c, series()])) as Record<(typeof CASES)[number], Series>;
const warmupPasses: number[] = [];
const warmHitRatios: number[] = [];
const aclCounts: string[] = [];
const notes: string[] = [];

function record(round: number, c: (typeof CASES)[number], m: Measured, unit: string, extra = ''): void {
  results[c].rates.push(m.result.rate);
  results[c].cores.push(m.brokerCores);
  results[c].generator.push(m.result.cpu?.fraction ?? NaN);
  console.error(`round ${round + 1}/${ROUNDS} ${c}: ${Math.round(m.result.rate)} ${unit} (broker ${m.brokerCores.toFixed(2)} cores)${extra}`);
}

/** An anonymous client must be refused, or the static-user numbers would not be checked passwords. */
async function refusesAnonymous(s: BenchSpindle, what: string): Promise<void> {
  const { result } = await loadgen(s, 'connrate', ['--count', '1']);
  if (result.refused !== 1) throw new Error(`${what}: an anonymous client was not refused: ${JSON.stringify(result)}`);
}

async function connratePolicy(s: BenchSpindle, round: number, authId: string | undefined, usersTable: string): Promise<string> {
  // 3. Cold: a new policy (every cache empty), then every user once.
  authId = await freshAuthPolicy(s, usersTable, authId, `bench-auth-${round}`);
  const [cold, c] = await counting(s, async () => clean(`round ${round + 1} cold pass`, await loadgen(s, 'connrate', [...ONE_PASS, ...POLICY_CREDENTIALS])));
  if (cold.result.completed !== USERS) throw new Error(`round ${round + 1} cold pass: ${cold.result.completed} of ${USERS} connections completed`);
  if (c.authMiss !== USERS || c.authHit !== 0) throw new Error(`round ${round + 1}: the cold pass was not cold: ${c.authMiss} cache misses and ${c.authHit} hits for ${USERS} connections`);
  if (c.authAllow !== USERS) throw new Error(`round ${round + 1}: the auth policy allowed ${c.authAllow} of the cold pass's ${USERS} connections`);
  record(round, 'cold', cold, 'conn/s', ` (${USERS} users, each a miss)`);

  // 4. Warm: passes until every worker has every user, then a timed run.
  let passes = 0;
  let cleanInRow = 0;
  while (cleanInRow < CLEAN_WARMUP_PASSES && passes < MAX_WARMUP_PASSES) {
    const [, w] = await counting(s, async () => clean(`round ${round + 1} warm-up pass`, await loadgen(s, 'connrate', [...ONE_PASS, ...POLICY_CREDENTIALS])));
    cleanInRow = w.authMiss === 0 ? cleanInRow + 1 : 0;
    passes++;
  }
  warmupPasses.push(passes);
  const [warm, w] = await counting(s, async () => clean(`round ${round + 1} warm`, await loadgen(s, 'connrate', [...TIMED, ...POLICY_CREDENTIALS])));
  const hitRatio = w.authHit / (w.authHit + w.authMiss);
  if (!(w.authHit > 0)) throw new Error(`round ${round + 1}: the warm run had no cache hit (${w.authMiss} misses)`);
  warmHitRatios.push(hitRatio);
  record(round, 'warm', warm, 'conn/s', ` (hit ratio ${hitRatio.toFixed(4)} after ${passes} warm-up passes)`);
  return authId;
}

async function faninAcl(s: BenchSpindle, round: number, aclTable: string): Promise<void> {
  const withoutAcl = async () => {
    const m = clean(`round ${round + 1} fan-in, no ACL policy`, await loadgen(s, 'throughput', [...FANIN, ...POLICY_CREDENTIALS]));
    record(round, 'fanin', m, 'msgs/s');
  };
  const withAcl = async () => {
    const id = await addAclPolicy(s, `bench-acl-${round}`, aclTable);
    const [m, d] = await counting(s, async () => clean(`round ${round + 1} fan-in with the ACL policy`, await loadgen(s, 'throughput', [...FANIN, ...POLICY_CREDENTIALS])));
    await s.api('/acl/delete', { id });
    if (d.aclMiss === 0 || d.aclHit === 0 || d.aclAllow === 0) throw new Error(`round ${round + 1}: the ACL policy was not consulted (cache ${d.aclHit} hits, ${d.aclMiss} misses; the policy allowed ${d.aclAllow})`);
    if (d.aclDenials !== 0) throw new Error(`round ${round + 1}: ${d.aclDenials} PUBLISH or SUBSCRIBE denied by the ACL`);
    aclCounts.push(`${d.aclHit} hits / ${d.aclMiss} misses`);
    record(round, 'faninAcl', m, 'msgs/s', ` (ACL cache ${d.aclHit} hits, ${d.aclMiss} misses)`);
  };
  // Alternating which goes first spreads drift over both.
  for (const step of round % 2 === 0 ? [withoutAcl, withAcl] : [withAcl, withoutAcl]) await step();
}

const brokers: BenchSpindle[] = [];
const started = async (name: string, env: NodeJS.ProcessEnv = {}) => {
  const s = await startBenchSpindle(name, { env, root: SPINDLE_ROOT });
  brokers.push(s);
  return s;
};
const want = (...parts: Part[]) => parts.some((p) => ONLY.has(p));
let sql: postgres.Sql | undefined;
const tables: string[] = [];
try {
  const staticHash = await hashWithStrategy(BCRYPT, PASSWORD);
  const noauth = want('noauth') ? await started('policies-noauth') : undefined;
  const statics = want('static')
    ? await started('policies-static', { SPINDLE_AUTH_ALLOW_ANONYMOUS: 'false', SPINDLE_AUTH_USERS: JSON.stringify([{ username: STATIC_USER, password: staticHash }]) })
    : undefined;
  // The answers must outlive the cold pass and the warm-up (the default TTL is 60 s).
  const policy = want('policy', 'acl') ? await started('policies-db', { SPINDLE_AUTH_ALLOW_ANONYMOUS: 'false', SPINDLE_AUTH_POLICY_CACHE_TTL: '3600' }) : undefined;
  if (statics) await refusesAnonymous(statics, 'static users');
  let usersTable = '';
  let aclTable = '';
  if (policy) {
    sql = postgres(PG_URL, { max: 2, onnotice: () => {} });
    usersTable = uniqueName('bench_policy_users');
    tables.push(usersTable);
    console.error(`hashing ${USERS} passwords (bcrypt cost ${BCRYPT.bcryptCost}) into ${usersTable} ...`);
    const seconds = await createUsers(sql, usersTable);
    notes.push(`${USERS} policy users (${USER_PREFIX}0 .. ${USER_PREFIX}${USERS - 1}), each with its own bcrypt hash of cost ${BCRYPT.bcryptCost}, made in ${seconds.toFixed(0)} s.`);
    if (want('acl')) {
      aclTable = uniqueName('bench_policy_acl');
      tables.push(aclTable);
      await createAclRows(sql, aclTable);
    }
    await refusesAnonymous(policy, 'policy broker');
  }

  let authId: string | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    if (noauth) record(round, 'noauth', clean(`round ${round + 1} no auth`, await loadgen(noauth, 'connrate', [...TIMED, ...NO_CREDENTIALS])), 'conn/s');
    if (statics) record(round, 'static', clean(`round ${round + 1} static users`, await loadgen(statics, 'connrate', [...TIMED, ...STATIC_CREDENTIALS])), 'conn/s');
    if (policy && ONLY.has('policy')) authId = await connratePolicy(policy, round, authId, usersTable);
    if (policy && ONLY.has('acl')) {
      // The publishers sign in through the auth policy.
      authId ??= await addAuthPolicy(policy, 'bench-auth-acl', usersTable);
      await faninAcl(policy, round, aclTable);
    }
  }

  const rows = report();
  if (ONLY.size === PARTS.length) writeResults('policies', 'Authentication and ACL policies (issue 13 target)', rows, notes, { rounds: results });
  else printResults('Authentication and ACL policies (partial run)', rows, notes);
} finally {
  if (sql) {
    for (const t of tables) await sql.unsafe(`DROP TABLE IF EXISTS ${t}`);
    await sql.end();
  }
  for (const s of brokers) await s.stop();
}

/** The table and notes: medians, the ratios asked for, and whether the target holds. */
function report(): Row[] {
  const med = (c: (typeof CASES)[number]) => (results[c].rates.length > 0 ? median(results[c].rates) : NaN);
  const cores = (c: (typeof CASES)[number]) => (results[c].cores.length > 0 ? Number(median(results[c].cores).toFixed(2)) : '');
  const [noauth, statics, cold, warm, fanin, faninAcl] = CASES.map(med);
  const rows: Row[] = [];
  const row = (c: (typeof CASES)[number], what: string, unit: string, ratio: number, ratioTo: string, goal: string, met = '') => {
    if (results[c].rates.length === 0) return;
    rows.push({ case: what, measured: Math.round(med(c)), unit, ratio: Number.isFinite(ratio) ? Number(ratio.toFixed(3)) : '', 'ratio to': Number.isFinite(ratio) ? ratioTo : '', goal, met, 'broker CPU (cores)': cores(c) });
  };
  const target = warm / statics >= 0.9;
  row('noauth', 'connrate, no authentication (the ceiling)', 'conn/s', NaN, '', '(ceiling)');
  row('static', `connrate, static users (1 user, bcrypt cost ${BCRYPT.bcryptCost})`, 'conn/s', statics / noauth, 'no auth', '(report)');
  row('cold', `connrate, postgresql auth policy, cache cold (${USERS} users, bcrypt cost ${BCRYPT.bcryptCost})`, 'conn/s', cold / warm, 'cache warm', '(report)');
  row('warm', 'connrate, postgresql auth policy, cache warm', 'conn/s', warm / statics, 'static users', '>= 0.90 x static users', Number.isFinite(warm / statics) ? (target ? 'yes' : 'no') : '');
  row('fanin', 'fan-in QoS 1, no ACL policy', 'msgs/s', NaN, '', '(baseline)');
  row('faninAcl', 'fan-in QoS 1, postgresql ACL policy on every PUBLISH (cache warm)', 'msgs/s', faninAcl / fanin, 'no ACL policy', '(report)');

  const pct = (x: number) => (x >= 2 ? `${x.toFixed(1)} x` : `${(x * 100).toFixed(1)} %`);
  const ratios: string[] = [];
  if (Number.isFinite(warm / statics)) ratios.push(`warm policy / static users ${pct(warm / statics)}`);
  if (Number.isFinite(warm / noauth)) ratios.push(`warm policy / no auth ${pct(warm / noauth)}`);
  if (Number.isFinite(cold / warm)) ratios.push(`cold / warm ${pct(cold / warm)}`);
  if (Number.isFinite(faninAcl / fanin)) ratios.push(`ACL policy / no ACL policy ${pct(faninAcl / fanin)}`);
  if (ratios.length > 0) notes.unshift(`Ratios of the medians: ${ratios.join('; ')}.`);
  if (Number.isFinite(warm / statics)) {
    notes.unshift(`Target (warm cache within 10 % of static users): ${target ? 'HOLDS' : 'DOES NOT HOLD'}: the warm policy makes ${Math.round(warm)} conn/s, static users ${Math.round(statics)} (${pct(warm / statics)}).`);
    notes.push('Static users verify the bcrypt hash on every CONNECT (the static authenticator keeps no answer cache), so their rate is bound by bcrypt, while a warm policy answer skips it; warm policy / no auth is the stricter comparison.');
  }
  const perRound = CASES.filter((c) => results[c].rates.length > 0).map((c) => `${c} ${results[c].rates.map(Math.round).join(', ')}`);
  notes.push(`Per round (${ROUNDS} interleaved): ${perRound.join('; ')}.`);
  if (warmupPasses.length > 0) notes.push(`Warm-up passes over every user before each warm run (until ${CLEAN_WARMUP_PASSES} in a row had no cache miss, at most ${MAX_WARMUP_PASSES}): ${warmupPasses.join(', ')}; auth cache hit ratio of the warm runs: ${warmHitRatios.map((r) => r.toFixed(4)).join(', ')}.`);
  const generator = CASES.filter((c) => results[c].generator.length > 0).map((c) => `${c} ${median(results[c].generator).toFixed(2)}`);
  notes.push(`Load generator CPU over its measured window, fraction of its one core (medians; near 1.0 the generator, not the broker, was the limit): ${generator.join('; ')}.`);
  if (aclCounts.length > 0) notes.push(`ACL cache in the runs with the ACL policy: ${aclCounts.join('; ')}.`);
  notes.push(`Spindle ${spindleCommit()}${SPINDLE_ROOT === ROOT ? '' : ` from ${SPINDLE_ROOT}`}, default worker count (one per CPU).`);
  notes.push(`Load generator: MQTT ${MQTT_VERSION === '5' ? '5.0' : '3.1.1'}, ${CONCURRENCY} handshakes at once, ${SOURCES} source addresses; timed connection rates ${CONNRATE_SECONDS} s after 0.5 s, fan-in 10 -> 1 QoS 1 for ${FANIN_SECONDS} s after 2 s. Broker CPU: process CPU seconds over each load generator run (its setup included) per wall second; the load generator shares the machine.`);
  console.error(notes.filter((n) => n.startsWith('Target')).join('\n'));
  return rows;
}
