// Owns this node's own nats-server (main thread), when the cluster does not use an existing NATS:
// started with a client port on 127.0.0.1, a route listener at cluster.localAddress and routes to
// the peers' (cluster.addresses, or the addresses the orchestrator's DNS answers for the
// discovery service), JetStream on with its store in <dataDir>/nats; stopped with the broker.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve4 } from 'node:dns/promises';
import net from 'node:net';
import path from 'node:path';

import type { Logger } from '../log/index.ts';

export interface NatsProcessOptions {
  binary: string;
  nodeName: string;
  clientPort: number;
  localAddress: string;
  addresses: readonly string[];
  discovery: { service: string; namespace: string };
  dataDir: string;
}

/** The nats-server binary: the configured path, the one on PATH, or Go's bin directory. */
export function findNatsServer(configured: string): string {
  if (configured !== '') return configured;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = path.join(dir, 'nats-server');
    if (dir && existsSync(p)) return p;
  }
  try {
    const gopath = execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8' }).trim();
    const p = path.join(gopath, 'bin', 'nats-server');
    if (existsSync(p)) return p;
  } catch {
    // no Go: fall through
  }
  throw new Error('cluster: no nats-server found (set cluster.natsServer, or run scripts/ensure-nats.sh)');
}

export class NatsProcess {
  private child: ChildProcess | null = null;
  private stopping = false;
  private readonly output: string[] = [];

  constructor(private readonly options: NatsProcessOptions, private readonly log: Logger) {}

  get url(): string {
    return `nats://127.0.0.1:${this.options.clientPort}`;
  }

  async start(): Promise<void> {
    const o = this.options;
    const routes = [...o.addresses];
    if (o.discovery.service !== '' && o.discovery.namespace !== '') {
      const port = o.localAddress.slice(o.localAddress.lastIndexOf(':') + 1);
      try {
        for (const ip of await resolve4(`${o.discovery.service}.${o.discovery.namespace}`)) routes.push(`${ip}:${port}`);
      } catch (err) {
        this.log.warn('cluster discovery found no peers yet (nats-server keeps trying the routes it has)', { service: o.discovery.service, namespace: o.discovery.namespace, err });
      }
    }
    // A nats-server left from an earlier run (its node killed) would answer in place of ours.
    if (await portOpen(o.clientPort)) throw new Error(`cluster: 127.0.0.1:${o.clientPort} (cluster.clientPort) is in use: a nats-server left from an earlier run? Stop it, or choose another port`);
    const store = path.join(o.dataDir, 'nats');
    mkdirSync(store, { recursive: true });
    const args = [
      '-a', '127.0.0.1', '-p', String(o.clientPort), '-n', o.nodeName,
      '--cluster_name', 'spindle', '--cluster', `nats://${o.localAddress}`,
      ...(routes.length > 0 ? ['--routes', routes.map((r) => `nats://${r}`).join(',')] : []),
      '-js', '-sd', store,
    ];
    this.log.info('starting nats-server', { binary: o.binary, args: args.join(' ') });
    const child = spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const keep = (b: Buffer) => {
      this.output.push(b.toString());
      if (this.output.length > 100) this.output.shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => {
      this.child = null;
      if (!this.stopping) this.log.error('nats-server exited', { code, signal, output: this.output.join('').slice(-2000) });
    });
    await this.waitForPort();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  private async waitForPort(): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (this.child === null) throw new Error(`nats-server exited at start: ${this.output.join('').slice(-2000)}`);
      if (await portOpen(this.options.clientPort)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`nats-server did not listen on 127.0.0.1:${this.options.clientPort} within 15 s`);
  }
}

/** Whether something listens on 127.0.0.1:`port`. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
