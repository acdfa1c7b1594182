// The schema registry's cost (issue 29: "decoding runs off the listener threads where it is
// heavy: measure it"), written to bench/results/schema.{json,md}:
//  1. decode per message in µs, in this thread, for protobuf (protobufjs), avro (avsc) and JSON
//     Schema (Ajv), with a small and a large payload: decode() (a map, what schema_decode gives a
//     rule) and valid() (what a topic check asks on the PUBLISH path);
//  2. fan-in QoS 0 (bench/loadgen, 10 publishers -> 1 subscriber) with no check, and with a
//     protobuf and an avro check on the fan-in's topics (the loadgen's payload, bytes of 0x5a,
//     is a valid message of both schemas at the sizes used), rounds interleaved, medians compared.
// Needs: make build, cargo build --release -p spindle-loadgen (make bench-schema does both).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import protobuf from 'protobufjs';
import avro from 'avsc';

import { compileSchema } from '../src/features/schema-registry/codec.ts';
import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';

const run = promisify(execFile);
const LOADGEN = process.env.SPINDLE_LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = Number(process.env.SCHEMA_ROUNDS ?? 3);
const SECONDS = Number(process.env.SCHEMA_FANIN_SECONDS ?? 5);
const MICRO_MS = Number(process.env.SCHEMA_MICRO_MS ?? 400);

const rows: Row[] = [];
const notes: string[] = [];

// 1. Decode per message.
const PROTO = 'syntax = "proto3"; message Reading { string sensor = 1; double temp = 2; int64 ts = 3; repeated double samples = 4; }';
const AVRO = { type: 'record', name: 'Reading', fields: [{ name: 'sensor', type: 'string' }, { name: 'temp', type: 'double' }, { name: 'ts', type: 'long' }, { name: 'samples', type: { type: 'array', items: 'double' } }] };
const JSON_SCHEMA = { type: 'object', properties: { sensor: { type: 'string' }, temp: { type: 'number' }, ts: { type: 'integer' }, samples: { type: 'array', items: { type: 'number' } } }, required: ['sensor', 'temp', 'ts'] };
const pbType = protobuf.parse(PROTO).root.lookupType('Reading');
const avroType = avro.Type.forSchema(AVRO as avro.Schema);

function reading(samples: number): { sensor: string; temp: number; ts: number; samples: number[] } {
  return { sensor: 'plant-1/line-4/sensor-17', temp: 21.375, ts: 1_764_400_000_000, samples: Array.from({ length: samples }, (_, i) => i * 0.25) };
}

/** µs per call of fn, over MICRO_MS of calls (after a warm-up). */
function perCall(fn: () => unknown): number {
  for (let i = 0; i < 2000; i++) fn();
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(MICRO_MS) * 1_000_000n;
  let now = start;
  while (now < until) {
    for (let i = 0; i < 200; i++) fn();
    n += 200;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / 1000 / n;
}

for (const samples of [0, 1000]) {
  const v = reading(samples);
  const cases: [string, ReturnType<typeof compileSchema>, Buffer, string | undefined][] = [
    ['protobuf', compileSchema('protobuf', PROTO), Buffer.from(pbType.encode(pbType.fromObject(v)).finish()), 'Reading'],
    ['avro', compileSchema('avro', JSON.stringify(AVRO)), avroType.toBuffer(v), undefined],
    ['json', compileSchema('json', JSON.stringify(JSON_SCHEMA)), Buffer.from(JSON.stringify(v)), undefined],
  ];
  for (const [type, c, payload, messageType] of cases) {
    const decode = perCall(() => c.decode(payload, messageType));
    const valid = perCall(() => c.valid(payload, messageType));
    rows.push({ target: `${type} decode (schema_decode), ${payload.length} B payload`, measured: Number(decode.toFixed(2)), unit: 'µs/msg', goal: '(measured)', ratio: '', met: '' });
    rows.push({ target: `${type} check (valid, PUBLISH path), ${payload.length} B payload`, measured: Number(valid.toFixed(2)), unit: 'µs/msg', goal: '(measured)', ratio: '', met: '' });
  }
}

// 2. Fan-in with and without a check on the topic.
async function fanin(s: BenchSpindle, payload: number): Promise<number> {
  const { stdout } = await run(LOADGEN, ['throughput', '--port', String(s.port), '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', 'fa', '--payload', String(payload)], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!).rate as number;
}

// The loadgen's payload is bytes of 0x5a: to protobuf, field 11 length-delimited of 90 bytes
// (92 bytes in all); to avro, a string of 45 bytes (46 in all).
const CHECKS = [
  { name: 'protobuf', payload: 92, schema: { name: 'bench-pb', type: 'protobuf', source: 'syntax = "proto3"; message Z { bytes z = 11; }' }, messageType: 'Z' },
  { name: 'avro', payload: 46, schema: { name: 'bench-avro', type: 'avro', source: '"string"' }, messageType: undefined },
];
const s = await startBenchSpindle('schema');
try {
  for (const check of CHECKS) await s.api('/api/schemas', check.schema, 'POST');
  for (const check of CHECKS) {
    const none: number[] = [];
    const on: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      none.push(await fanin(s, check.payload));
      await s.api('/api/schema-checks', { filter: 'fa/#', schema: check.schema.name, messageType: check.messageType }, 'POST');
      on.push(await fanin(s, check.payload));
      await s.api(`/api/schema-checks/${encodeURIComponent('fa/#')}`, undefined, 'DELETE');
      console.error(`${check.name} round ${round}: no check ${Math.round(none[round])}, check ${Math.round(on[round])} msgs/s`);
    }
    const a = median(none);
    const b = median(on);
    rows.push({ target: `fan-in QoS 0, ${check.payload} B, no check`, measured: Math.round(a), unit: 'msgs/s', goal: '(baseline)', ratio: 1, met: '' });
    rows.push({ target: `fan-in QoS 0, ${check.payload} B, a ${check.name} check on the topic`, measured: Math.round(b), unit: 'msgs/s', goal: '(measured)', ratio: Number((b / a).toFixed(3)), met: '' });
    notes.push(`${check.name} fan-in rounds (msgs/s): no check ${none.map(Math.round).join(', ')}; check ${on.map(Math.round).join(', ')}.`);
  }
  const refused = (await s.text('/prometheus')).match(/spindle_schema_check_refused_total\{protocol="v[35]"\} (\d+)/g) ?? [];
  notes.push(`Messages refused by the checks during the fan-in (must be 0: every payload decodes): ${refused.join('; ') || 'none counted'}.`);
  notes.push(`Decode rows: ${MICRO_MS} ms of calls each in one thread (the Reading message with 0 and 1000 samples); protobuf decode() builds the map with toObject (longs as numbers, defaults), valid() only decodes.`);
  writeResults('schema', 'Schema registry: decode cost per message, and fan-in QoS 0 (10 publishers -> 1 subscriber) with a schema check on the topic', rows, notes);
} finally {
  await s.stop();
}
