// Starts and stops the brokers the comparison bench measures: Spindle (bin/spindle.mjs),
// Debian's Mosquitto, Aedes (bench/brokers/aedes-server.mjs), rumqttd (cargo install, see
// scripts/ensure-rumqttd.sh) and Mochi MQTT (go install, see scripts/ensure-mochi.sh), each on
// free loopback ports, optionally pinned to one core with taskset. Owns the broker child processes.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Family } from './compare-scenarios.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const MOSQUITTO = '/usr/sbin/mosquitto';
/** Where scripts/ensure-rumqttd.sh installs it (cargo's bin directory); RUMQTTD overrides. */
export const RUMQTTD = process.env.RUMQTTD ?? path.join(process.env.CARGO_HOME ?? path.join(os.homedir(), '.cargo'), 'bin/rumqttd');
/** Where scripts/ensure-mochi.sh installs it (the first GOPATH entry's bin, ~/go/bin by default); MOCHI overrides. */
export const MOCHI = process.env.MOCHI ?? path.join(process.env.GOPATH?.split(':')[0] || path.join(os.homedir(), 'go'), 'bin/mochi');
/** Mochi's Go module, whose version the binary carries (`go version -m`): the report's version. */
const MOCHI_MODULE = 'github.com/mochi-mqtt/server/v2';

export type BrokerName = 'spindle' | 'mosquitto' | 'aedes' | 'rumqttd' | 'mochi' | 'spindle-node';
/** spindle-node: the same Spindle with mqtt.io 'node' (Node's net sockets instead of the native
 * driver), so the two I/O paths are compared in one run. */
export const BROKER_NAMES: BrokerName[] = ['spindle', 'mosquitto', 'aedes', 'rumqttd', 'mochi', 'spindle-node'];
export type Mode = 'pinned' | 'unpinned';

/** Core the broker gets when pinned; the load generator gets the other one. */
export const BROKER_CORE = 0;
export const LOADGEN_CORE = 1;

export interface RunningBroker {
  name: BrokerName;
  mode: Mode;
  /** Port of the MQTT 3.1.1 listener. */
  port: number;
  /** Port per protocol version: the same for every broker but rumqttd, which has a listener for each. */
  ports: Record<4 | 5, number>;
  pid: number;
  child: ChildProcess;
  /** Output of the broker, kept for the report when it fails. */
  log: string[];
  stop(): Promise<void>;
  alive(): boolean;
}

/**
 * Why `name` is not run on a scenario, as the report's cell says it; undefined when it is.
 * Aedes speaks MQTT 3.1.1 only: it answers a 5.0 CONNECT with return code 1. rumqttd matches a
 * topic it has not seen before against every filter in turn (DataLog::matches, router/logs.rs),
 * so with 1 M exact subscriptions each publish on a new topic scans all of them: with 100 000
 * (the quick run) it delivered nothing within the load generator's 5 s drain, and it holds about
 * 6.4 KB per subscription (6.4 GB for the full run). Mochi queues the retained messages of a new
 * subscription on the client's outgoing queue (8192 packets at its defaults) as fast as it can
 * read them and drops what finds the queue full (ErrPendingClientWritesExceeded, logged only at
 * debug level): with 20 000 retained messages it delivered 15 500-18 500, pinned and unpinned,
 * and each such run waits out the load generator's 120 s.
 */
export function notRun(name: BrokerName, s: { version: 4 | 5; family: Family }): string | undefined {
  if (name === 'aedes' && s.version === 5) return 'no 5.0';
  if (name === 'rumqttd' && s.family === 'subs1m') return 'no (linear filter match)';
  if (name === 'mochi' && s.family === 'retained') return 'no (drops past its queue)';
  return undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once a CONNECT of `version` on `port` gets a CONNACK (the broker accepts and speaks MQTT). */
function mqttReady(port: number, version: 4 | 5): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.on('error', () => done(false));
    s.on('connect', () => {
      const id = Buffer.from('compare-ready');
      // CONNECT: "MQTT", level 4 or 5, clean start, keep-alive 30 s, (5.0: no properties), client id.
      const props = version === 5 ? [0] : [];
      const head = [0, 4, 0x4d, 0x51, 0x54, 0x54, version, 2, 0, 30, ...props, 0, id.length];
      s.write(Buffer.concat([Buffer.from([0x10, head.length + id.length, ...head]), id]));
    });
    s.on('data', (d: Buffer) => {
      if (d[0] === 0x20) s.write(Buffer.from([0xe0, 0]));
      done(d[0] === 0x20);
    });
  });
}

