// Schema checks, and rules calling schema_decode, on large payloads, inline vs on the worker's pool
// thread (issue 29: "decoding runs off the listener threads where it is heavy: measure it"),
// written to bench/results/schema-offload.{json,md}:
//  1. the check's decode (valid()) per message in this thread, for the bench's Protobuf schema at
//     1, 2, 4 and 8 KiB: what a listener thread pays per message when the check runs inline (the
//     threshold schemaRegistry.offloadBytes is chosen against it);
//     and an 8 KiB burst through the check stage alone (its pool thread) against the same inline;
//  2. one worker, a check on every message: fan-in QoS 0 of 8 KiB Protobuf payloads
//     (bench/loadgen, 10 publishers -> 1 subscriber, closed loop) with schemaRegistry.offloadBytes
//     0 (inline) and 4096 (offloaded), rounds interleaved, and meanwhile a second client on the same
//     worker (mqtt.js, v5) publishing small QoS 1 messages one at a time: its round trip to the
//     PUBACK, p50 and p99, is what the listener thread keeps free;
//  3. the same with a rule instead of a check: `SELECT schema_decode(...) AS d, topic FROM "fr/#"`
//     republishing a small payload (to a topic nobody subscribes to), on the loadgen's 8 KiB
//     payloads to fr/..., offloadBytes 0 (the rule evaluated on the listener thread) and 4096
//     (on the worker's schema pool thread); the loadgen saturates the broker; a rule's
//     evaluation, unlike a check, holds no PUBLISH back (the message is routed already), so past
//     the pool's waiting bound the rule stage pauses the publishers' reading instead (counted);
//  4. the rule case again at a fixed rate below saturation: mosquitto_pub -l (another process)
//     publishes the 8 KiB payloads (a line of 'Z', which is 0x5a) at PACED_RATE a second (QoS 0,
//     fed in 10 ms ticks) while the probe runs.
// The loadgen's payload is bytes of 0x5a: to the schema `repeated uint32 z = 11` (packed), 92-byte
// runs of field 11 each holding 90 one-byte varints, so 8188 bytes are 89 runs, 8010 numbers.
// Needs: make build, cargo build --release -p spindle-loadgen (make bench-schema does both).
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import mqtt from 'mqtt';

import { compileSchema } from '../src/features/schema-registry/codec.ts';
import { CheckStage, type OffloadedCheck } from '../src/features/schema-registry/worker/check-stage.ts';
import { SchemaPool } from '../src/features/schema-registry/worker/schema-pool.ts';
import { createLogger } from '../src/log/index.ts';
import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';

const run = promisify(execFile);
const LOADGEN = process.env.SPINDLE_LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = Number(process.env.SCHEMA_ROUNDS ?? 2);
const SECONDS = Number(process.env.SCHEMA_FANIN_SECONDS ?? 5);
const MICRO_MS = Number(process.env.SCHEMA_MICRO_MS ?? 300);
const PAYLOAD = 8188;
const OFFLOAD_BYTES = 4096;

const SCHEMA = { name: 'bench-big', type: 'protobuf', source: 'syntax = "proto3"; message Z { repeated uint32 z = 11; }' };
const rows: Row[] = [];
const notes: string[] = [];

// 1. The check's decode per message, in this thread.
function perCall(fn: () => unknown): number {
  for (let i = 0; i < 500; i++) fn();
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(MICRO_MS) * 1_000_000n;
  let now = start;
  while (now < until) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / 1000 / n;
}
const compiled = compileSchema('protobuf', SCHEMA.source);
for (const runs of [11, 22, 45, 89]) {
  const payload = Buffer.alloc(runs * 92, 0x5a);
  if (!compiled.valid(payload, 'Z')) throw new Error('the bench payload must decode');
  const us = perCall(() => compiled.valid(payload, 'Z'));
  rows.push({ target: `protobuf check (valid), ${payload.length} B payload (${runs * 90} numbers), in one thread`, measured: Number(us.toFixed(2)), unit: 'µs/msg', goal: '(measured)', ratio: '', met: '' });
}

