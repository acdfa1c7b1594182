// The speed target of PROXY protocol (issue 28): "the CONNECT rate with PROXY protocol on within
// 10 % of off".
//
// Two Spindle processes side by side, the same load against each, rounds interleaved (which goes
// first alternates) and the medians compared:
//  - off: the TCP listener as it is by default;
//  - on: mqtt.tcp.proxyProtocol required, the load generator's source addresses trusted
//    (127.0.0.0/8); each connection starts with a header naming a client of its own (10.x.y.z),
//    written with the CONNECT as a balancer does.
// Cases: the CONNECT rate (TCP connect, header, CONNECT, CONNACK, DISCONNECT, close) with a v2
// header and with a v1 header, against the same rate without one. Anonymous clients: only the
// header's cost is measured. A refusal or an error during a run stops the bench; so does a PROXY
// protocol error counted by the broker (spindle_proxy_protocol_errors_total), or a run on the
// "on" broker that was not seen through headers.
// Printed and written to bench/results/proxy.{json,md}.
// Needs make build and the load generator (make bench-proxy does both). Settings: PROXY_ROUNDS
// (5), PROXY_SECONDS (5), PROXY_CONCURRENCY (64), PROXY_IO (native: mqtt.io of both brokers),
// PROXY_CASES (v2,v1); `--spindle-root DIR` measures another checkout's Spindle.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT, processCpuSeconds, setSpindleRoot, spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { positiveSetting } from './lib/fanin-run.ts';

const run = promisify(execFile);
const LOADGEN = process.env.LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');
const setting = positiveSetting;
const ROUNDS = setting('PROXY_ROUNDS', 5);
const SECONDS = setting('PROXY_SECONDS', 5);
const CONCURRENCY = setting('PROXY_CONCURRENCY', 64);
const IO = process.env.PROXY_IO ?? 'native';
if (IO !== 'native' && IO !== 'node') throw new Error(`PROXY_IO: native or node, not ${IO}`);
const HEADERS = (process.env.PROXY_CASES ?? 'v2,v1').split(',').filter((c): c is 'v1' | 'v2' => c === 'v1' || c === 'v2');
if (HEADERS.length === 0) throw new Error('PROXY_CASES: v2, v1 or both');
const rootArg = process.argv.indexOf('--spindle-root');
const SPINDLE_ROOT = rootArg > 0 ? path.resolve(process.argv[rootArg + 1]) : ROOT;
setSpindleRoot(SPINDLE_ROOT);
const TARGET = 0.9;
const SOURCES = 16;

/** Pinned (the default): each broker on one core with one worker (taskset on all its threads),
 * the load generator on the other. PROXY_PINNED=0: default workers, unpinned. */
const PINNED = process.env.PROXY_PINNED !== '0';
const BROKER_CORE = 0;
const LOADGEN_CORE = 1;

interface Measured {
  rate: number;
  /** The broker's CPU over the whole load generator run, in cores. */
  cores: number;
}

async function loadgen(s: BenchSpindle, header: 'none' | 'v1' | 'v2', what: string): Promise<Measured> {
  const cpu = processCpuSeconds(s.pid);
  const t0 = performance.now();
  const [command, ...pinned] = PINNED ? ['taskset', '-c', String(LOADGEN_CORE), LOADGEN] : [LOADGEN];
  const args = ['connrate', '--concurrency', String(CONCURRENCY), '--warmup', '0.5', '--duration', String(SECONDS), '--prefix', 'pp', '--port', String(s.port), '--version', '5', '--sources', String(SOURCES), '--proxy-protocol', header];
  const { stdout } = await run(command, [...pinned, ...args], { maxBuffer: 16 * 1024 * 1024 });
  const seconds = (performance.now() - t0) / 1000;
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.ok === false || r.refused > 0 || r.errors > 0) {
    throw new Error(`${what}: the run failed: ${r.refused ?? 0} refused, ${r.errors} errors ${JSON.stringify(r.errorSamples)}`);
  }
  return { rate: r.rate, cores: (processCpuSeconds(s.pid) - cpu) / seconds };
}

/** Sum of the samples of `name`; 0 when the broker has none. */
function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{.*\})? (\S+)$/.exec(line);
    if (m !== null && m[1] === name) sum += Number(m[2]);
  }
  return sum;
}

