// A nats-server of the test's own (the binary scripts/ensure-nats.sh installs), on a free port,
// for cluster tests: started, stopped and started again on the same port.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { findNatsServer, portOpen } from '../../src/cluster/nats-process.ts';
import { waitFor } from './wait.ts';
import { ownChild } from './children.ts';
import { freePort } from './process-broker.ts';

export { freePort };

export class TestNats {
  private proc: ChildProcess | null = null;
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'nats-'));

  private constructor(readonly port: number, private readonly jetstream: boolean) {}

  static async start(options: { jetstream?: boolean } = {}): Promise<TestNats> {
    const n = new TestNats(await freePort(), options.jetstream ?? true);
    await n.restart();
    return n;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    const args = ['-a', '127.0.0.1', '-p', String(this.port), '-sd', this.dir];
    if (this.jetstream) args.push('-js');
    this.proc = ownChild(spawn(findNatsServer(''), args, { stdio: 'ignore' }));
    await waitFor(() => portOpen(this.port), { message: 'nats-server listening' });
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGTERM');
    });
  }
}
