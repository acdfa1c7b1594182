// The scale run: --count (1 000 000) idle MQTT connections to one Spindle, opened by
// spindle-loadgen's idle-scale scenario from source addresses 127.0.0.2, 127.0.0.3, ... (each
// client socket bound to its address before connect; --per-source, 50 000, connections per
// address, fewer when the kernel's ephemeral port range is smaller), kept open for --hold seconds
// (10), then answered by one PINGREQ round. Reports the broker's RSS per connection (RSS growth /
// connections held), the kernel's slab memory per connection (both ends of every connection are
// on this machine), the time to connect them all and connections per second; when it cannot reach
// N, the most it held and what stopped it: the load generator's failures by kind (connect
// EADDRNOTAVAIL, connect EMFILE, closed by the broker, no CONNACK (timeout), ...) and whether the
// broker exited (killed: most likely the kernel's OOM killer).
//
//   node --import tsx bench/scale-idle.ts [--count 1000000] [--per-source 50000] [--handshakes 256]
//        [--hold 10] [--stall 30] [--version 4|5] [--pinned] [--spindle-root DIR] [--date YYYY-MM-DD]
//
// What it needs, checked and printed first (it changes no kernel setting; see "Kernel settings" in
// docs/operating/deployment.md): the broker an open-file limit above N (it starts Spindle through
// `ulimit -n N+1024`, which takes as root up to fs.nr_open; Node raises its soft limit to the hard
// one by itself), the same for the load generator, which raises its own; fs.nr_open and
// fs.file-max above that (both ends: about 2N files on this machine); net.ipv4.ip_local_port_range
// wide enough for --per-source; somaxconn; tcp_mem; nf_conntrack_max where connections are
// tracked; and memory: about 5 KB per connection for Spindle, 4 KB per socket for the kernel (two
// sockets per connection here) and 0.3 KB for the load generator.
// Writes bench/results/<date>/scale-idle.{json,md} and prints them. Exit 1 when N was not held.
// Needs make build and cargo build --release -p spindle-loadgen (make bench-scale).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { ROOT, setSpindleRoot, spindleCommit, startBroker } from './lib/compare-brokers.ts';
import { mib, nofileLimit, openFds, rssBytes, sysctl } from './lib/process-stats.ts';
import { machine } from './lib/report.ts';

const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
/** Files the broker and the load generator hold besides their connections. */
const FD_HEADROOM = 1024;
/** Planning figures (docs/operating/deployment.md): bytes per connection. */
const PLAN = { broker: 5200, kernelPerSocket: 3800, loadgen: 300 };

