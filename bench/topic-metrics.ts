// The cost of topic metrics on the data path (issue 30): QoS 0 fan-in (10 publishers, 1
// subscriber) against three Spindle processes side by side, rounds interleaved (the order rotates
// each round) and the medians compared:
//  - plain: no topic metrics filter;
//  - unmatched: TOPIC_METRICS_FILTERS (100) filters `op/none<i>/#`: every PUBLISH walks them one
//    level (in the match cache after the first) and matches none;
//  - matched: `op/in/+` and 99 of those: every PUBLISH is counted in, and its delivery out.
// A loss or an error stops the bench; the matched broker's counts are checked against the
// deliveries. Printed and written to bench/results/topic-metrics.{md,json}.
// Needs make build and the load generator (make bench-topic-metrics does both). Settings:
// TOPIC_METRICS_ROUNDS (5), TOPIC_METRICS_FILTERS (100), TOPIC_METRICS_SECONDS (5),
// TOPIC_METRICS_PINNED (1: each broker on core 0 with one worker, the load generator on core 1).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { LOADGEN, loadgenRun, positiveSetting } from './lib/fanin-run.ts';

const run = promisify(execFile);
const setting = positiveSetting;
const ROUNDS = setting('TOPIC_METRICS_ROUNDS', 5);
const FILTERS = setting('TOPIC_METRICS_FILTERS', 100);
const SECONDS = setting('TOPIC_METRICS_SECONDS', 5);
const PREFIX = 'op';
const ARGS = ['throughput', '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', PREFIX];
const PINNED = process.env.TOPIC_METRICS_PINNED !== '0';
const BROKER_CORE = 0;
const LOADGEN_CORE = 1;

type Case = 'plain' | 'unmatched' | 'matched';
const CASES: Case[] = ['plain', 'unmatched', 'matched'];

function filters(which: Case): string[] {
  const none = Array.from({ length: FILTERS }, (_, i) => `${PREFIX}/none${i}/#`);
  if (which === 'plain') return [];
  if (which === 'unmatched') return none;
  return [`${PREFIX}/in/+`, ...none.slice(0, FILTERS - 1)];
}

function loadgen(s: BenchSpindle, what: string): Promise<{ rate: number; cores: number }> {
  return loadgenRun(s, ARGS, PINNED ? LOADGEN_CORE : null, what);
}

/** The sum of a topic metrics series of /prometheus, for one filter and direction. */
async function counted(s: BenchSpindle, filter: string, direction: 'in' | 'out'): Promise<number> {
  const t = await s.text('/prometheus');
  let sum = 0;
  for (const m of t.matchAll(/^spindle_topic_messages_total\{filter="([^"]*)",direction="(\w+)",qos="\d"\} (\S+)$/gm)) if (m[1] === filter && m[2] === direction) sum += Number(m[3]);
  return sum;
}

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  const common: Record<string, string> = PINNED ? { SPINDLE_WORKERS: '1' } : {};
  const brokers = new Map<Case, BenchSpindle>();
  try {
    for (const which of CASES) {
      const s = await startBenchSpindle(`topic-metrics-${which}`, { env: { ...common, SPINDLE_TOPIC_METRICS_FILTERS: JSON.stringify(filters(which)) } });
      brokers.set(which, s);
      if (PINNED) await run('taskset', ['-a', '-cp', String(BROKER_CORE), String(s.pid)]);
      const { data } = await s.api('/api/topic-metrics', undefined, 'GET');
      if (data.length !== filters(which).length) throw new Error(`${which}: ${data.length} filters, not ${filters(which).length}`);
    }
    const rates: Record<Case, number[]> = { plain: [], unmatched: [], matched: [] };
    const cores: Record<Case, number[]> = { plain: [], unmatched: [], matched: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < CASES.length; k++) {
        const which = CASES[(round + k) % CASES.length];
        const m = await loadgen(brokers.get(which)!, `round ${round + 1} ${which}`);
        rates[which].push(m.rate);
        cores[which].push(m.cores);
        console.error(`round ${round + 1}/${ROUNDS} ${which}: ${Math.round(m.rate)} msgs/s (broker ${m.cores.toFixed(2)} cores)`);
      }
    }
    const matched = brokers.get('matched')!;
    const inCount = await counted(matched, `${PREFIX}/in/+`, 'in');
    const outCount = await counted(matched, `${PREFIX}/in/+`, 'out');
    if (inCount === 0 || outCount === 0) throw new Error(`the matched broker counted in ${inCount}, out ${outCount}`);
    const unmatchedIn = await counted(brokers.get('unmatched')!, `${PREFIX}/none0/#`, 'in');
    if (unmatchedIn !== 0) throw new Error(`the unmatched broker counted ${unmatchedIn} messages: the load must match none`);
    const p = median(rates.plain);
    const ratio = (c: Case) => median(rates[c]) / p;
    const rows: Row[] = [
      { case: 'fan-in QoS 0, 10 → 1: no filter', measured: Math.round(p), unit: 'msgs/s', 'broker cores': median(cores.plain).toFixed(2), ratio: '' },
      { case: `fan-in QoS 0, 10 → 1: ${FILTERS} filters matching nothing`, measured: Math.round(median(rates.unmatched)), unit: 'msgs/s', 'broker cores': median(cores.unmatched).toFixed(2), ratio: Number(ratio('unmatched').toFixed(3)) },
      { case: `fan-in QoS 0, 10 → 1: ${FILTERS} filters, one matching every message`, measured: Math.round(median(rates.matched)), unit: 'msgs/s', 'broker cores': median(cores.matched).toFixed(2), ratio: Number(ratio('matched').toFixed(3)) },
    ];
    const notes = [
      `${FILTERS} filters matching nothing: ${(ratio('unmatched') * 100).toFixed(1)} % of none; one of ${FILTERS} matching every message (counted in and out): ${(ratio('matched') * 100).toFixed(1)} %.`,
      `Per round (${ROUNDS}, the order rotating): ${CASES.map((c) => `${c} ${rates[c].map(Math.round).join(', ')}`).join('; ')}.`,
      `The matched broker counted ${inCount} messages in and ${outCount} out for ${PREFIX}/in/+ (warm-up included); the unmatched one none.`,
      `Spindle ${spindleCommit()}, ${PINNED ? `pinned: each broker on core ${BROKER_CORE} with one worker, the load generator on core ${LOADGEN_CORE}` : 'default worker count, unpinned'}; load generator MQTT 5.0, 16 source addresses, ${SECONDS} s per run.`,
    ];
    printResults('Topic metrics: QoS 0 fan-in with filters against none', rows, notes);
    writeResults('topic-metrics', 'Topic metrics: QoS 0 fan-in with filters against none', rows, notes, { rates, cores });
  } finally {
    for (const s of brokers.values()) await s.stop();
  }
}

await main();