// 1b. The same 8 KiB check through the check stage alone (no broker): a burst handed to a
// CheckStage with one pool thread, wall time per message, against the same checks inline.
{
  const payload = Buffer.alloc(PAYLOAD, 0x5a);
  const log = createLogger({ level: 'error' });
  const pool = new SchemaPool({ log, threads: 1, timeoutMs: 1000, maxWaitingBytes: 1 << 30, maxWaitingMessages: 1_000_000 });
  const stage = new CheckStage(pool, { log, onFailure: 'refuse' });
  const check: OffloadedCheck = { schema: { key: 'bench', type: 'protobuf', source: SCHEMA.source }, messageType: 'Z' };
  const burst = (n: number) => new Promise<void>((resolve) => {
    let got = 0;
    for (let i = 0; i < n; i++) stage.check(payload, [check], () => {
      if (++got === n) resolve();
    }, 0);
  });
  await burst(500);
  const n = 3000;
  const t = process.hrtime.bigint();
  await burst(n);
  const pooled = Number(process.hrtime.bigint() - t) / 1000 / n;
  await pool.close();
  const t2 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) compiled.valid(payload, 'Z');
  const inline = Number(process.hrtime.bigint() - t2) / 1000 / n;
  rows.push({ target: `${PAYLOAD} B check, ${n} in a burst, inline in one thread`, measured: Number(inline.toFixed(1)), unit: 'µs/msg', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: `${PAYLOAD} B check, ${n} in a burst, through the check stage (1 pool thread)`, measured: Number(pooled.toFixed(1)), unit: 'µs/msg (wall)', goal: '(measured)', ratio: Number((pooled / inline).toFixed(3)), met: '' });
}

