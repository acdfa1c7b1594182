// The rule engine's speed targets (issue 12), on one Spindle process with the admin API, driven by
// bench/loadgen, printed against the targets and written to bench/results/rules.{json,md}:
//  1. fan-in QoS 0 with 100 rules whose filters match nothing: >= 95 % of the rate with no rules;
//  2. with one republish rule on every message: >= 70 % of the rate with no rules;
//  3. save_postgresql of every message at 20 000 msgs/s offered: every row arrives, in batches;
//     rows/s at saturation (closed-loop fan-in); the same for save_kafka;
//  4. PostgreSQL stopped for 10 s during a 5 000 msgs/s run: publish p99 against a run without the
//     outage, outputs dropped only past the queue bound (counted), and how soon rows flow again.
// Needs: make build, cargo build --release -p spindle-loadgen, scripts/ensure-databases.sh and
// scripts/ensure-kafka.sh (make bench-rules does all of it). Fan-in rounds are interleaved
// (none, 100 rules, republish; five times) and the medians compared, so drift hits all three.
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import postgres from 'postgres';
import { Kafka, logLevel } from 'kafkajs';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';
import { PG_URL, uniqueName } from '../test/store/databases.ts';

const run = promisify(execFile);
const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const KAFKA = process.env.SPINDLE_TEST_KAFKA ?? '127.0.0.1:9092';
const ROUNDS = Number(process.env.RULES_ROUNDS ?? 5);
const FANIN_SECONDS = Number(process.env.RULES_FANIN_SECONDS ?? 8);
/** `--only fanin,postgresql,kafka,outage`: the parts to run (default: all). */
const onlyArg = process.argv.indexOf('--only');
const ONLY = new Set(onlyArg > 0 ? process.argv[onlyArg + 1].split(',') : ['fanin', 'postgresql', 'kafka', 'outage']);

