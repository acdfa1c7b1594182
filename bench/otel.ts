// The cost of OpenTelemetry traces on the message path (issue 30): "sampling 0 within 3 % of off,
// and sampling 1 % within 10 %". Spindle processes side by side, the same load against each,
// rounds interleaved (the order rotates, after one unrecorded run each) and the medians compared:
//  - off: otel.traces.enabled false (the default);
//  - ratio 0: on, otel.traces.sampleRatio 0 (nothing sampled: the decision alone);
//  - each ratio of OTEL_RATIOS (default 0.01 and 0.1): that share of messages traced, their spans
//    exported over OTLP/HTTP (protobuf) to a receiver in this process that answers every export
//    200 (node:http: it reads the request and counts it, it decodes nothing).
// Case: fan-in QoS 0 (10 publishers, 1 subscriber), MQTT 5.0 without user properties. A loss or
// an error stops the bench; so do spans exported at sampling 0, or none where some must be.
// Printed and written to bench/results/otel.{md,json} (the settings in its notes).
// Needs make build and the load generator (make bench-otel does both). Settings: OTEL_ROUNDS (3),
// OTEL_SECONDS (5), OTEL_RATIOS (0.01,0.1), OTEL_PINNED (1: each broker on core 0 with one worker,
// the load generator and this process, the receiver, on core 1, as bench/rewrite.ts), LOADGEN (the load generator's path).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { LOADGEN, loadgenRun, positiveSetting } from './lib/fanin-run.ts';

const run = promisify(execFile);
const setting = positiveSetting;
const ROUNDS = setting('OTEL_ROUNDS', 3);
const SECONDS = setting('OTEL_SECONDS', 5);
const RATIOS = (process.env.OTEL_RATIOS ?? '0.01,0.1').split(',').map(Number);
if (RATIOS.some((r) => !(r > 0 && r <= 1))) throw new Error(`OTEL_RATIOS: ratios in (0, 1], not ${process.env.OTEL_RATIOS}`);
const ARGS = ['throughput', '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', 'otel'];
const PINNED = process.env.OTEL_PINNED !== '0';
const BROKER_CORE = 0;
const LOADGEN_CORE = 1;
/** The targets: ratio 0 against off, 1 % against off. */
const TARGET_ZERO = 0.97;
const TARGET_ONE_PERCENT = 0.9;

interface Variant {
  name: string;
  /** null: tracing off. */
  ratio: number | null;
  broker?: BenchSpindle;
  rates: number[];
  cores: number[];
  /** The broker's CPU per message (µs), per round. */
  cpu: number[];
}

function loadgen(s: BenchSpindle, what: string): Promise<{ rate: number; cores: number }> {
  return loadgenRun(s, ARGS, PINNED ? LOADGEN_CORE : null, what);
}

/** spindle_otel_traces_spans_exported_total and the dropped ones, summed over reasons. */
async function spanCounts(s: BenchSpindle): Promise<{ exported: number; dropped: number }> {
  const t = await s.text('/prometheus');
  const exported = Number(/^spindle_otel_traces_spans_exported_total (\S+)$/m.exec(t)?.[1] ?? 0);
  let dropped = 0;
  for (const m of t.matchAll(/^spindle_otel_traces_spans_dropped_total\{[^}]*\} (\S+)$/gm)) dropped += Number(m[1]);
  return { exported, dropped };
}