interface Options {
  count: number;
  perSource: number;
  handshakes: number;
  hold: number;
  stall: number;
  version: 4 | 5;
  pinned: boolean;
  date: string;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { count: 1_000_000, perSource: 50_000, handshakes: 256, hold: 10, stall: 30, version: 4, pinned: false, date: new Date().toISOString().slice(0, 10) };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const positive = (v: string) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${a}: not a positive number: ${v}`);
      return n;
    };
    if (a === '--count') o.count = Math.floor(positive(next()));
    else if (a === '--per-source') o.perSource = Math.floor(positive(next()));
    else if (a === '--handshakes') o.handshakes = Math.floor(positive(next()));
    else if (a === '--hold') o.hold = positive(next());
    else if (a === '--stall') o.stall = positive(next());
    else if (a === '--version') {
      const v = next();
      if (v !== '4' && v !== '5') throw new Error(`--version: 4 (3.1.1) or 5, not ${v}`);
      o.version = Number(v) as 4 | 5;
    } else if (a === '--pinned') o.pinned = true;
    else if (a === '--spindle-root') setSpindleRoot(next());
    else if (a === '--date') o.date = next();
    else throw new Error(`unknown option ${a} (see the comment at the top of bench/scale-idle.ts)`);
  }
  return o;
}

interface Need {
  what: string;
  now: string;
  needs: string;
  ok: boolean;
  /** What to do when not ok. */
  fix?: string;
}

const num = (s: string | undefined) => (s === undefined ? NaN : Number(s.split(' ')[0]));
const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');

function meminfo(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync('/proc/meminfo', 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]] = Number(m[2]) * 1024;
  }
  return out;
}

/** "TCP: inuse 23 orphan 0 tw 4861 alloc 23 mem 157" of /proc/net/sockstat as numbers (mem in pages). */
function tcpSockstat(): Record<string, number> {
  const line = readFileSync('/proc/net/sockstat', 'utf8').split('\n').find((l) => l.startsWith('TCP:')) ?? '';
  const parts = line.replace('TCP:', '').trim().split(/\s+/);
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < parts.length; i += 2) out[parts[i]] = Number(parts[i + 1]);
  return out;
}

/** The source addresses and the per-address count this run uses, given the ephemeral port range. */
function plan(o: Options): { perSource: number; sources: number; portRange: [number, number]; reduced: boolean } {
  const [lo, hi] = (sysctl('net.ipv4.ip_local_port_range') ?? '32768 60999').split(' ').map(Number);
  // A few ports stay free for anything else on the address (and for TIME_WAIT of earlier runs).
  const usable = Math.floor((hi - lo + 1) * 0.95);
  const perSource = Math.min(o.perSource, usable);
  return { perSource, sources: Math.ceil(o.count / perSource), portRange: [lo, hi], reduced: perSource < o.perSource };
}

/** Whether a process started from here may be given `n` open files (raising the hard limit takes CAP_SYS_RESOURCE, which root may lack in a container). */
function canSetNofile(n: number): boolean {
  return spawnSync('bash', ['-c', `ulimit -n ${n}`], { stdio: 'ignore' }).status === 0;
}

function needs(o: Options, p: ReturnType<typeof plan>): Need[] {
  const n = o.count;
  const nrOpen = num(sysctl('fs.nr_open'));
  const fileMax = num(sysctl('fs.file-max'));
  const somaxconn = num(sysctl('net.core.somaxconn'));
  const tcpMem = (sysctl('net.ipv4.tcp_mem') ?? '').split(' ').map(Number);
  const conntrackMax = sysctl('net.netfilter.nf_conntrack_max');
  const conntrackCount = num(sysctl('net.netfilter.nf_conntrack_count'));
  const self = nofileLimit('self');
  const mem = meminfo();
  const memNeed = n * (PLAN.broker + 2 * PLAN.kernelPerSocket + PLAN.loadgen);
  const perProcess = n + FD_HEADROOM;
  const settable = canSetNofile(perProcess);
  const list: Need[] = [
    {
      what: 'open files per process (broker; the load generator alike)',
      now: `hard limit ${fmt(self.hard)}, ${settable ? `raised to ${fmt(perProcess)} for the run` : 'which this user may not raise (no CAP_SYS_RESOURCE)'}`,
      needs: fmt(perProcess),
      ok: self.hard >= perProcess || settable,
      fix: `run it from a shell whose hard limit is above ${fmt(perProcess)} (as root with CAP_SYS_RESOURCE: ulimit -n ${perProcess}; limits.conf nofile; a container's --ulimit nofile=...), and fs.nr_open above that`,
    },
    { what: 'fs.nr_open (the most a process may be given)', now: fmt(nrOpen), needs: fmt(perProcess), ok: nrOpen >= perProcess, fix: `sysctl -w fs.nr_open=${Math.max(2_097_152, perProcess)}` },
    { what: 'fs.file-max (open files, system-wide: both ends are here)', now: fmt(fileMax), needs: fmt(2 * n + 65536), ok: fileMax >= 2 * n + 65536, fix: `sysctl -w fs.file-max=${Math.max(4_194_304, 2 * n + 65536)}` },
    {
      what: 'net.ipv4.ip_local_port_range (ports per source address)',
      now: `${p.portRange[0]}-${p.portRange[1]} (${fmt(p.portRange[1] - p.portRange[0] + 1)})`,
      needs: `${fmt(o.perSource)} per address${p.reduced ? `: this run uses ${fmt(p.perSource)} per address instead, ${p.sources} addresses` : ''}`,
      ok: !p.reduced,
      fix: 'sysctl -w net.ipv4.ip_local_port_range="1024 65535"',
    },
    { what: 'net.core.somaxconn (accept queue; Spindle asks 1024)', now: fmt(somaxconn), needs: '1,024', ok: somaxconn >= 1024, fix: 'sysctl -w net.core.somaxconn=65535' },
    {
      what: 'net.ipv4.tcp_mem (pages of TCP buffers, system-wide: min pressure max)',
      now: tcpMem.join(' '),
      // The PINGREQ round puts one small packet (about 1 KB of buffer accounting) on each socket at once.
      needs: `pressure above ${fmt((2 * n * 1024) / 4096)} pages for the PINGREQ round`,
      ok: (tcpMem[1] ?? 0) * 4096 >= 2 * n * 1024,
      fix: 'sysctl -w net.ipv4.tcp_mem="<min> <pressure> <max>" (pages; the default scales with RAM)',
    },
    ...(conntrackMax === undefined
      ? []
      : [
          {
            what: 'net.netfilter.nf_conntrack_max (where connections are tracked)',
            now: `${fmt(num(conntrackMax))} (${fmt(conntrackCount)} tracked now)`,
            needs: conntrackCount > 0 ? fmt(n + 65536) : `${fmt(n + 65536)} if connections are tracked (none are now)`,
            ok: num(conntrackMax) >= n + 65536 || conntrackCount === 0,
            fix: `sysctl -w net.netfilter.nf_conntrack_max=${Math.max(2_097_152, n + 65536)}`,
          },
        ]),
    {
      what: 'memory (MemAvailable)',
      now: mib(mem.MemAvailable),
      needs: `about ${mib(memNeed)} (Spindle ${PLAN.broker} B, kernel 2 x ${PLAN.kernelPerSocket} B, load generator ${PLAN.loadgen} B per connection)`,
      ok: mem.MemAvailable >= memNeed,
      fix: 'a larger machine, or a smaller --count',
    },
  ];
  return list;
}

