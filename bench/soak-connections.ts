// A connection soak: starts Spindle (as the comparison bench does: bin/spindle on a free
// loopback port, admin, WebSocket and $SYS off, a fresh data directory) and opens and closes
// --count (100 000) MQTT connections, --concurrency (200) at a time, in a fixed mix of endings:
//   of every 20 connections, 14 send CONNECT, wait for CONNACK, send DISCONNECT and close; 2 close
//   (FIN) after the CONNACK without DISCONNECT; 2 reset (RST) after the CONNACK; 1 closes before
//   sending CONNECT; 1 sends half a CONNECT and closes.
// MQTT 3.1.1 and 5.0 alternate. The broker's open file descriptors (/proc/<pid>/fd) and RSS
// (VmRSS) are read before (after a warm-up of --warmup connections, 1000 by default), right after
// the last connection closed, and once settled: polled every 250 ms until the descriptors are back
// within the fd slack (16) of before, and RSS is within the RSS bound (64 MiB) of before and moved
// less than 1 MiB in 2 s, for at most --settle seconds (60). The wait matters: Spindle's RSS stays at its peak for
// 10-20 s after a burst of connections, until V8's memory reducer collects the garbage of the
// idle heaps (after 60 000 connections in 8 s: +230 MiB at the end, back below the start 25 s
// later). A last connection then checks the broker still answers.
//
//   node --import tsx bench/soak-connections.ts [--count 100000] [--concurrency 200] [--warmup 1000]
//        [--settle 60] [--fd-slack 16] [--rss-bound 64] [--pinned] [--spindle-root DIR]
//        [--date YYYY-MM-DD]
//
// It fails (exit 1) when the settled descriptor count exceeds the count before by more than the
// slack (16), when settled RSS exceeds RSS before by more than the bound (64 MiB), when any
// connection failed (refused, reset by the broker, not closed by the broker within 10 s of ours,
// ...), or when the broker exited. Writes bench/results/<date>/soak.{json,md} and prints the table.
// --pinned: Spindle with 1 worker on core 0 (this process is not pinned); default: its default
// workers, unpinned. Needs make build (make bench-soak).
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { ROOT, setSpindleRoot, spindleCommit, startBroker, type RunningBroker } from './lib/compare-brokers.ts';
import { MiB, mib, openFds, rssBytes } from './lib/process-stats.ts';
import { machine } from './lib/report.ts';

/** Descriptors the broker may hold above its count before once settled (lazily opened files, timers, ...); --fd-slack. */
const FD_SLACK = 16;
/** Growth of the broker's RSS, before to settled, above which the soak fails; --rss-bound (MiB). */
const RSS_BOUND = 64 * MiB;
/** How long one connection may take, from connect to the broker's close. */
const CONNECTION_TIMEOUT_MS = 10_000;

type Ending = 'disconnect' | 'fin-after-connack' | 'rst-after-connack' | 'close-before-connect' | 'half-connect';

/** The mix, by connection number modulo 20. */
function endingOf(i: number): Ending {
  const k = i % 20;
  if (k < 14) return 'disconnect';
  if (k < 16) return 'fin-after-connack';
  if (k < 18) return 'rst-after-connack';
  if (k < 19) return 'close-before-connect';
  return 'half-connect';
}

const ENDINGS: Ending[] = ['disconnect', 'fin-after-connack', 'rst-after-connack', 'close-before-connect', 'half-connect'];