async function loadgen(args: string[]): Promise<any> {
  const { stdout } = await run(LOADGEN, args, { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

async function ruleId(s: BenchSpindle, name: string): Promise<string> {
  const q = await s.api('/rule/query', { name, size: 1000 });
  return q.data.find((r: { name: string }) => r.name === name).id;
}

async function addRule(s: BenchSpindle, name: string, sql: string, actions: unknown[]): Promise<string> {
  await s.api('/rule/add', { name, sql, actions });
  return ruleId(s, name);
}

async function runtime(s: BenchSpindle, id: string): Promise<any> {
  return (await s.api('/rule/runtime', { id })).data;
}

/** Waits until the rule's first action has nothing queued and its counts stopped moving. */
async function drained(s: BenchSpindle, id: string, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  for (;;) {
    const rt = await runtime(s, id);
    const a = rt.actions[0];
    const done = a.success + a.failed + a.dropped;
    if (a.queued === 0 && done === last && done >= rt.passed) return rt;
    if (Date.now() > deadline) return rt;
    last = done;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const fanin = (s: BenchSpindle, prefix: string, seconds = FANIN_SECONDS) =>
  loadgen(['throughput', '--port', String(s.port), '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '2', '--duration', String(seconds), '--prefix', prefix]);

const rows: Row[] = [];
const notes: string[] = [];
const push = rows.push.bind(rows);
rows.push = (...r: Row[]) => {
  for (const x of r) console.error(JSON.stringify(x));
  return push(...r);
};
const s = await startBenchSpindle('rules');
try {
  // 1 and 2: fan-in QoS 0, interleaved rounds.
  if (ONLY.has('fanin')) {
  const rates: Record<'none' | 'hundred' | 'republish', number[]> = { none: [], hundred: [], republish: [] };
  for (let round = 0; round < ROUNDS; round++) {
    rates.none.push((await fanin(s, 'fa')).rate);
    const hundred: string[] = [];
    for (let i = 0; i < 100; i++) hundred.push(await addRule(s, `nomatch-${round}-${i}`, `SELECT * FROM "bench/nomatch/${i}/#"`, [{ type: 'republish', config: { topic: `bench/never/${i}` } }]));
    rates.hundred.push((await fanin(s, 'fa')).rate);
    for (const id of hundred) await s.api('/rule/delete', { id });
    const rep = await addRule(s, `republish-${round}`, 'SELECT payload FROM "fa/in/+"', [{ type: 'republish', config: { topic: 'bench/republished', payload: '${payload}' } }]);
    rates.republish.push((await fanin(s, 'fa')).rate);
    const rt = await runtime(s, rep);
    if (rt.actions[0].success !== rt.passed) notes.push(`round ${round}: republished ${rt.actions[0].success} of ${rt.passed} outputs`);
    await s.api('/rule/delete', { id: rep });
  }
  const none = median(rates.none);
  const hundred = median(rates.hundred);
  const republish = median(rates.republish);
  rows.push({ target: 'fan-in QoS 0, no rules', measured: Math.round(none), unit: 'msgs/s', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: 'fan-in QoS 0, 100 rules matching nothing', measured: Math.round(hundred), unit: 'msgs/s', goal: '>= 95 % of no rules', ratio: hundred / none, met: hundred / none >= 0.95 ? 'yes' : 'no' });
  rows.push({ target: 'fan-in QoS 0, one republish rule on every message', measured: Math.round(republish), unit: 'msgs/s', goal: '>= 70 % of no rules', ratio: republish / none, met: republish / none >= 0.7 ? 'yes' : 'no' });
  notes.push(`fan-in rates per round (msgs/s): none ${rates.none.map(Math.round).join(', ')}; 100 rules ${rates.hundred.map(Math.round).join(', ')}; republish ${rates.republish.map(Math.round).join(', ')}. The republished messages have no subscriber.`);

  }

  const sql = postgres(PG_URL, { max: 2, onnotice: () => {} });
  const table = uniqueName('bench_rows');
  // The load generator's payloads are binary (its send time): they are stored as base64 text.
  await sql.unsafe(`CREATE TABLE ${table} (topic text, payload text, clientid text, ts bigint)`);
  const pgSource = (await s.api('/source/add', { name: 'bench-pg', type: 'postgresql', config: { url: PG_URL, poolSize: 4 } })).data.id;
  const pgAction = { type: 'save_postgresql', config: { source: pgSource, table, columns: { topic: '${topic}', payload: '${payload}', clientid: '${clientid}', ts: '${ts}' } } };
  // 3. save_postgresql.
  if (ONLY.has('postgresql')) {
  let pgRule = await addRule(s, 'pg-offered', 'SELECT topic, base64_encode(payload) AS payload, clientid, timestamp AS ts FROM "lp/lat"', [pgAction]);
  const offered = await loadgen(['latency', '--port', String(s.port), '--rate', '20000', '--qos', '0', '--warmup', '1', '--duration', '10', '--prefix', 'lp']);
  let rt = await drained(s, pgRule);
  const [{ count: pgRows }] = await sql.unsafe(`SELECT count(*)::int AS count FROM ${table}`);
  const a = rt.actions[0];
  rows.push({ target: 'save_postgresql at 20 000 msgs/s offered', measured: pgRows, unit: `rows of ${offered.sent} published`, goal: 'every row arrives, in batches', ratio: pgRows / offered.sent, met: pgRows === offered.sent && a.batches < pgRows ? 'yes' : 'no' });
  notes.push(`save_postgresql at ${Math.round(offered.rate)} msgs/s offered: ${pgRows} rows in ${a.batches} batches (${(pgRows / Math.max(1, a.batches)).toFixed(0)} rows per INSERT), dropped ${a.dropped}, failed ${a.failed}; publish p99 ${offered.p99} µs.`);
  await s.api('/rule/delete', { id: pgRule });
  await sql.unsafe(`TRUNCATE ${table}`);
  pgRule = await addRule(s, 'pg-saturated', 'SELECT topic, base64_encode(payload) AS payload, clientid, timestamp AS ts FROM "ps/in/+"', [pgAction]);
  const before = await runtime(s, pgRule);
  const t0 = Date.now();
  const sat = await fanin(s, 'ps', 10);
  rt = await drained(s, pgRule);
  const seconds = (Date.now() - t0) / 1000;
  const pgRate = (rt.actions[0].success - before.actions[0].success) / seconds;
  rows.push({ target: 'save_postgresql at saturation', measured: Math.round(pgRate), unit: 'rows/s', goal: '(report)', ratio: '', met: '' });
  notes.push(`save_postgresql saturated by closed-loop fan-in (${Math.round(sat.rate)} msgs/s delivered to the subscriber): ${rt.actions[0].success} rows in ${seconds.toFixed(1)} s including the drain, ${rt.actions[0].dropped} outputs dropped past the queue bound (${rt.actions[0].batches} batches).`);
  await s.api('/rule/delete', { id: pgRule });
  }

  // 3b. save_kafka.
  if (ONLY.has('kafka')) {
  const kafka = new Kafka({ clientId: 'bench-rules', brokers: [KAFKA], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topic = uniqueName('bench-rules');
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  const count = async () => (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);
  const kSource = (await s.api('/source/add', { name: 'bench-kafka', type: 'kafka', config: { bootstrapServers: KAFKA } })).data.id;
  const kAction = { type: 'save_kafka', config: { source: kSource, topic, key: '${clientid}' } };
  let kRule = await addRule(s, 'kafka-offered', 'SELECT topic, payload, clientid FROM "lk/lat"', [kAction]);
  const kOffered = await loadgen(['latency', '--port', String(s.port), '--rate', '20000', '--qos', '0', '--warmup', '1', '--duration', '10', '--prefix', 'lk']);
  let rt = await drained(s, kRule);
  const kRows = await count();
  rows.push({ target: 'save_kafka at 20 000 msgs/s offered', measured: kRows, unit: `records of ${kOffered.sent} published`, goal: 'every record arrives, in batches', ratio: kRows / kOffered.sent, met: kRows === kOffered.sent && rt.actions[0].batches < kRows ? 'yes' : 'no' });
  notes.push(`save_kafka at ${Math.round(kOffered.rate)} msgs/s offered: ${kRows} records in ${rt.actions[0].batches} batches, dropped ${rt.actions[0].dropped}, failed ${rt.actions[0].failed}.`);
  await s.api('/rule/delete', { id: kRule });
  kRule = await addRule(s, 'kafka-saturated', 'SELECT topic, payload, clientid FROM "ks/in/+"', [kAction]);
  const kBefore = await count();
  const k0 = Date.now();
  await fanin(s, 'ks', 10);
  rt = await drained(s, kRule);
  const kRate = ((await count()) - kBefore) / ((Date.now() - k0) / 1000);
  rows.push({ target: 'save_kafka at saturation', measured: Math.round(kRate), unit: 'records/s', goal: '(report)', ratio: '', met: '' });
  notes.push(`save_kafka saturated: ${rt.actions[0].dropped} outputs dropped past the queue bound, ${rt.actions[0].batches} batches.`);
  await s.api('/rule/delete', { id: kRule });
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  await admin.disconnect();
  }

  // 4. PostgreSQL stopped for 10 s.
  if (ONLY.has('outage')) {
  await sql.unsafe(`TRUNCATE ${table}`);
  const outRule = await addRule(s, 'pg-outage', 'SELECT topic, base64_encode(payload) AS payload, clientid, timestamp AS ts FROM "lo/lat"', [pgAction]);
  const latencyArgs = ['latency', '--port', String(s.port), '--rate', '5000', '--qos', '0', '--warmup', '1', '--duration', '25', '--prefix', 'lo'];
  const calm = await loadgen(latencyArgs);
  await drained(s, outRule);
  const calmRt = await runtime(s, outRule);
  const pg = pgCluster();
  const stormy = loadgen(latencyArgs);
  await new Promise((r) => setTimeout(r, 6000));
  asRoot(['pg_ctlcluster', pg.version, pg.cluster, 'stop', '-m', 'fast']);
  const stoppedAt = Date.now();
  await new Promise((r) => setTimeout(r, 10_000));
  asRoot(['pg_ctlcluster', pg.version, pg.cluster, 'start']);
  const startedAt = Date.now();
  const successAtStart = (await runtime(s, outRule)).actions[0].success;
  let flowingAfter = NaN;
  while (Date.now() - startedAt < 30_000) {
    const a = (await runtime(s, outRule)).actions[0];
    if (process.env.RULES_DEBUG) console.error(((Date.now() - startedAt) / 1000).toFixed(1), a.success, a.retries, a.queued, a.lastErrorAt, a.lastError);
    const now = a.success;
    if (now > successAtStart) {
      flowingAfter = (Date.now() - startedAt) / 1000;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const storm = await stormy;
  const endRt = await drained(s, outRule);
  const ea = endRt.actions[0];
  const ca = calmRt.actions[0];
  const stormOutputs = endRt.passed - calmRt.passed;
  const stormRows = ea.success - ca.success;
  const stormDropped = ea.dropped - ca.dropped;
  rows.push({ target: 'PostgreSQL stopped 10 s: publish p99', measured: storm.p99, unit: `µs (without the outage: ${calm.p99})`, goal: 'unchanged within noise', ratio: storm.p99 / calm.p99, met: storm.p99 <= Math.max(calm.p99 * 2, calm.p99 + 1000) ? 'yes' : 'no' });
  rows.push({ target: 'PostgreSQL stopped 10 s: rows flowing again after it is back', measured: flowingAfter, unit: 's', goal: '<= 5 s', ratio: '', met: flowingAfter <= 5 ? 'yes' : 'no' });
  rows.push({ target: 'PostgreSQL stopped 10 s: outputs accounted for', measured: stormRows + stormDropped + (ea.failed - ca.failed), unit: `of ${stormOutputs} (rows ${stormRows}, dropped ${stormDropped})`, goal: 'dropped only past the queue bound, counted', ratio: '', met: stormRows + stormDropped + (ea.failed - ca.failed) === stormOutputs ? 'yes' : 'no' });
  notes.push(`Outage run: PostgreSQL stopped 6 s into the run for ${((startedAt - stoppedAt) / 1000).toFixed(1)} s (pg_ctlcluster stop -m fast, then start) during a 25 s run at 5 000 msgs/s; queue bound rules.actionQueueLimit = 10 000; publish p50 ${calm.p50} -> ${storm.p50} µs, p99 ${calm.p99} -> ${storm.p99} µs, max ${calm.max} -> ${storm.max} µs; retries ${ea.retries - ca.retries}.`);
  await s.api('/rule/delete', { id: outRule });
  }
  await sql.unsafe(`DROP TABLE ${table}`);
  await sql.end();
} finally {
  await s.stop();
  if (ONLY.size === 4) writeResults('rules', 'Rule engine (issue 12 targets)', rows, notes);
  else console.log(rows, notes);
}

/** Runs a command as root: directly when we are, through sudo otherwise (as ensure-databases.sh). */
function asRoot(argv: string[]): void {
  if (process.getuid?.() === 0) execFileSync(argv[0], argv.slice(1), { stdio: 'inherit' });
  else execFileSync('sudo', argv, { stdio: 'inherit' });
}

function pgCluster(): { version: string; cluster: string } {
  const line = execFileSync('pg_lsclusters', ['-h'], { encoding: 'utf8' }).trim().split('\n').find((l) => l.includes('online'))!;
  const [version, cluster] = line.split(/\s+/);
  return { version, cluster };
}
