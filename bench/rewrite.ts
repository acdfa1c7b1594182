// The cost of topic rewrite on traffic it does not rewrite (issue 29): "the bench shows unmatched
// traffic within 3 % of no rules". Two Spindle processes side by side, the same load against each,
// rounds interleaved (which goes first alternates) and the medians compared:
//  - plain: no rewrite rule;
//  - rules: REWRITE_RULES (100) rules of action `all` whose source filters are `op/none<i>/#`: each
//    shares the load's first level (op/...), so every rule's filter is walked a level for every
//    PUBLISH, and none matches (no regex runs, nothing is rewritten; checked from the metrics).
// Case: fan-in QoS 0 (10 publishers, 1 subscriber). A loss or an error stops the bench.
// Printed and written to bench/results/rewrite.{md,json} (the settings in its notes).
// Needs make build and the load generator (make bench-rewrite does both). Settings:
// REWRITE_ROUNDS (5), REWRITE_RULES (100), REWRITE_SECONDS (5), REWRITE_PINNED (1: each broker on
// core 0 with one worker, the load generator on core 1, as bench/operator.ts).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { spindleCommit } from './lib/compare-brokers.ts';
import { median, printResults, writeResults, type Row } from './lib/report.ts';
import { LOADGEN, loadgenRun, positiveSetting } from './lib/fanin-run.ts';

const run = promisify(execFile);
const setting = positiveSetting;
const ROUNDS = setting('REWRITE_ROUNDS', 5);
const RULES = setting('REWRITE_RULES', 100);
const SECONDS = setting('REWRITE_SECONDS', 5);
const PREFIX = 'op';
const TARGET = 0.97;
const ARGS = ['throughput', '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '1', '--duration', String(SECONDS), '--prefix', PREFIX];
const PINNED = process.env.REWRITE_PINNED !== '0';
const BROKER_CORE = 0;
const LOADGEN_CORE = 1;

function rules(): unknown[] {
  return Array.from({ length: RULES }, (_, i) => ({ action: 'all', sourceFilter: `${PREFIX}/none${i}/#`, regex: `^${PREFIX}/none${i}/(.+)$`, destination: `moved/${i}/$1` }));
}

function loadgen(s: BenchSpindle, what: string): Promise<{ rate: number; cores: number }> {
  return loadgenRun(s, ARGS, PINNED ? LOADGEN_CORE : null, what);
}

/** Topics the rules rewrote (must stay 0: the load matches none). */
async function rewritten(s: BenchSpindle): Promise<number> {
  const t = await s.text('/prometheus');
  let sum = 0;
  for (const m of t.matchAll(/^spindle_rewrite_total\{[^}]*\} (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

async function main(): Promise<void> {
  if (!existsSync(LOADGEN)) throw new Error(`${LOADGEN} is missing: cargo build --release -p spindle-loadgen (or set LOADGEN)`);
  const common: Record<string, string> = PINNED ? { SPINDLE_WORKERS: '1' } : {};
  const brokers: BenchSpindle[] = [];
  const start = async (name: string, env: Record<string, string>) => {
    const s = await startBenchSpindle(`rewrite-${name}`, { env: { ...common, ...env } });
    brokers.push(s);
    if (PINNED) await run('taskset', ['-a', '-cp', String(BROKER_CORE), String(s.pid)]);
    return s;
  };
  try {
    const plain = await start('plain', {});
    const ruled = await start('rules', { SPINDLE_REWRITE: JSON.stringify(rules()) });
    const { data } = await ruled.api('/api/rewrite', undefined, 'GET');
    if (data?.rules?.length !== RULES) throw new Error(`the rules broker holds ${data?.rules?.length} rules, not ${RULES}`);
    const rates: Record<'plain' | 'rules', number[]> = { plain: [], rules: [] };
    const cores: Record<'plain' | 'rules', number[]> = { plain: [], rules: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order: ['plain' | 'rules', BenchSpindle][] = round % 2 === 0 ? [['plain', plain], ['rules', ruled]] : [['rules', ruled], ['plain', plain]];
      for (const [which, s] of order) {
        const m = await loadgen(s, `round ${round + 1} ${which}`);
        rates[which].push(m.rate);
        cores[which].push(m.cores);
        console.error(`round ${round + 1}/${ROUNDS} ${which}: ${Math.round(m.rate)} msgs/s (broker ${m.cores.toFixed(2)} cores)`);
      }
    }
    const n = await rewritten(ruled);
    if (n !== 0) throw new Error(`the rules rewrote ${n} topics: the load must match none`);
    const p = median(rates.plain);
    const r = median(rates.rules);
    const ratio = r / p;
    const rows: Row[] = [
      { case: 'fan-in QoS 0, 10 → 1: no rewrite rule', measured: Math.round(p), unit: 'msgs/s', 'broker cores': median(cores.plain).toFixed(2), ratio: '' },
      { case: `fan-in QoS 0, 10 → 1: ${RULES} rules matching nothing`, measured: Math.round(r), unit: 'msgs/s', 'broker cores': median(cores.rules).toFixed(2), ratio: Number(ratio.toFixed(3)) },
    ];
    const notes = [
      `${RULES} rules matching nothing: ${(ratio * 100).toFixed(1)} % of no rules (target at least ${TARGET * 100} %): ${ratio >= TARGET ? 'HOLDS' : 'DOES NOT HOLD'}.`,
      `Per round (${ROUNDS}, interleaved, which broker goes first alternating): plain ${rates.plain.map(Math.round).join(', ')}; rules ${rates.rules.map(Math.round).join(', ')}.`,
      `Rules: action all, source filters ${PREFIX}/none<i>/# (the load publishes to ${PREFIX}/...: each filter is walked one level per PUBLISH, no regex runs); spindle_rewrite_total stayed 0.`,
      `Spindle ${spindleCommit()}, ${PINNED ? `pinned: each broker on core ${BROKER_CORE} with one worker, the load generator on core ${LOADGEN_CORE}` : 'default worker count, unpinned'}; load generator MQTT 5.0, 16 source addresses, ${SECONDS} s per run.`,
    ];
    printResults('Topic rewrite: unmatched traffic with rules against none', rows, notes);
    writeResults('rewrite', 'Topic rewrite: unmatched traffic with rules against none', rows, notes, { rates, cores });
  } finally {
    for (const s of brokers) await s.stop();
  }
}

await main();
