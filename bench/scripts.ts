// The scripts' speed target (issue 14), on one Spindle process with the admin API, driven by
// bench/loadgen, printed against the target and written to bench/results/scripts.{json,md}:
//  1. fan-in QoS 0 with a one-line script on every message: >= 50 % of the rate with no script;
//  2. fan-in QoS 0 with the same script on a filter the fan-in does not match: the messages on
//     other topics are unaffected (the ratio to no script, expected within noise of 1).
// Rounds are interleaved (none, every message, other topics) and the medians compared.
// Needs: make build, cargo build --release -p spindle-loadgen (make bench-scripts does both).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';

const run = promisify(execFile);
const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = Number(process.env.SCRIPTS_ROUNDS ?? 5);
const SECONDS = Number(process.env.SCRIPTS_FANIN_SECONDS ?? 8);
const SCRIPT = 'function convert(topic, payload) { return payload; }';

async function fanin(s: BenchSpindle): Promise<number> {
  const { stdout } = await run(LOADGEN, ['throughput', '--port', String(s.port), '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '2', '--duration', String(SECONDS), '--prefix', 'fa'], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!).rate as number;
}

const rows: Row[] = [];
const notes: string[] = [];
const s = await startBenchSpindle('scripts');
try {
  const rates: Record<'none' | 'every' | 'other', number[]> = { none: [], every: [], other: [] };
  let converted = 0;
  let failed = 0;
  for (let round = 0; round < ROUNDS; round++) {
    rates.none.push(await fanin(s));
    const every = (await s.api('/script/add', { name: `every-${round}`, content: SCRIPT, topic: 'fa/in/+' })).data.id;
    rates.every.push(await fanin(s));
    const rt = (await s.api('/script/runtime', { id: every })).data;
    converted += rt.converted;
    failed += rt.failed.error + rt.failed.timeout + rt.failed.memory + rt.failed.invalid;
    await s.api('/script/delete', { id: every });
    const other = (await s.api('/script/add', { name: `other-${round}`, content: SCRIPT, topic: 'elsewhere/#' })).data.id;
    rates.other.push(await fanin(s));
    await s.api('/script/delete', { id: other });
    console.error(`round ${round}: none ${Math.round(rates.none[round])}, every ${Math.round(rates.every[round])}, other ${Math.round(rates.other[round])} msgs/s`);
  }
  const none = median(rates.none);
  const every = median(rates.every);
  const other = median(rates.other);
  rows.push({ target: 'fan-in QoS 0, no script', measured: Math.round(none), unit: 'msgs/s', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: 'fan-in QoS 0, a one-line script on every message', measured: Math.round(every), unit: 'msgs/s', goal: '>= 50 % of no script', ratio: every / none, met: every / none >= 0.5 ? 'yes' : 'no' });
  rows.push({ target: 'fan-in QoS 0, the script on another topic filter', measured: Math.round(other), unit: 'msgs/s', goal: 'unaffected (~100 %)', ratio: other / none, met: other / none >= 0.9 ? 'yes' : 'no' });
  notes.push(`The script: \`${SCRIPT}\` (each message copied to the pool thread and back), scripts.threads 1 per worker.`);
  notes.push(`fan-in rates per round (msgs/s): none ${rates.none.map(Math.round).join(', ')}; every message ${rates.every.map(Math.round).join(', ')}; other filter ${rates.other.map(Math.round).join(', ')}.`);
  notes.push(`Messages the script converted over all rounds: ${converted.toLocaleString('en-US')}; failed: ${failed}.`);
  writeResults('scripts', 'Scripts: a one-line script on every message of fan-in QoS 0 (10 publishers -> 1 subscriber)', rows, notes);
} finally {
  await s.stop();
}