interface LoadgenResult {
  ok: boolean;
  stopReason: string;
  connected: number;
  maxHeld: number;
  heldConnected: number;
  heldEnd: number;
  pingResponses: number;
  failed: number;
  unanswered: number;
  notTried: number;
  failures: Record<string, number>;
  errorSamples: string[];
  connectSeconds: number;
  phaseSeconds: number;
  rate: number;
  rssBefore: number;
  rssConnected: number;
  rssAfter: number | null;
  bytesPerConnection: number | null;
  nofile: number;
  nofileHard: number;
  [key: string]: unknown;
}

function runLoadgen(args: string[], timeoutMs: number): Promise<{ out: LoadgenResult | null; code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    // stderr (its progress lines) goes straight to ours.
    const child = spawn(LOADGEN, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ out: JSON.parse(line) as LoadgenResult, code, stdout });
      } catch {
        resolve({ out: null, code, stdout });
      }
    });
  });
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const p = plan(o);
  const list = needs(o, p);
  console.log(`scale-idle: ${fmt(o.count)} idle connections from ${p.sources} source address${p.sources === 1 ? '' : 'es'} (127.0.0.2 on, ${fmt(p.perSource)} each at most)`);
  console.log('scale-idle: what this run needs:');
  for (const x of list) console.log(`  ${x.ok ? 'ok     ' : 'MISSING'} ${x.what}: ${x.now}; needs ${x.needs}${x.ok ? '' : `\n          fix: ${x.fix}`}`);

  const broker = await startBroker('spindle', o.pinned ? 'pinned' : 'unpinned', 0, o.count + FD_HEADROOM);
  const pid = broker.pid;
  const brokerLimit = nofileLimit(pid);
  console.log(`scale-idle: Spindle ${spindleCommit()} (pid ${pid}, ${o.pinned ? '1 worker on core 0' : 'default workers'}) on port ${broker.port}, open-file limit ${fmt(brokerLimit.soft)} (hard ${fmt(brokerLimit.hard)})`);
  if (brokerLimit.soft < o.count + 16) console.log(`scale-idle: the broker may open only ${fmt(brokerLimit.soft)} files: it will stop near that many connections (EMFILE on accept)`);

  let result: LoadgenResult | null = null;
  let loadgenCode: number | null = null;
  const memBefore = meminfo();
  const sockBefore = tcpSockstat();
  const fdsBefore = openFds(pid);
  let memHeld: Record<string, number> = {};
  let sockHeld: Record<string, number> = {};
  let brokerExit: string | undefined;
  let peakBrokerFds = fdsBefore;
  try {
    const first = 0x7f000002;
    const lastAddr = first + p.sources - 1;
    const ip = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
    const args = [
      'idle-scale',
      '--port', String(broker.port),
      '--broker-pid', String(pid),
      '--version', String(o.version),
      '--connections', String(o.count),
      '--source-addrs', `${ip(first)}-${ip(lastAddr)}`,
      '--handshakes', String(o.handshakes),
      '--hold', String(o.hold),
      '--stall', String(o.stall),
    ];
    // The kernel's memory at the peak: read every second, kept when the TCP sockets in use are at
    // their highest so far; the broker's descriptors every 5 s (a directory of N entries to list).
    let peakInuse = 0;
    let ticks = 0;
    const sampler = setInterval(() => {
      const s = tcpSockstat();
      if (s.inuse >= peakInuse) {
        peakInuse = s.inuse;
        memHeld = meminfo();
        sockHeld = s;
      }
      if (ticks++ % 5 === 0) peakBrokerFds = Math.max(peakBrokerFds, openFds(pid) || 0);
    }, 1000);
    const timeoutMs = (1800 + o.hold + 300) * 1000;
    try {
      ({ out: result, code: loadgenCode } = await runLoadgen(args, timeoutMs));
    } finally {
      clearInterval(sampler);
    }
    if (!broker.alive()) {
      const { exitCode, signalCode } = broker.child;
      const lastLine = broker.log.join('').trim().split('\n').pop() ?? '';
      brokerExit = signalCode === 'SIGKILL' ? 'was killed by SIGKILL (most likely the kernel\'s OOM killer: see dmesg)' : `exited (${signalCode ?? `code ${exitCode}`}; its last line: ${lastLine.slice(0, 300)})`;
    }
  } finally {
    await broker.stop();
  }

  const held = result?.heldEnd ?? 0;
  const reached = held >= o.count;
  const slabPer = (key: string) => {
    const peakSockets = (sockHeld.inuse ?? 0) - (sockBefore.inuse ?? 0);
    return peakSockets > 0 ? ((memHeld[key] ?? 0) - (memBefore[key] ?? 0)) / peakSockets : NaN;
  };
  // Limits reached, as far as the readings tell: the broker's descriptors at its limit (it then
  // accepts and closes at once: the clients read ECONNRESET), the load generator's EMFILE.
  const limits = [
    peakBrokerFds >= brokerLimit.soft - 2 ? `the broker's open-file limit (${fmt(brokerLimit.soft)}; it had ${fmt(peakBrokerFds)} files open)` : undefined,
    result?.failures['connect EMFILE'] ? `the load generator's open-file limit (${fmt(result.nofile)})` : undefined,
  ];
  const stoppedBy = reached
    ? undefined
    : [
        brokerExit ? `the broker ${brokerExit}` : undefined,
        ...limits,
        result ? `${result.stopReason}; failures: ${Object.entries(result.failures).map(([k, v]) => `${fmt(v)} x ${k}`).join(', ') || 'none'}` : `the load generator gave no result (exit ${loadgenCode})`,
      ].filter(Boolean).join('; ');
  const report = {
    name: 'scale-idle',
    machine: machine(),
    spindle: spindleCommit(),
    options: { ...o, perSourceUsed: p.perSource, sourceAddresses: p.sources },
    needs: list,
    brokerNofile: brokerLimit,
    reached,
    held,
    stoppedBy,
    brokerExit,
    brokerFdsBefore: fdsBefore,
    brokerFdsPeak: peakBrokerFds,
    loadgen: result,
    kernel: {
      slabBytesPerSocket: slabPer('Slab'),
      tcpSocketsBefore: sockBefore.inuse,
      tcpSocketsHeld: sockHeld.inuse,
      tcpMemPagesHeld: sockHeld.mem,
      memAvailableBefore: memBefore.MemAvailable,
      memAvailableHeld: memHeld.MemAvailable,
    },
  };
  const r = result;
  const md = [
    `## Idle connections at scale: ${fmt(o.count)} to one Spindle`,
    '',
    reached ? `All ${fmt(o.count)} connected and held.` : `**Not reached**: at most ${fmt(r?.maxHeld ?? 0)} held at once, ${fmt(held)} at the end. Stopped by: ${stoppedBy}.`,
    '',
    `| measure | value |`,
    `| --- | ---: |`,
    `| connections held (most at once / at the end) | ${fmt(r?.maxHeld ?? NaN)} / ${fmt(held)} |`,
    `| time to connect them (first connect to last CONNACK) | ${r ? `${r.connectSeconds.toFixed(1)} s` : 'n/a'} |`,
    `| connections per second | ${fmt(r?.rate ?? NaN)} |`,
    `| broker RSS before / connected / after ${o.hold} s | ${r ? `${mib(r.rssBefore)} / ${mib(r.rssConnected)} / ${mib(r.rssAfter ?? NaN)}` : 'n/a'} |`,
    `| **broker RSS per connection** ((after - before) / held) | ${r?.bytesPerConnection != null ? `${fmt(r.bytesPerConnection)} B` : 'n/a'} |`,
    `| kernel slab per TCP socket (two per connection here) | ${fmt(report.kernel.slabBytesPerSocket)} B |`,
    `| PINGREQ answered after the hold | ${fmt(r?.pingResponses ?? NaN)} |`,
    `| failures | ${r ? `${fmt(r.failed)}${r.failed ? ` (${Object.entries(r.failures).map(([k, v]) => `${fmt(v)} x ${k}`).join(', ')})` : ''}` : 'n/a'} |`,
    '',
    `What the run needed (checked before it; nothing was changed):`,
    '',
    `| setting | on this machine | needs | |`,
    `| --- | --- | --- | --- |`,
    ...list.map((x) => `| ${x.what} | ${x.now} | ${x.needs} | ${x.ok ? 'ok' : `**missing**: ${x.fix}`} |`),
    '',
    `- Spindle ${spindleCommit()}, ${o.pinned ? '1 worker pinned to core 0' : 'its default workers, unpinned'}, open-file limit ${fmt(brokerLimit.soft)}; MQTT ${o.version === 4 ? '3.1.1' : '5.0'}, keep alive 1200 s, clean sessions, no subscriptions.`,
    `- Clients: spindle-loadgen idle-scale (one epoll thread), ${o.handshakes} handshakes at a time, from ${p.sources} source address${p.sources === 1 ? '' : 'es'} (127.0.0.2 on, each socket bound before connect, ${fmt(p.perSource)} per address at most); its open-file limit ${fmt(r?.nofile ?? NaN)}.`,
    `- Kernel slab per socket: the growth of Slab (/proc/meminfo) over the growth of TCP sockets in use (/proc/net/sockstat) at the peak.`,
    `- Measured ${report.machine.date} on ${report.machine.cpu} (${report.machine.cores} cores, ${report.machine.memGiB} GiB), Node ${report.machine.node}.`,
    '',
  ].join('\n');
  const dir = path.join(ROOT, 'bench/results', o.date);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'scale-idle.json'), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(path.join(dir, 'scale-idle.md'), md);
  console.log('\n' + md);
  console.log(`scale-idle: wrote ${path.relative(ROOT, dir)}/scale-idle.{json,md}`);
  if (!reached) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
