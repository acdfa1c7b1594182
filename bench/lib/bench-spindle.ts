// Owns a Spindle child process with the admin API, for the benches that configure Spindle through
// it (bench/rules.ts, bench/policies.ts): MQTT and admin on free loopback ports, the bench
// environment (spindleBenchEnv) plus the caller's settings, ready once every worker listens;
// stopping it removes its data directory. It runs this tree's Spindle, or another checkout's.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, freePort, spindleArgv, spindleBenchEnv } from './compare-brokers.ts';

export const ADMIN_PASSWORD = 'bench-admin-password';
const READY_TIMEOUT_MS = 30_000;

export interface BenchSpindle {
  /** MQTT over TCP. */
  port: number;
  /** http://127.0.0.1:<admin port> (the admin user's password: ADMIN_PASSWORD). */
  adminUrl: string;
  /** The broker process (its CPU: processCpuSeconds). */
  pid: number;
  /** An admin API call; any status but 200 throws with the answer. */
  api(path: string, body?: unknown, method?: string): Promise<any>;
  /** GET of a text endpoint (/prometheus). */
  text(path: string): Promise<string>;
  stop(): Promise<void>;
}

export interface BenchSpindleOptions {
  /** Settings over the bench environment. */
  env?: NodeJS.ProcessEnv;
  /** The Spindle tree to run (default: this one). */
  root?: string;
}

/** Starts Spindle; `name` labels its data directory and its errors. */
export async function startBenchSpindle(name: string, { env = {}, root = ROOT }: BenchSpindleOptions = {}): Promise<BenchSpindle> {
  const port = await freePort();
  const adminPort = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), `bench-${name}-`));
  const [command, ...args] = spindleArgv(root);
  const child = spawn(command, args, {
    cwd: root,
    env: {
      ...spindleBenchEnv(port, dir),
      SPINDLE_ADMIN_HOST: '127.0.0.1',
      SPINDLE_ADMIN_PORT: String(adminPort),
      SPINDLE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  const started = new Promise<void>((resolve, reject) => {
    const keep = (b: Buffer) => {
      log.push(b.toString());
      if (log.length > 200) log.splice(0, log.length - 200);
      if (b.toString().includes('spindle started')) resolve();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code) => reject(new Error(`spindle (${name}) exited (${code}): ${log.join('').slice(-2000)}`)));
  });
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const auth = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`;
  const call = (p: string, body: unknown, method: string) =>
    fetch(`http://127.0.0.1:${adminPort}${p}`, { method, headers: { authorization: auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const api = async (p: string, body?: unknown, method = 'POST') => {
    const res = await call(p, body, method);
    const answer = await res.text();
    if (res.status !== 200) throw new Error(`spindle (${name}) ${method} ${p}: ${res.status} ${answer}`);
    return JSON.parse(answer);
  };
  const text = async (p: string) => {
    const res = await call(p, undefined, 'GET');
    const answer = await res.text();
    if (res.status !== 200) throw new Error(`spindle (${name}) GET ${p}: ${res.status} ${answer}`);
    return answer;
  };
  try {
    await started;
    await everyWorkerListening(api, port);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, adminUrl: `http://127.0.0.1:${adminPort}`, pid: child.pid!, api, text, stop };
}

/** Waits until the MQTT endpoint on `port` listens on every worker (they start one by one). */
async function everyWorkerListening(api: BenchSpindle['api'], port: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const { data } = await api(`/api/endpoints/health?port=${port}`, undefined, 'GET');
    if (data.workers.total > 0 && data.workers.listening === data.workers.total) return;
    if (Date.now() > deadline) throw new Error(`port ${port}: listening on ${data.workers.listening} of ${data.workers.total} workers after ${READY_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
