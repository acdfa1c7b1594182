// A real Mosquitto (Debian's /usr/sbin/mosquitto) as the remote broker of bridge tests: its own
// temporary directory and config file, a free port on 127.0.0.1, persistence on (so a stop with
// SIGTERM and a start keep the sessions and their queued messages), anonymous clients allowed.
// stop() ends it gracefully and waits for its exit; start() again reuses the port and directory
// (and does nothing while it runs).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { waitFor } from './wait.ts';
import { ownChild } from './children.ts';

export const MOSQUITTO = '/usr/sbin/mosquitto';

export interface MosquittoOptions {
  /** Anonymous clients allowed (default true). */
  allowAnonymous?: boolean;
  /** Free ports to reserve for further listeners (answered in `extraPorts`). */
  extraPorts?: number;
  /** More configuration lines (listeners, password_file, ...), given the reserved ports and the
   * directory. */
  extra?: (ports: number[], dir: string) => string[];
}

export interface Mosquitto {
  port: number;
  extraPorts: number[];
  url: string;
  dir: string;
  start(): Promise<void>;
  /** SIGTERM (Mosquitto saves its persistence file), and waits for the exit. */
  stop(): Promise<void>;
  /** Its log so far (for failure messages). */
  log(): string;
  /** Whether its persistence file exists (written at a graceful stop). */
  persisted(): boolean;
}

/** Starts one (scripts/ensure-system-packages.sh installs Debian's; a missing one fails the test). */
export async function startMosquitto(options: MosquittoOptions = {}): Promise<Mosquitto> {
  if (!existsSync(MOSQUITTO)) throw new Error(`${MOSQUITTO} is missing: make system-packages installs it`);
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-mosquitto-'));
  const port = await freePort();
  const extraPorts: number[] = [];
  for (let i = 0; i < (options.extraPorts ?? 0); i++) extraPorts.push(await freePort());
  const logFile = path.join(dir, 'mosquitto.log');
  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(conf, [
    // Started as root, Mosquitto would switch to the user "mosquitto", which cannot write this
    // directory (persistence, log): it stays the user that started it.
    ...(process.getuid?.() === 0 ? ['user root'] : []),
    `allow_anonymous ${options.allowAnonymous ?? true}`,
    'persistence true',
    `persistence_location ${dir}/`,
    'autosave_interval 0',
    `log_dest file ${logFile}`,
    'log_type error',
    'log_type warning',
    'log_type notice',
    'log_type information',
    // Sessions and their queues as a production remote would keep them.
    'max_queued_messages 10000',
    `listener ${port} 127.0.0.1`,
    ...(options.extra?.(extraPorts, dir) ?? []),
    '',
  ].join('\n'));
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const m: Mosquitto = {
    port,
    extraPorts,
    url: `mqtt://127.0.0.1:${port}`,
    dir,
    async start() {
      if (child && child.exitCode === null && child.signalCode === null) return;
      const c = ownChild(spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] }));
      let stderr = '';
      c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      child = c;
      exited = new Promise((resolve) => c.once('exit', () => resolve()));
      let gone = false;
      void exited.then(() => (gone = true));
      await waitFor(async () => {
        if (gone) throw new Error(`mosquitto exited: ${stderr} ${m.log()}`);
        return canConnect(port);
      }, { message: `mosquitto listening on ${port}` }).catch((err: Error) => {
        throw new Error(`${err.message}; stderr: ${stderr}; log: ${m.log()}`);
      });
    },
    async stop() {
      if (!child) return;
      child.kill('SIGTERM');
      await exited;
      child = null;
    },
    persisted() {
      return existsSync(path.join(dir, 'mosquitto.db'));
    },
    log() {
      return existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    },
  };
  await m.start();
  return m;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