// 2. Fan-in with the check inline or offloaded, and a second client's round trips meanwhile.
async function fanin(s: BenchSpindle, prefix: string): Promise<number> {
  const { stdout } = await run(LOADGEN, ['throughput', '--port', String(s.port), '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '512', '--warmup', '1', '--duration', String(SECONDS), '--prefix', prefix, '--payload', String(PAYLOAD)], { maxBuffer: 16 * 1024 * 1024 });
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { rate: number; ok: boolean; failure?: string };
  if (!r.ok) throw new Error(`loadgen run failed: ${r.failure}`);
  return r.rate;
}

/** Round trips (ms) of small QoS 1 PUBLISHes, one at a time, until `stop` resolves. */
async function probe(s: BenchSpindle, stop: Promise<unknown>): Promise<number[]> {
  const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${s.port}`, { protocolVersion: 5, clientId: `probe-${Date.now()}`, reconnectPeriod: 0 });
  const rtts: number[] = [];
  let done = false;
  void stop.then(() => {
    done = true;
  });
  // The loadgen's warm-up second is left out.
  await new Promise((r) => setTimeout(r, 1500));
  const payload = Buffer.from('probe-0123456789');
  while (!done) {
    const t = process.hrtime.bigint();
    await c.publishAsync('probe/rtt', payload, { qos: 1 });
    rtts.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  await c.endAsync();
  return rtts;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function counters(s: BenchSpindle): Promise<{ pooled: number; overflow: number; refused: number; rulePooled: number; ruleOverflow: number; ruleFailed: number; rulePaused: number }> {
  const text = await s.text('/prometheus');
  const one = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  return {
    pooled: one(/^spindle_schema_check_pooled_total (\d+)$/m),
    overflow: one(/^spindle_schema_check_offload_overflow_total (\d+)$/m),
    refused: one(/^spindle_schema_check_refused_total\{protocol="v3"\} (\d+)$/m) + one(/^spindle_schema_check_refused_total\{protocol="v5"\} (\d+)$/m),
    rulePooled: one(/^spindle_schema_rule_pooled_total (\d+)$/m),
    ruleOverflow: one(/^spindle_schema_rule_offload_overflow_total (\d+)$/m),
    ruleFailed: one(/^spindle_schema_rule_offload_failures_total (\d+)$/m),
    rulePaused: one(/^spindle_schema_rule_publishers_paused_total (\d+)$/m),
  };
}

/** About half the rate at which the rule saturates the worker inline (8,500/s here). */
const PACED_RATE = Number(process.env.SCHEMA_PACED_RATE ?? 4000);

/** Waits until nothing waits for the schema pool (what the saturated runs left is counted). */
async function drained(s: BenchSpindle): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (/^spindle_schema_check_offload_waiting_messages 0$/m.test(await s.text('/prometheus'))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the schema pool did not drain in 10 s');
}

/** Publishes the 8 KiB payload to fr/paced at PACED_RATE a second for SECONDS + 1 s (QoS 0,
 * mosquitto_pub -l fed a line per message in 10 ms ticks); resolves with the number sent. */
async function paced(s: BenchSpindle): Promise<number> {
  const pub = spawn('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(s.port), '-t', 'fr/paced', '-q', '0', '-l'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const line = Buffer.concat([Buffer.alloc(PAYLOAD, 0x5a), Buffer.from('\n')]);
  const exited = new Promise<void>((resolve) => pub.once('exit', () => resolve()));
  await new Promise((r) => setTimeout(r, 200)); // connected
  const start = Date.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = Date.now() - start;
      if (elapsed >= (SECONDS + 1) * 1000) {
        clearInterval(tick);
        resolve();
        return;
      }
      const due = Math.floor((elapsed / 1000) * PACED_RATE);
      if (due > sent) {
        pub.stdin.write(Buffer.concat(Array.from({ length: due - sent }, () => line)));
        sent = due;
      }
    }, 10);
  });
  pub.stdin.end();
  await exited;
  return sent;
}

async function ruleMatched(s: BenchSpindle): Promise<number> {
  const { data } = await s.api('/rule/query', { name: 'bench-decode' });
  const id = (data as { id: string; name: string }[]).find((r) => r.name === 'bench-decode')!.id;
  return (await s.api('/rule/runtime', { id })).data.matched as number;
}

const RULE_SQL = `SELECT schema_decode('${SCHEMA.name}', payload, 'Z') AS d, topic FROM "fr/#"`;

const MODES = [
  { name: 'inline', offloadBytes: 0 },
  { name: 'offloaded', offloadBytes: OFFLOAD_BYTES },
] as const;
const brokers: BenchSpindle[] = [];
try {
  for (const mode of MODES) {
    const s = await startBenchSpindle(`schema-${mode.name}`, { env: { SPINDLE_WORKERS: '1', SPINDLE_SCHEMA_REGISTRY_OFFLOAD_BYTES: String(mode.offloadBytes) } });
    brokers.push(s);
    await s.api('/api/schemas', SCHEMA, 'POST');
    await s.api('/api/schema-checks', { filter: 'fa/#', schema: SCHEMA.name, messageType: 'Z' }, 'POST');
    await s.api('/rule/add', { name: 'bench-decode', sql: RULE_SQL, actions: [{ type: 'republish', config: { topic: 'fr-out/x', payload: '${topic}' } }] }, 'POST');
  }
  // The probe alone, on the idle broker (offloaded mode; no large messages flow).
  const idle = await probe(brokers[1], new Promise((r) => setTimeout(r, 3000)));
  rows.push({ target: 'probe QoS 1 round trip, idle broker, p50', measured: Number(pct(idle, 50).toFixed(2)), unit: 'ms', goal: '(baseline)', ratio: '', met: '' });
  rows.push({ target: 'probe QoS 1 round trip, idle broker, p99', measured: Number(pct(idle, 99).toFixed(2)), unit: 'ms', goal: '(baseline)', ratio: '', met: '' });
  const CASES = [
    { name: 'check', prefix: 'fa', what: 'a schema check on every message' },
    { name: 'rule', prefix: 'fr', what: 'a rule with schema_decode on every message' },
  ] as const;
  for (const kase of CASES) {
    const result = MODES.map(() => ({ rates: [] as number[], rtts: [] as number[] }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, mode] of MODES.entries()) {
        const s = brokers[i];
        const load = fanin(s, kase.prefix);
        const [rate, rtts] = await Promise.all([load, probe(s, load.catch(() => undefined))]);
        result[i].rates.push(rate);
        result[i].rtts.push(...rtts);
        console.error(`${kase.name} ${mode.name} round ${round}: ${Math.round(rate)} msgs/s of ${PAYLOAD} B, probe p50 ${pct(rtts, 50).toFixed(2)} ms, p99 ${pct(rtts, 99).toFixed(2)} ms (${rtts.length} round trips)`);
      }
    }
    const base = median(result[0].rates);
    for (const [i, mode] of MODES.entries()) {
      const r = result[i];
      const rate = median(r.rates);
      const label = mode.offloadBytes === 0 ? `${kase.name} inline (offloadBytes 0)` : `${kase.name} offloaded (offloadBytes ${mode.offloadBytes})`;
      rows.push({ target: `fan-in QoS 0, ${PAYLOAD} B protobuf, 1 worker, ${label}`, measured: Math.round(rate), unit: 'msgs/s', goal: i === 0 ? '(baseline)' : '(measured)', ratio: Number((rate / base).toFixed(3)), met: '' });
      rows.push({ target: `probe QoS 1 round trip meanwhile, ${label}, p50`, measured: Number(pct(r.rtts, 50).toFixed(2)), unit: 'ms', goal: '(measured)', ratio: '', met: '' });
      rows.push({ target: `probe QoS 1 round trip meanwhile, ${label}, p99`, measured: Number(pct(r.rtts, 99).toFixed(2)), unit: 'ms', goal: '(measured)', ratio: '', met: '' });
      const c = await counters(brokers[i]);
      notes.push(kase.name === 'check'
        ? `${mode.name}, ${kase.what}: fan-in rounds ${r.rates.map(Math.round).join(', ')} msgs/s; ${r.rtts.length} probe round trips; checks decoded by the pool thread ${c.pooled}, inline past the waiting bound ${c.overflow}, refused ${c.refused} (must be 0: every payload decodes).`
        : `${mode.name}, ${kase.what}: fan-in rounds ${r.rates.map(Math.round).join(', ')} msgs/s; ${r.rtts.length} probe round trips; rule evaluations on the pool thread ${c.rulePooled}, inline past the hard waiting bound ${c.ruleOverflow}, failed with their batch ${c.ruleFailed}; publishers paused by the rule stage ${c.rulePaused} times.`);
    }
  }
  // 4. The rule at a fixed rate below saturation.
  {
    const result = MODES.map(() => ({ rtts: [] as number[], sent: 0, pooledBefore: 0, overflowBefore: 0, matchedBefore: 0 }));
    for (const [i] of MODES.entries()) {
      await drained(brokers[i]);
      const c = await counters(brokers[i]);
      result[i].pooledBefore = c.rulePooled;
      result[i].overflowBefore = c.ruleOverflow;
      result[i].matchedBefore = await ruleMatched(brokers[i]);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, mode] of MODES.entries()) {
        const load = paced(brokers[i]);
        const [sent, rtts] = await Promise.all([load, probe(brokers[i], load.catch(() => undefined))]);
        result[i].sent += sent;
        result[i].rtts.push(...rtts);
        console.error(`rule paced ${mode.name} round ${round}: ${sent} sent at ${PACED_RATE}/s, probe p50 ${pct(rtts, 50).toFixed(2)} ms, p99 ${pct(rtts, 99).toFixed(2)} ms (${rtts.length} round trips)`);
      }
    }
    for (const [i, mode] of MODES.entries()) {
      const r = result[i];
      const label = mode.offloadBytes === 0 ? 'rule inline (offloadBytes 0)' : `rule offloaded (offloadBytes ${mode.offloadBytes})`;
      rows.push({ target: `probe QoS 1 round trip while ${PACED_RATE}/s ${PAYLOAD} B go through the rule, ${label}, p50`, measured: Number(pct(r.rtts, 50).toFixed(2)), unit: 'ms', goal: '(measured)', ratio: '', met: '' });
      rows.push({ target: `probe QoS 1 round trip while ${PACED_RATE}/s ${PAYLOAD} B go through the rule, ${label}, p99`, measured: Number(pct(r.rtts, 99).toFixed(2)), unit: 'ms', goal: '(measured)', ratio: '', met: '' });
      const c = await counters(brokers[i]);
      notes.push(`${mode.name}, the rule at ${PACED_RATE}/s: ${r.sent} sent, ${(await ruleMatched(brokers[i])) - r.matchedBefore} evaluated, ${r.rtts.length} probe round trips; rule evaluations on the pool thread ${c.rulePooled - r.pooledBefore}, inline past the hard waiting bound ${c.ruleOverflow - r.overflowBefore}.`);
    }
  }
  notes.push(`One worker (SPINDLE_WORKERS=1) and, offloaded, one pool thread (schemaRegistry.threads 1); ${SECONDS} s per run after a 1 s warm-up, ${ROUNDS} rounds interleaved; loadgen window 512 deliveries. The probe client publishes 16 bytes to a topic neither the check nor the rule matches, on the same worker, one QoS 1 message at a time, from the bench's own process. A shared 2-core machine: the broker's main thread, its worker, its pool thread, the loadgen and the probe share them, so read the ratios, not the absolute numbers.`);
  notes.push(`Decode rows: ${MICRO_MS} ms of valid() calls each in one thread, on the loadgen's payload (bytes of 0x5a) at 1, 2, 4 and 8 KiB.`);
  notes.push(`The rule case: ${RULE_SQL}, republishing \${topic} to fr-out/x (no subscriber); the check is on fa/# only, so the rule's messages are not checked.`);
  writeResults('schema-offload', 'Schema checks and rules with schema_decode on 8 KiB payloads: inline on the listener thread vs offloaded to the worker\'s pool thread (fan-in throughput, and a second client\'s QoS 1 round trips on the same worker)', rows, notes);
} finally {
  for (const s of brokers) await s.stop();
}