/** An OTLP/HTTP receiver that accepts every export (an empty ExportTraceServiceResponse). */
async function startReceiver(): Promise<{ url: string; requests: () => number; bytes: () => number; close: () => void }> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => { bytes += c.length; });
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, requests: () => requests, bytes: () => bytes, close: () => server.close() };
}

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  // The receiver is the world outside the broker: pinned, it runs on the load generator's core,
  // so the broker's core carries only the broker (its exports included).
  if (PINNED) await run('taskset', ['-a', '-cp', String(LOADGEN_CORE), String(process.pid)]);
  const receiver = await startReceiver();
  const common: Record<string, string> = PINNED ? { SPINDLE_WORKERS: '1' } : {};
  const variants: Variant[] = [
    { name: 'off', ratio: null, rates: [], cores: [], cpu: [] },
    { name: 'ratio 0', ratio: 0, rates: [], cores: [], cpu: [] },
    ...RATIOS.map((r) => ({ name: `ratio ${r}`, ratio: r, rates: [], cores: [], cpu: [] })),
  ];
  try {
    for (const v of variants) {
      const env: Record<string, string> = v.ratio === null ? {} : {
        SPINDLE_OTEL_TRACES_ENABLED: 'true',
        SPINDLE_OTEL_TRACES_ENDPOINT: receiver.url,
        SPINDLE_OTEL_TRACES_SAMPLE_RATIO: String(v.ratio),
      };
      v.broker = await startBenchSpindle(`otel-${v.name.replace(/\W+/g, '-')}`, { env: { ...common, ...env } });
      if (PINNED) await run('taskset', ['-a', '-cp', String(BROKER_CORE), String(v.broker.pid)]);
    }
    // One unrecorded run each first: the JIT warm, and the sampled brokers' export running.
    for (const v of variants) await loadgen(v.broker!, `warm-up ${v.name}`);
    for (let round = 0; round < ROUNDS; round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]);
      for (const v of order) {
        const m = await loadgen(v.broker!, `round ${round + 1} ${v.name}`);
        v.rates.push(m.rate);
        v.cores.push(m.cores);
        v.cpu.push((m.cores / m.rate) * 1e6);
        console.error(`round ${round + 1}/${ROUNDS} ${v.name}: ${Math.round(m.rate)} msgs/s (broker ${m.cores.toFixed(2)} cores, ${v.cpu.at(-1)!.toFixed(2)} µs of CPU per message)`);
      }
    }
    const counts = new Map<Variant, { exported: number; dropped: number }>();
    for (const v of variants) if (v.ratio !== null) counts.set(v, await spanCounts(v.broker!));
    for (const [v, c] of counts) {
      if (v.ratio === 0 && c.exported !== 0) throw new Error(`ratio 0 exported ${c.exported} spans: it must export none`);
      if (v.ratio! > 0 && c.exported === 0) throw new Error(`${v.name} exported no span`);
    }
    const off = median(variants[0].rates);
    const offCpu = median(variants[0].cpu);
    const rows: Row[] = variants.map((v) => ({
      case: `fan-in QoS 0, 10 → 1: ${v.ratio === null ? 'tracing off' : v.ratio === 0 ? 'tracing on, sampling 0' : `sampling ${v.ratio * 100} %`}`,
      measured: Math.round(median(v.rates)),
      unit: 'msgs/s',
      'broker cores': median(v.cores).toFixed(2),
      ratio: v.ratio === null ? '' : Number((median(v.rates) / off).toFixed(3)),
      'broker CPU µs/msg': median(v.cpu).toFixed(3),
      'CPU ratio': v.ratio === null ? '' : Number((median(v.cpu) / offCpu).toFixed(3)),
      'spans exported': v.ratio === null ? '' : counts.get(v)!.exported,
      'spans dropped': v.ratio === null ? '' : counts.get(v)!.dropped,
    }));
    const zero = median(variants[1].rates) / off;
    const onePercent = variants.find((v) => v.ratio === 0.01);
    const notes = [
      `Sampling 0: ${(zero * 100).toFixed(1)} % of off (target at least ${TARGET_ZERO * 100} %): ${zero >= TARGET_ZERO ? 'HOLDS' : 'DOES NOT HOLD'}.`,
      ...(onePercent ? [`Sampling 1 %: ${(median(onePercent.rates) / off * 100).toFixed(1)} % of off (target at least ${TARGET_ONE_PERCENT * 100} %): ${median(onePercent.rates) / off >= TARGET_ONE_PERCENT ? 'HOLDS' : 'DOES NOT HOLD'}.`] : []),
      `Broker CPU per message (the load generator's rate and the broker process's CPU time over the run; steadier than the rate when the machine is shared): sampling 0 ${(median(variants[1].cpu) / offCpu * 100).toFixed(1)} % of off${onePercent ? `, sampling 1 % ${(median(onePercent.cpu) / offCpu * 100).toFixed(1)} %` : ''}.`,
      `Per round (${ROUNDS}, interleaved, the order rotating): ${variants.map((v) => `${v.name} ${v.rates.map(Math.round).join(', ')}`).join('; ')}.`,
      `Spans exported over OTLP/HTTP (protobuf) to a receiver in the bench process answering 200 (${receiver.requests()} requests, ${(receiver.bytes() / 1e6).toFixed(1)} MB); spans past otel.traces.queueSize (8192, the default) dropped and counted. A traced message makes 3 spans here (publish, route, deliver: QoS 0, one subscriber, no ACL asked).`,
      `Spindle ${spindleCommit()}, ${PINNED ? `pinned: each broker on core ${BROKER_CORE} with one worker, the load generator on core ${LOADGEN_CORE}` : 'default worker count, unpinned'}; load generator MQTT 5.0, 16 source addresses, ${SECONDS} s per run, no user properties.`,
    ];
    printResults('OpenTelemetry traces: the message path with tracing off, on with sampling 0, and sampled', rows, notes);
    writeResults('otel', 'OpenTelemetry traces: the message path with tracing off, on with sampling 0, and sampled', rows, notes, { rates: Object.fromEntries(variants.map((v) => [v.name, v.rates])), cores: Object.fromEntries(variants.map((v) => [v.name, v.cores])), cpuMicrosPerMessage: Object.fromEntries(variants.map((v) => [v.name, v.cpu])) });
  } finally {
    for (const v of variants) await v.broker?.stop();
    receiver.close();
  }
}

await main();