interface Options {
  count: number;
  concurrency: number;
  warmup: number;
  settleSeconds: number;
  fdSlack: number;
  /** Bytes. */
  rssBound: number;
  pinned: boolean;
  date: string;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { count: 100_000, concurrency: 200, warmup: 1000, settleSeconds: 60, fdSlack: FD_SLACK, rssBound: RSS_BOUND, pinned: false, date: new Date().toISOString().slice(0, 10) };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const count = (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${a}: not a count: ${v}`);
      return n;
    };
    if (a === '--count') o.count = count(next());
    else if (a === '--concurrency') o.concurrency = Math.max(1, count(next()));
    else if (a === '--warmup') o.warmup = count(next());
    else if (a === '--settle') o.settleSeconds = count(next());
    else if (a === '--fd-slack') o.fdSlack = count(next());
    else if (a === '--rss-bound') o.rssBound = count(next()) * MiB;
    else if (a === '--pinned') o.pinned = true;
    else if (a === '--spindle-root') setSpindleRoot(next());
    else if (a === '--date') o.date = next();
    else throw new Error(`unknown option ${a} (see the comment at the top of bench/soak-connections.ts)`);
  }
  return o;
}

/** CONNECT with clean session / clean start, keep alive 30 s, client id `id`. */
function connectPacket(version: 4 | 5, id: string): Buffer {
  const cid = Buffer.from(id);
  const props = version === 5 ? [0] : [];
  const head = [0, 4, 0x4d, 0x51, 0x54, 0x54, version, 0x02, 0, 30, ...props, cid.length >> 8, cid.length & 0xff];
  return Buffer.concat([Buffer.from([0x10, head.length + cid.length, ...head]), cid]);
}

const DISCONNECT = Buffer.from([0xe0, 0]);

/** One connection with `ending`; resolves once the socket is closed, rejects with the failure's kind. */
function oneConnection(port: number, i: number, ending: Ending): Promise<void> {
  const version = i % 2 ? 5 : 4;
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    let settled = false;
    let acked = false;
    let received = Buffer.alloc(0);
    const finish = (failure?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (failure) {
        s.destroy();
        reject(new Error(failure));
      } else resolve();
    };
    const timer = setTimeout(() => finish(acked || ending === 'close-before-connect' || ending === 'half-connect' ? 'timeout: the broker did not close' : 'timeout: no CONNACK'), CONNECTION_TIMEOUT_MS);
    s.setNoDelay(true);
    s.on('error', (err: NodeJS.ErrnoException) => finish(`${acked ? 'after CONNACK' : 'before CONNACK'}: ${err.code ?? err.message}`));
    s.on('close', () => {
      if (!acked && ending !== 'close-before-connect' && ending !== 'half-connect') finish('closed by the broker before CONNACK');
      else finish();
    });
    s.on('connect', () => {
      if (ending === 'close-before-connect') s.end();
      else if (ending === 'half-connect') s.end(connectPacket(version, `soak-${i}`).subarray(0, 8));
      else s.write(connectPacket(version, `soak-${i}`));
    });
    s.on('data', (chunk: Buffer) => {
      if (acked) return;
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      // CONNACK: 0x20, remaining length, flags, return / reason code (0: accepted).
      if (received[0] !== 0x20 || received[3] !== 0) return finish(`CONNACK refused or malformed: ${received.subarray(0, 8).toString('hex')}`);
      acked = true;
      if (ending === 'disconnect') s.end(DISCONNECT);
      else if (ending === 'fin-after-connack') s.end();
      else {
        s.resetAndDestroy();
        finish();
      }
    });
  });
}

interface Tally {
  done: number;
  failures: Map<string, number>;
  byEnding: Record<Ending, number>;
}

/** Opens connections first..first+count-1, `concurrency` at a time. */
async function soak(port: number, first: number, count: number, concurrency: number, onProgress?: (t: Tally) => void): Promise<Tally> {
  const tally: Tally = { done: 0, failures: new Map(), byEnding: Object.fromEntries(ENDINGS.map((e) => [e, 0])) as Record<Ending, number> };
  let next = first;
  const end = first + count;
  const progress = onProgress ? setInterval(() => onProgress(tally), 5000) : undefined;
  const lane = async () => {
    while (next < end) {
      const i = next++;
      const ending = endingOf(i);
      try {
        await oneConnection(port, i, ending);
      } catch (err) {
        const kind = `${ending}: ${(err as Error).message}`;
        tally.failures.set(kind, (tally.failures.get(kind) ?? 0) + 1);
      }
      tally.byEnding[ending]++;
      tally.done++;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  } finally {
    clearInterval(progress);
  }
  return tally;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Reading {
  fds: number;
  rss: number;
}

const read = (pid: number): Reading => ({ fds: openFds(pid), rss: rssBytes(pid) });

/**
 * Polls until the descriptors are within the fd slack of `before`, RSS is within the RSS bound of
 * it and moved less than 1 MiB over 2 s, or --settle seconds passed: a reading above the bounds is
 * waited on (V8 gives memory back some seconds after the load stops), one within them ends the
 * wait once calm.
 */
async function settle(pid: number, before: Reading, o: Options): Promise<{ reading: Reading; seconds: number; stable: boolean }> {
  const t0 = Date.now();
  const history: { t: number; rss: number }[] = [];
  for (;;) {
    const r = read(pid);
    const now = Date.now();
    history.push({ t: now, rss: r.rss });
    const old = history.find((h) => now - h.t <= 2000)!;
    const calm = now - history[0].t >= 2000 && Math.abs(r.rss - old.rss) < MiB;
    const stable = r.fds <= before.fds + o.fdSlack && r.rss <= before.rss + o.rssBound && calm;
    if (stable || now - t0 >= o.settleSeconds * 1000 || !Number.isFinite(r.fds)) return { reading: r, seconds: (now - t0) / 1000, stable };
    await sleep(250);
  }
}

function formatFailures(f: Map<string, number>): string {
  return f.size ? [...f].map(([k, v]) => `${v} x ${k}`).join('; ') : 'none';
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const broker: RunningBroker = await startBroker('spindle', o.pinned ? 'pinned' : 'unpinned');
  const pid = broker.pid;
  let exitCode = 0;
  try {
    console.log(`soak: Spindle ${spindleCommit()} (pid ${pid}, ${o.pinned ? '1 worker on core 0' : 'default workers'}) on port ${broker.port}: ${o.count.toLocaleString('en-US')} connections, ${o.concurrency} at a time, after a warm-up of ${o.warmup}`);
    if (o.warmup) await soak(broker.port, 0, o.warmup, o.concurrency);
    await sleep(1000);
    const before = read(pid);
    console.log(`soak: before: ${before.fds} fds, RSS ${mib(before.rss)}`);
    const t0 = performance.now();
    const tally = await soak(broker.port, o.warmup, o.count, o.concurrency, (t) => {
      const s = (performance.now() - t0) / 1000;
      const failed = [...t.failures.values()].reduce((a, b) => a + b, 0);
      console.log(`soak: ${s.toFixed(0).padStart(4)} s  ${t.done.toLocaleString('en-US')} done (${Math.round(t.done / s)}/s), ${failed} failed, broker ${openFds(pid)} fds, RSS ${mib(rssBytes(pid))}`);
    });
    const seconds = (performance.now() - t0) / 1000;
    const after = read(pid);
    const settled = await settle(pid, before, o);
    // The broker still serves: one more connection, the plain way.
    let alive = broker.alive();
    if (alive) {
      try {
        await oneConnection(broker.port, 0, 'disconnect');
      } catch {
        alive = false;
      }
    }
    const failed = [...tally.failures.values()].reduce((a, b) => a + b, 0);
    const fdGrowth = settled.reading.fds - before.fds;
    const rssGrowth = settled.reading.rss - before.rss;
    const checks = {
      fds: fdGrowth <= o.fdSlack,
      rss: rssGrowth <= o.rssBound,
      failures: failed === 0,
      alive,
    };
    const ok = Object.values(checks).every(Boolean);
    const results = {
      name: 'soak',
      machine: machine(),
      spindle: spindleCommit(),
      options: { count: o.count, concurrency: o.concurrency, warmup: o.warmup, settleSeconds: o.settleSeconds, workers: o.pinned ? '1, pinned to core 0' : 'default' },
      bounds: { fdSlack: o.fdSlack, rssBoundBytes: o.rssBound, connectionTimeoutMs: CONNECTION_TIMEOUT_MS },
      ok,
      checks,
      seconds,
      connectionsPerSecond: o.count / seconds,
      byEnding: tally.byEnding,
      failed,
      failures: Object.fromEntries(tally.failures),
      before,
      after,
      settled: { ...settled.reading, seconds: settled.seconds, stable: settled.stable },
      fdGrowth,
      rssGrowth,
      brokerLog: alive ? undefined : broker.log.join('').slice(-2000),
    };
    const verdict = (pass: boolean) => (pass ? 'pass' : '**FAIL**');
    const md = [
      `## Connection soak`,
      '',
      `${o.count.toLocaleString('en-US')} connections opened and closed, ${o.concurrency} at a time, in ${seconds.toFixed(1)} s: **${Math.round(o.count / seconds).toLocaleString('en-US')} connections/s**; ${failed} failed (${formatFailures(tally.failures)}). Result: **${ok ? 'pass' : 'FAIL'}**.`,
      '',
      `| measure | before | after the last close | settled (${settled.seconds.toFixed(1)} s${settled.stable ? '' : ', not stable'}) | growth | bound | |`,
      `| --- | ---: | ---: | ---: | ---: | ---: | --- |`,
      `| open fds | ${before.fds} | ${after.fds} | ${settled.reading.fds} | ${fdGrowth} | ${o.fdSlack} | ${verdict(checks.fds)} |`,
      `| RSS | ${mib(before.rss)} | ${mib(after.rss)} | ${mib(settled.reading.rss)} | ${mib(rssGrowth)} | ${mib(o.rssBound)} | ${verdict(checks.rss)} |`,
      '',
      `- Endings: ${ENDINGS.map((e) => `${e} ${tally.byEnding[e].toLocaleString('en-US')}`).join(', ')} (of every 20: 14, 2, 2, 1, 1); MQTT 3.1.1 and 5.0 alternate. A connection fails when it is refused, reset or closed by the broker before its CONNACK, or not closed by the broker within ${CONNECTION_TIMEOUT_MS / 1000} s of its own close.`,
      `- Before: after a warm-up of ${o.warmup} connections and 1 s. Settled: polled every 250 ms until the fds were within ${o.fdSlack} of before and RSS within ${mib(o.rssBound)} of before and calm (less than 1 MiB in 2 s), for at most ${o.settleSeconds} s (V8 returns the garbage of a burst some seconds after it ends). After settling, ${alive ? 'one more connection was answered' : '**the broker did not answer one more connection**'}.`,
      `- Spindle ${spindleCommit()}, ${o.pinned ? '1 worker pinned to core 0' : 'its default workers, unpinned'}; the client (this Node process, net sockets) on the same machine. Measured ${results.machine.date} on ${results.machine.cpu} (${results.machine.cores} cores), Node ${results.machine.node}.`,
      '',
    ].join('\n');
    const dir = path.join(ROOT, 'bench/results', o.date);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'soak.json'), JSON.stringify(results, null, 2) + '\n');
    writeFileSync(path.join(dir, 'soak.md'), md);
    console.log('\n' + md);
    console.log(`soak: wrote ${path.relative(ROOT, dir)}/soak.{json,md}`);
    if (!ok) {
      console.error(`soak: FAILED: ${Object.entries(checks).filter(([, v]) => !v).map(([k]) => k).join(', ')}`);
      exitCode = 1;
    }
  } finally {
    await broker.stop();
  }
  process.exitCode = exitCode;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
