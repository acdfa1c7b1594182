// The comparison bench (issues 6 and 11): runs spindle-loadgen (bench/loadgen) against Spindle,
// Debian's Mosquitto, Aedes, rumqttd and Mochi MQTT on this machine, every scenario pinned
// (broker on core 0, generator on core 1, Spindle with one worker) and unpinned (Spindle with its
// default workers), and writes bench/results/<date>/compare.{json,md} with SVG charts and the
// summary table of docs/development/benchmarks.md (--no-readme: not that table).
//
//   node --import tsx bench/compare.ts [--quick] [--only fanin,latency-q0-v4] [--modes pinned]
//        [--brokers spindle,mosquitto,aedes,rumqttd,mochi] [--runs 3] [--no-readme] [--date YYYY-MM-DD]
//        [--spindle-root DIR]   (measure Spindle from another checkout, e.g. a clean worktree)
//
// Runs are interleaved (Spindle, Mosquitto, Aedes, rumqttd, Mochi, then again) so a slow spell of
// the machine hits every broker alike. A run is disturbed when other processes used more than a
// quarter of a core while it ran, or the hypervisor stole time; it is repeated once. Scenarios
// whose runs spread more than 25 % get more runs (up to 5).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

import { ROOT, LOADGEN_CORE, BROKER_NAMES, setSpindleRoot, startBroker, notRun, processCpuSeconds, machineCpu, versions, type BrokerName, type Mode, type RunningBroker } from './lib/compare-brokers.ts';
import { scenarios, QUICK_IDS, type Scenario } from './lib/compare-scenarios.ts';
import { writeCompareReport, type RunRecord, type CompareResults } from './lib/compare-report.ts';
import { machine } from './lib/report.ts';
import { rssBytes } from './lib/process-stats.ts';

const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const FOREIGN_CORES_LIMIT = 0.25;
const STEAL_LIMIT = 0.1;
const SPREAD_LIMIT = 0.25;
const MAX_ATTEMPTS = 2;
const MAX_RUNS = 5;

interface Options {
  quick: boolean;
  only: string[];
  modes: Mode[];
  brokers: BrokerName[];
  runs: number;
  readme: boolean;
  date: string;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { quick: false, only: [], modes: ['pinned', 'unpinned'], brokers: [...BROKER_NAMES], runs: 3, readme: true, date: new Date().toISOString().slice(0, 10) };
  let runsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') o.quick = true;
    else if (a === '--only') o.only.push(...next().split(','));
    else if (a === '--modes') o.modes = next().split(',') as Mode[];
    else if (a === '--brokers') {
      o.brokers = next().split(',') as BrokerName[];
      const unknown = o.brokers.filter((b) => !BROKER_NAMES.includes(b));
      if (unknown.length) throw new Error(`unknown broker ${unknown.join(',')} (one of ${BROKER_NAMES.join(', ')})`);
    }
    else if (a === '--runs') {
      o.runs = Number(next());
      runsGiven = true;
    } else if (a === '--no-readme') o.readme = false;
    else if (a === '--date') o.date = next();
    else if (a === '--spindle-root') setSpindleRoot(next());
    else throw new Error(`unknown option ${a} (see the comment at the top of bench/compare.ts)`);
  }
  if (o.quick && !runsGiven) o.runs = 1;
  return o;
}

function selected(s: Scenario, o: Options): boolean {
  if (o.only.length) return o.only.some((f) => s.id === f || s.family === f || s.id.startsWith(f));
  return !o.quick || QUICK_IDS.has(s.id);
}

/** Installs Mosquitto, rumqttd and Mochi when missing, npm packages (Aedes) when missing, and builds the generator. */
function prepare(): void {
  execFileSync(path.join(ROOT, 'scripts/ensure-bench-brokers.sh'), { stdio: 'inherit' });
  if (!existsSync(path.join(ROOT, 'node_modules/aedes/package.json'))) {
    execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' });
  }
  execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'spindle-loadgen'], { cwd: ROOT, stdio: 'inherit' });
}

interface LoadgenOutput {
  ok: boolean;
  processCpuSeconds?: number;
  cpu?: { fraction: number };
  [key: string]: unknown;
}

function runLoadgen(args: string[], pinned: boolean, timeoutMs: number): Promise<{ out: LoadgenOutput | null; stderr: string }> {
  const argv = [...(pinned ? ['taskset', '-c', String(LOADGEN_CORE)] : []), LOADGEN, ...args];
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', () => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ out: JSON.parse(line) as LoadgenOutput, stderr });
      } catch {
        resolve({ out: null, stderr: stderr || `no result (stdout: ${stdout.slice(-300)})` });
      }
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until a fresh broker's RSS holds still (three readings 0.5 s apart within 1 MiB, 30 s at
 * most), so the memory per idle connection is the connections' and not the start-up's: a broker
 * on a garbage-collected runtime gives back what its start allocated some seconds later, which
 * would otherwise fall inside the measurement (and can even make it negative). Returns the wait.
 */
async function settleRss(pid: number): Promise<number> {
  const t0 = performance.now();
  const readings = [rssBytes(pid)];
  while (performance.now() - t0 < 30_000) {
    await sleep(500);
    readings.push(rssBytes(pid));
    const last = readings.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) <= 1 << 20) break;
  }
  return (performance.now() - t0) / 1000;
}