/** The "on" broker must really read headers: a connection without one is refused. */
async function refusesWithoutHeader(s: BenchSpindle): Promise<void> {
  const { stdout } = await run(LOADGEN, ['connrate', '--port', String(s.port), '--version', '5', '--count', '1', '--timeout', '5']);
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.ok !== false) throw new Error(`the broker with PROXY protocol took a connection without a header: ${JSON.stringify(r)}`);
  const errors = metric(await s.text('/prometheus'), 'spindle_proxy_protocol_errors_total');
  if (errors !== 1) throw new Error(`the refused connection was not counted as a PROXY protocol error (${errors})`);
}

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  const common: NodeJS.ProcessEnv = { SPINDLE_MQTT_IO: IO, SPINDLE_LIMITS_AUTH_MAX_FAILURES: '0' };
  if (PINNED) common.SPINDLE_WORKERS = '1';
  const brokers: BenchSpindle[] = [];
  const start = async (name: string, env: NodeJS.ProcessEnv) => {
    const s = await startBenchSpindle(`proxy-${name}`, { env: { ...common, ...env }, root: SPINDLE_ROOT });
    brokers.push(s);
    if (PINNED) await run('taskset', ['-a', '-cp', String(BROKER_CORE), String(s.pid)]);
    return s;
  };
  const rates: Record<string, number[]> = { off: [] };
  const cores: Record<string, number[]> = { off: [] };
  for (const h of HEADERS) {
    rates[h] = [];
    cores[h] = [];
  }
  try {
    const off = await start('off', {});
    const on = await start('on', { SPINDLE_MQTT_TCP_PROXY_PROTOCOL: 'required', SPINDLE_MQTT_TCP_PROXY_PROTOCOL_TRUSTED: '["127.0.0.0/8"]' });
    await refusesWithoutHeader(on);
    const measure = async (which: 'off' | 'v1' | 'v2', round: number) => {
      const s = which === 'off' ? off : on;
      const m = await loadgen(s, which === 'off' ? 'none' : which, `round ${round + 1} ${which}`);
      rates[which].push(m.rate);
      cores[which].push(m.cores);
      console.error(`round ${round + 1}/${ROUNDS} ${which}: ${Math.round(m.rate)} conn/s (broker ${m.cores.toFixed(2)} cores)`);
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order: ('off' | 'v1' | 'v2')[] = round % 2 === 0 ? ['off', ...HEADERS] : [...HEADERS].reverse();
      if (round % 2 === 1) order.push('off');
      for (const which of order) await measure(which, round);
    }
    // Every connection of the "on" broker came through a header (the one refused at the start
    // excepted), and none was refused for it.
    const t = await on.text('/prometheus');
    const errors = metric(t, 'spindle_proxy_protocol_errors_total');
    if (errors !== 1) throw new Error(`the broker with PROXY protocol counted ${errors - 1} PROXY protocol errors during the runs`);
    const rows: Row[] = [];
    const verdicts: string[] = [];
    const p = median(rates.off);
    rows.push({ case: 'CONNECT rate, PROXY protocol off', measured: Math.round(p), unit: 'conn/s', 'broker cores': median(cores.off).toFixed(2), ratio: '' });
    for (const h of HEADERS) {
      const g = median(rates[h]);
      const ratio = g / p;
      rows.push({ case: `CONNECT rate, PROXY protocol ${h} header (required)`, measured: Math.round(g), unit: 'conn/s', 'broker cores': median(cores[h]).toFixed(2), ratio: Number(ratio.toFixed(3)) });
      verdicts.push(`${h} header: ${(ratio * 100).toFixed(1)} % of off (target at least ${TARGET * 100} %): ${ratio >= TARGET ? 'HOLDS' : 'DOES NOT HOLD'}.`);
    }
    const notes = [
      ...verdicts,
      `Per round (${ROUNDS}, interleaved, the order reversed every other round): ${Object.entries(rates).map(([k, v]) => `${k} ${v.map(Math.round).join(', ')}`).join('; ')}.`,
      `Anonymous MQTT 5.0 clients, ${CONCURRENCY} handshakes at once, ${SOURCES} source addresses (127.0.0.1 ..), ${SECONDS} s per run after 0.5 s of warm-up; the header names 10.0.0.0 + n, written with the CONNECT. No PROXY protocol error was counted during the runs.`,
      `Spindle ${spindleCommit()}, mqtt.io ${IO}, ${PINNED ? `pinned: each broker on core ${BROKER_CORE} with one worker, the load generator on core ${LOADGEN_CORE}` : 'default worker count, unpinned'}.`,
    ];
    printResults('PROXY protocol: the CONNECT rate with a header against without', rows, notes);
    if (ROUNDS >= 5 && HEADERS.length === 2) writeResults('proxy', 'PROXY protocol: the CONNECT rate with a header against without', rows, notes, { rates, cores });
    else console.error('(a short run: bench/results/proxy.* are written by runs of 5 rounds or more with both headers)');
  } finally {
    for (const s of brokers) await s.stop();
  }
}

await main();