export function versions(): Record<BrokerName, string> {
  const pkg = (p: string) => JSON.parse(readFileSync(path.join(ROOT, p), 'utf8')).version as string;
  let mosquitto = 'unknown';
  try {
    mosquitto = execFileSync(MOSQUITTO, ['-h'], { encoding: 'utf8' }).split('\n')[0];
  } catch (err) {
    // mosquitto -h exits 3 after printing its usage.
    mosquitto = String((err as { stdout?: string }).stdout ?? '').split('\n')[0] || 'unknown';
  }
  let rumqttd = 'unknown';
  try {
    rumqttd = execFileSync(RUMQTTD, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // Not installed: the report says unknown; starting it fails with the reason.
  }
  return { spindle: `spindle ${pkg('package.json')} (${spindleCommit()})`, 'spindle-node': `spindle ${pkg('package.json')} (${spindleCommit()}), mqtt.io node`, mosquitto, aedes: `aedes ${pkg('node_modules/aedes/package.json')}`, rumqttd, mochi: mochiVersion() };
}

/** "mochi v2.7.9 (go1.26.8)", from the module list Go builds into the binary; 'unknown' without Go or the binary. */
function mochiVersion(): string {
  try {
    const info = execFileSync('go', ['version', '-m', MOCHI], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const go = /^\S+: (go\S+)/.exec(info)?.[1];
    const mod = new RegExp(`^\\s+mod\\s+${MOCHI_MODULE.replace(/\./g, '\\.')}\\s+(\\S+)`, 'm').exec(info)?.[1];
    return mod ? `mochi ${mod}${go ? ` (${go})` : ''}` : 'unknown';
  } catch {
    return 'unknown';
  }
}

interface Launch {
  argv: string[];
  env?: NodeJS.ProcessEnv;
  /** Text on stdout that says the broker is fully up (all workers listening). */
  readyLine?: string;
  cleanup?: () => void;
}

/**
 * The Spindle tree that is measured: this one, or another checkout (`--spindle-root`, e.g. a
 * clean worktree of a commit while this tree has uncommitted changes).
 */
let spindleRoot = ROOT;

export function setSpindleRoot(dir: string): void {
  spindleRoot = path.resolve(dir);
}

/** The commit of the measured Spindle tree, with "+dirty" when it has uncommitted changes. */
export function spindleCommit(): string {
  try {
    // stderr ignored: a tree that is not a checkout is reported as unknown, without git's complaint.
    const git = (...args: string[]) => execFileSync('git', ['-C', spindleRoot, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--untracked-files=no', '--', 'src', 'bin', 'native').length > 0;
    return git('rev-parse', '--short', 'HEAD') + (dirty ? '+dirty' : '');
  } catch {
    return 'unknown';
  }
}

/** The environment a bench runs Spindle with: MQTT over TCP on `port` only, no $SYS, and the
 * same limits as the other brokers run with (no inflight cap below the bench window, a queue
 * that never drops inside it). */
export function spindleBenchEnv(port: number, dataDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    SPINDLE_NODE: process.execPath,
    SPINDLE_MQTT_HOST: '127.0.0.1',
    SPINDLE_MQTT_TCP_PORT: String(port),
    SPINDLE_MQTT_WS_ENABLED: 'false',
    SPINDLE_SYS_ENABLED: 'false',
    SPINDLE_DATA_DIR: dataDir,
    SPINDLE_LIMITS_MAX_INFLIGHT: '65535',
    SPINDLE_LIMITS_RECEIVE_MAXIMUM: '65535',
    SPINDLE_LIMITS_MAX_QUEUED_MESSAGES: '1000000',
  };
}

/** The command of the Spindle tree at `root`: bin/spindle (the compiled build), or an older
 * checkout's bin/spindle.mjs (TypeScript through tsx) where it has no compiled build. */
export function spindleArgv(root: string): string[] {
  const bin = path.join(root, 'bin/spindle');
  return existsSync(bin) ? [bin] : [process.execPath, path.join(root, 'bin/spindle.mjs')];
}

function launchSpindle(port: number, mode: Mode, dataDir: string, io: 'native' | 'node' = 'native'): Launch {
  return {
    argv: spindleArgv(spindleRoot),
    env: {
      ...spindleBenchEnv(port, dataDir),
      SPINDLE_MQTT_IO: io,
      SPINDLE_ADMIN_ENABLED: 'false',
      ...(mode === 'pinned' ? { SPINDLE_WORKERS: '1' } : {}),
    },
    readyLine: 'spindle started',
  };
}

function launchMosquitto(port: number, dir: string): Launch {
  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      'max_queued_messages 1000000',
      'max_inflight_messages 0',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      '',
    ].join('\n'),
  );
  return { argv: [MOSQUITTO, '-c', conf] };
}

function launchAedes(port: number): Launch {
  return { argv: [process.execPath, path.join(ROOT, 'bench/brokers/aedes-server.mjs'), String(port), '127.0.0.1'], readyLine: 'listening' };
}

/**
 * rumqttd serves one protocol version per listener: a v4 (3.1.1) one on `port` and a v5 one on
 * `port5`. No console, Prometheus or WebSocket listener. Limits as the others run with: any
 * payload size, no wait between accepts (next_connection_delay_ms is 1 ms by default; even at 0
 * its accept loop awaits a tokio sleep, whose timer has millisecond ticks, so it still accepts
 * about 1000 connections/s), room for the 10 000 idle connections and the bench's own. Every
 * filter's commit log keeps up to 10 x 10 MB, far more than the 4096 deliveries a bench run keeps
 * outstanding, so a subscriber never falls off its log. max_inflight_count is how many incoming
 * packets a connection hands the router at once. Its outgoing QoS 1 window is fixed at 100 in
 * rumqttd's source (router/iobufs.rs MAX_INFLIGHT) and cannot be raised by configuration.
 * max_outgoing_packet_count is how many QoS 0 messages the router moves to a connection at once,
 * and also how many retained messages a new subscription gets (the rest are dropped): it keeps
 * its default of 200, which gave rumqttd more throughput than 100 000 did, except on a broker
 * started for `retainedTopics` retained messages, where it is raised to that many.
 */
function launchRumqttd(port: number, port5: number, dir: string, retainedTopics: number): Launch {
  const conf = path.join(dir, 'rumqttd.toml');
  const listener = (section: string, name: string, p: number) => [
    `[${section}]`,
    `name = "${name}"`,
    `listen = "127.0.0.1:${p}"`,
    'next_connection_delay_ms = 0',
    `[${section}.connections]`,
    'connection_timeout_ms = 60000',
    'max_payload_size = 268435455',
    'max_inflight_count = 4096',
    'dynamic_filters = true',
    '',
  ];
  writeFileSync(
    conf,
    [
      'id = 0',
      '',
      '[router]',
      'id = 0',
      'max_connections = 20000',
      `max_outgoing_packet_count = ${Math.max(200, retainedTopics)}`,
      'max_segment_size = 10485760',
      'max_segment_count = 10',
      '',
      ...listener('v4.1', 'v4-1', port),
      ...listener('v5.1', 'v5-1', port5),
    ].join('\n'),
  );
  return { argv: [RUMQTTD, '--quiet', '--config', conf] };
}

/**
 * Mochi MQTT's own program (cmd/main.go of the module) takes three listen addresses and nothing
 * else: `-tcp` (MQTT 3.1.1 and 5.0 on one listener), `-ws` (WebSocket) and `-info` (an HTTP page
 * of its counters); it has no flag to turn the last two off, so they get free loopback ports too.
 * It runs with the library's defaults (mqtt.New(nil)) and every client allowed (auth.AllowHook):
 * an in-memory store, at most 8192 QoS 1/2 messages in flight per client (MaximumInflight),
 * Receive Maximum 1024 announced to 5.0 clients, and an outgoing queue of 8192 packets per client
 * (MaximumClientWritesPending; a packet that finds it full is dropped); its $SYS topics are
 * refreshed every second. Go sizes its scheduler (GOMAXPROCS) to the CPUs the process may run on,
 * so pinned it runs on one core, like the other brokers.
 */
function launchMochi(port: number, wsPort: number, infoPort: number): Launch {
  return {
    argv: [MOCHI, '-tcp', `127.0.0.1:${port}`, '-ws', `127.0.0.1:${wsPort}`, '-info', `127.0.0.1:${infoPort}`],
    readyLine: 'mochi mqtt server started',
  };
}

/** A free loopback port that is none of `taken`. */
async function otherFreePort(taken: number[]): Promise<number> {
  for (;;) {
    const p = await freePort();
    if (!taken.includes(p)) return p;
  }
}

/**
 * Starts `name` fresh (new port, new data directory) and waits until it answers MQTT.
 * `retainedTopics`: how many retained messages one subscription will be sent (rumqttd's limit).
 * `nofile`: the open-file limit it gets (soft and hard; above the hard limit only as root, and at
 * most fs.nr_open), or its current hard limit when that cannot be set.
 */
export async function startBroker(name: BrokerName, mode: Mode, retainedTopics = 0, nofile = 65536): Promise<RunningBroker> {
  const port = await freePort();
  const port5 = name === 'rumqttd' ? await otherFreePort([port]) : port;
  const ports = { 4: port, 5: port5 };
  const dir = mkdtempSync(path.join(os.tmpdir(), `compare-${name}-`));
  let launch: Launch;
  if (name === 'spindle') launch = launchSpindle(port, mode, dir);
  else if (name === 'spindle-node') launch = launchSpindle(port, mode, dir, 'node');
  else if (name === 'mosquitto') launch = launchMosquitto(port, dir);
  else if (name === 'rumqttd') launch = launchRumqttd(ports[4], ports[5], dir, retainedTopics);
  else if (name === 'mochi') {
    const wsPort = await otherFreePort([port]);
    launch = launchMochi(port, wsPort, await otherFreePort([port, wsPort]));
  } else launch = launchAedes(port);
  const pin = mode === 'pinned' ? ['taskset', '-c', String(BROKER_CORE)] : [];
  // bash raises the open-file limit (10 000 idle connections) and execs, so the pid is the broker's.
  const argv = ['bash', '-c', `ulimit -n ${Math.floor(nofile)} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"`, 'bash', ...pin, ...launch.argv];
  const child = spawn(argv[0], argv.slice(1), { cwd: name === 'spindle' || name === 'spindle-node' ? spindleRoot : ROOT, env: launch.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  let sawReady = launch.readyLine === undefined;
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    if (launch.readyLine && text.includes(launch.readyLine)) sawReady = true;
    log.push(text);
    if (log.length > 200) log.splice(0, log.length - 200);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  const broker: RunningBroker = {
    name,
    mode,
    port,
    ports,
    pid: child.pid!,
    child,
    log,
    alive: () => !exited,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exit;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !exited) {
    if (sawReady && (await mqttReady(port, 4)) && (ports[5] === port || (await mqttReady(ports[5], 5)))) {
      // Let worker threads finish starting (their listeners share the port through SO_REUSEPORT).
      await new Promise((r) => setTimeout(r, 300));
      return broker;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await broker.stop();
  throw new Error(`${name} (${mode}) did not start on port ${[...new Set([ports[4], ports[5]])].join(' and ')}: ${log.join('').slice(-2000)}`);
}

/** CPU seconds (user + system, all threads) process `pid` has used, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the command.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Machine-wide CPU seconds: busy in processes (user, nice, system) and stolen by the hypervisor. */
export function machineCpu(): { busy: number; steal: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , , , steal] = line;
  return { busy: (user + nice + system) / CLOCK_TICKS, steal: (steal ?? 0) / CLOCK_TICKS };
}
