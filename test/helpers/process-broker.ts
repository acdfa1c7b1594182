// A broker in a child process, started with the `spindle` command and a config file, so tests
// can kill it (SIGKILL) or stop it (SIGTERM) and start it again on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import net from 'node:net';

import { ownChild } from './children.ts';
import { SPINDLE_BIN, spindleEnv } from './spindle-bin.ts';

export interface ProcessBroker {
  port: number;
  url: string;
  dataDir: string;
  child: ChildProcess;
  /** Log lines so far (for failure messages). */
  output: string[];
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export function tempDir(prefix = 'spindle-proc-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Starts `spindle --config` with `config` (a JSON config) and resolves once it listens. */
export async function startProcessBroker(config: Record<string, unknown> & { dataDir: string; mqtt: Record<string, unknown> & { tcp: { port: number } } }): Promise<ProcessBroker> {
  const file = path.join(config.dataDir, 'spindle.json');
  writeFileSync(file, JSON.stringify(config));
  const child = ownChild(spawn(SPINDLE_BIN, ['--config', file], { env: spindleEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
  const output: string[] = [];
  const collect = (b: Buffer) => output.push(...b.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker did not start:\n${output.join('\n')}`)), 20_000);
    const check = () => {
      if (output.some((l) => l.includes('spindle started'))) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}:\n${output.join('\n')}`));
    });
  });
  const port = config.mqtt.tcp.port;
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    dataDir: config.dataDir,
    child,
    output,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      });
    },
  };
}