/** One measured run; the broker is `shared` or started fresh for it. */
async function runOnce(s: Scenario, name: BrokerName, mode: Mode, shared: RunningBroker | null): Promise<RunRecord> {
  const broker = shared ?? (await startBroker(name, mode, s.retainedTopics));
  try {
    if (s.family === 'idle') await settleRss(broker.pid);
    const m0 = machineCpu();
    const b0 = processCpuSeconds(broker.pid);
    const t0 = performance.now();
    const { out, stderr } = await runLoadgen([...s.loadgenArgs, '--port', String(broker.ports[s.version]), '--broker-pid', String(broker.pid)], mode === 'pinned', s.timeoutMs);
    const wall = (performance.now() - t0) / 1000;
    const m1 = machineCpu();
    const brokerCpu = processCpuSeconds(broker.pid) - b0;
    const loadgenCpu = out?.processCpuSeconds ?? 0;
    const foreign = Math.max(0, (m1.busy - m0.busy - brokerCpu - loadgenCpu) / wall);
    const steal = (m1.steal - m0.steal) / wall;
    const crashed = !broker.alive();
    const values: Record<string, number> = {};
    for (const metric of s.metrics) {
      const v = out?.[metric.key];
      if (typeof v === 'number') values[metric.key] = v;
    }
    const loadgenFraction = out?.cpu?.fraction ?? NaN;
    return {
      ok: Boolean(out?.ok) && !crashed,
      values,
      disturbed: foreign > FOREIGN_CORES_LIMIT || steal > STEAL_LIMIT,
      foreignCores: foreign,
      stealCores: steal,
      brokerCores: brokerCpu / wall,
      loadgenCpu: loadgenFraction,
      loadgenBound: loadgenFraction >= 0.95,
      wall,
      failure: crashed ? `broker exited: ${broker.log.join('').slice(-500)}` : out?.ok ? undefined : String(out?.failure ?? (out ? `loss ${out.loss ?? 0}, errors ${out.errors ?? 0}: ${JSON.stringify(out.errorSamples ?? [])}` : stderr.slice(-500))),
      raw: out,
    };
  } finally {
    if (!shared) await broker.stop();
  }
}

/** A run, repeated while it was disturbed by other load (at most MAX_ATTEMPTS in all). */
async function measuredRun(s: Scenario, name: BrokerName, mode: Mode, shared: () => Promise<RunningBroker | null>): Promise<RunRecord> {
  let record: RunRecord | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    record = await runOnce(s, name, mode, await shared());
    record.attempts = attempt;
    const v = s.metrics[0].key;
    const tag = record.ok ? '' : ` FAILED (${record.failure})`;
    const flags = `${record.disturbed ? ' disturbed' : ''}${record.loadgenBound ? ' loadgen-bound' : ''}`;
    console.log(
      `  ${mode.padEnd(8)} ${name.padEnd(9)} ${s.id.padEnd(18)} ${String(Math.round((record.values[v] ?? NaN) * 100) / 100).padStart(12)}` +
        `  broker ${record.brokerCores.toFixed(2)} cores, loadgen ${record.loadgenCpu.toFixed(2)}, other ${record.foreignCores.toFixed(2)}${flags}${tag}`,
    );
    if (!record.disturbed) break;
    await sleep(2000);
  }
  return record!;
}

function spread(values: number[]): number {
  if (values.length < 2) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return median ? (sorted[sorted.length - 1] - sorted[0]) / median : 0;
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  prepare();
  const list = scenarios(o.quick).filter((s) => selected(s, o));
  if (!list.length) throw new Error(`no scenario matches --only ${o.only.join(',')}`);
  console.log(`compare: ${list.length} scenarios x ${o.brokers.join('/')} x ${o.modes.join('/')}, ${o.runs} run(s) each${o.quick ? ' (quick)' : ''}`);
  const results: CompareResults = {
    name: 'compare',
    machine: machine(),
    brokers: versions(),
    options: { quick: o.quick, runs: o.runs, only: o.only },
    scenarios: list.map((s) => ({ id: s.id, family: s.family, title: s.title, version: s.version, qos: s.qos, metrics: s.metrics, loadgenArgs: s.loadgenArgs })),
    runs: [],
  };
  const started = Date.now();
  for (const mode of o.modes) {
    const shared = new Map<BrokerName, RunningBroker>();
    const sharedBroker = (name: BrokerName, s: Scenario) => async () => {
      if (s.fresh) return null;
      const b = shared.get(name);
      if (b?.alive()) return b;
      if (b) console.log(`  ${name} (${mode}) exited; restarting it: ${b.log.join('').slice(-300)}`);
      const fresh = await startBroker(name, mode);
      shared.set(name, fresh);
      return fresh;
    };
    try {
      for (const s of list) {
        const names = o.brokers.filter((n) => notRun(n, s) === undefined);
        const records = new Map<BrokerName, RunRecord[]>(names.map((n) => [n, []]));
        for (let r = 0; r < o.runs; r++) {
          for (const name of names) records.get(name)!.push(await measuredRun(s, name, mode, sharedBroker(name, s)));
        }
        // Too wide a spread: more runs, up to MAX_RUNS.
        for (const name of names) {
          const recs = records.get(name)!;
          while (!o.quick && recs.length < MAX_RUNS && spread(recs.filter((x) => x.ok).map((x) => x.values[s.metrics[0].key])) > SPREAD_LIMIT) {
            console.log(`  spread over ${SPREAD_LIMIT * 100} %: one more run`);
            recs.push(await measuredRun(s, name, mode, sharedBroker(name, s)));
          }
          for (const rec of recs) results.runs.push({ scenario: s.id, broker: name, mode, ...rec });
        }
      }
    } finally {
      for (const b of shared.values()) await b.stop();
    }
  }
  results.seconds = Math.round((Date.now() - started) / 1000);
  const dir = path.join(ROOT, 'bench/results', o.date);
  mkdirSync(dir, { recursive: true });
  writeCompareReport(results, dir, o.readme ? path.join(ROOT, 'docs/development/benchmarks.md') : null);
  console.log(`compare: wrote ${path.relative(ROOT, dir)}/compare.{json,md} and charts in ${results.seconds} s`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
