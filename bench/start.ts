// How fast the broker starts and how much memory it holds idle: `spindle` is exec'd with the
// defaults of `make run` (LOCAL store, admin API on, MQTT over TCP and WebSocket) on free ports,
// and the bench measures, from the spawn:
//   - MQTT open: the first TCP connection whose CONNECT gets a CONNACK;
//   - /health UP: the first GET /health answered 200 with status UP;
//   - RSS after start: the resident memory of the broker and every process under it (children
//     such as nats-server included), 5 s after /health was UP;
//   - idle RSS: the same 15 s after /health was UP, once V8's memory reducer has run (it shrinks
//     the heaps of an isolate that stopped allocating, about 8 s after the start's garbage).
// With one worker and with one per core, RUNS times each (the median is reported, and every run
// is in the JSON). Targets (issue 26): MQTT open within 500 ms, /health within 1 s, idle RSS at
// most 100 MB with two workers. Writes bench/results/start.{json,md}.
//   node --import tsx bench/start.ts [--runs N] [--root DIR] [--bin PATH]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { freePort } from './lib/compare-brokers.ts';
import { rssBytes, MiB } from './lib/process-stats.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, root: { type: 'string' }, bin: { type: 'string' }, out: { type: 'string' } } });
const RUNS = Number(values.runs);
const root = path.resolve(values.root ?? ROOT);
const bin = path.resolve(values.bin ?? path.join(root, 'bin/spindle'));
const AFTER_START_MS = 5000;
const IDLE_MS = 15_000;
const POLL_MS = 2;
const TIMEOUT_MS = 30_000;
const TARGETS = { mqttMs: 500, healthMs: 1000, rssMiB: 100 };

interface Run { workers: number; mqttMs: number; healthMs: number; startRssBytes: number; rssBytes: number; processes: number }

/** The pid and every descendant (/proc/<pid>/task/<tid>/children). */
function tree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    // Children of every thread (a worker thread's child is listed under that thread's task).
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        for (const c of readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) out.push(Number(c));
      } catch {
        // the thread ended
      }
    }
  }
  return out;
}

const CONNECT = Buffer.from([0x10, 0x0d, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 0x73]);

/** Resolves true when a CONNECT on `port` gets a CONNACK accepting it. */
function mqttAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once('error', () => done(false));
    s.once('connect', () => s.write(CONNECT));
    s.once('data', (b) => done(b[0] === 0x20 && b[3] === 0));
    s.setTimeout(2000, () => done(false));
  });
}

async function healthUp(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    return res.status === 200 && ((await res.json()) as { status?: string }).status === 'UP';
  } catch {
    return false;
  }
}

async function until(probe: () => Promise<boolean>, since: number, exited: () => boolean): Promise<number> {
  for (;;) {
    if (await probe()) return performance.now() - since;
    if (exited()) throw new Error('the broker exited');
    if (performance.now() - since > TIMEOUT_MS) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function once(workers: number): Promise<Run> {
  const [port, wsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-start-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SPINDLE_WORKERS: String(workers),
    SPINDLE_DATA_DIR: dir,
    SPINDLE_MQTT_HOST: '127.0.0.1',
    SPINDLE_MQTT_TCP_PORT: String(port),
    SPINDLE_MQTT_WS_PORT: String(wsPort),
    SPINDLE_ADMIN_HOST: '127.0.0.1',
    SPINDLE_ADMIN_PORT: String(adminPort),
    SPINDLE_ADMIN_PASSWORD: 'bench-start-password',
  };
  const t0 = performance.now();
  const child = spawn(bin, [], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (b) => (stderr += b));
  let exited = false;
  const exit = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  try {
    const [mqttMs, healthMs] = await Promise.all([until(() => mqttAnswers(port), t0, () => exited), until(() => healthUp(adminPort), t0, () => exited)]);
    const treeRss = () => tree(child.pid!).reduce((sum, p) => sum + (rssBytes(p) || 0), 0);
    const healthAt = t0 + healthMs;
    await new Promise((r) => setTimeout(r, healthAt + AFTER_START_MS - performance.now()));
    const startRss = treeRss();
    await new Promise((r) => setTimeout(r, healthAt + IDLE_MS - performance.now()));
    const rss = treeRss();
    return { workers, mqttMs, healthMs, startRssBytes: startRss, rssBytes: rss, processes: tree(child.pid!).length };
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${stderr.slice(-2000)}`);
  } finally {
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(t);
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const variants = [...new Set([1, os.availableParallelism()])];
const runs: Run[] = [];
for (const workers of variants) {
  for (let i = 0; i < RUNS; i++) {
    const r = await once(workers);
    runs.push(r);
    console.log(`workers ${workers} run ${i + 1}: MQTT ${r.mqttMs.toFixed(0)} ms, /health ${r.healthMs.toFixed(0)} ms, RSS ${(r.startRssBytes / MiB).toFixed(1)} MiB after start, ${(r.rssBytes / MiB).toFixed(1)} MiB idle, ${r.processes} process(es)`);
  }
}

const rows = variants.map((workers) => {
  const rs = runs.filter((r) => r.workers === workers);
  return {
    workers,
    mqttMs: median(rs.map((r) => r.mqttMs)),
    healthMs: median(rs.map((r) => r.healthMs)),
    startRssMiB: median(rs.map((r) => r.startRssBytes)) / MiB,
    rssMiB: median(rs.map((r) => r.rssBytes)) / MiB,
    processes: median(rs.map((r) => r.processes)),
  };
});
const met = (v: number, t: number) => (v <= t ? 'met' : 'not met');
const md = [
  `# Start and idle memory (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, median of ${RUNS})`,
  '',
  `\`${path.relative(root, bin) || bin}\` exec'd with \`make run\`'s defaults (LOCAL store, admin API, TCP and WebSocket listeners), no clients. Times from the spawn; RSS of the broker and its child processes 5 s after /health was UP, and idle: 15 s after (V8's memory reducer has shrunk the heaps by then). 1 MB = 10^6 bytes, 1 MiB = 2^20.`,
  '',
  '| workers | MQTT open | /health UP | RSS 5 s after | idle RSS (15 s) | processes |',
  '|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.workers} | ${r.mqttMs.toFixed(0)} ms | ${r.healthMs.toFixed(0)} ms | ${r.startRssMiB.toFixed(1)} MiB | ${r.rssMiB.toFixed(1)} MiB (${((r.rssMiB * MiB) / 1e6).toFixed(1)} MB) | ${r.processes} |`),
  '',
  `Targets: MQTT open within ${TARGETS.mqttMs} ms (${rows.map((r) => `${r.workers} worker(s): ${met(r.mqttMs, TARGETS.mqttMs)}`).join(', ')}); /health within ${TARGETS.healthMs} ms (${rows.map((r) => `${r.workers}: ${met(r.healthMs, TARGETS.healthMs)}`).join(', ')}); idle RSS at most ${TARGETS.rssMiB} MB with two workers (${rows.filter((r) => r.workers === 2).map((r) => met(r.rssMiB * MiB / 1e6, TARGETS.rssMiB)).join('') || 'no two-worker row'}).`,
  '',
].join('\n');
console.log(`\n${md}`);
const out = values.out ?? path.join(ROOT, 'bench/results/start');
writeFileSync(`${out}.json`, JSON.stringify({ date: new Date().toISOString(), targets: TARGETS, rows, runs }, null, 2));
writeFileSync(`${out}.md`, md);
console.log(`wrote ${out}.json and ${out}.md`);
