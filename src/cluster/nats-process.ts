// Owns this node's own nats-server (main thread), when the cluster does not use an existing NATS:
// started with a client port on 127.0.0.1, a route listener at cluster.localAddress and routes to
// the peers' (cluster.addresses, or the addresses the orchestrator's DNS answers for the
// discovery service), JetStream on with its store in <dataDir>/nats; stopped with the broker.
// Its lifetime is tied to the node's: it gets SIGTERM when the node's process dies, however it
// dies (Linux parent-death signal, set by util-linux's setpriv), and one left over anyway (a host
// without setpriv) is found by its pidfile and stopped at the next start.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
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
    const discovering = o.discovery.service !== '' && o.discovery.namespace !== '';
    if (discovering) {
      const port = o.localAddress.slice(o.localAddress.lastIndexOf(':') + 1);
      try {
        for (const ip of await resolve4(`${o.discovery.service}.${o.discovery.namespace}`)) routes.push(`${ip}:${port}`);
      } catch (err) {
        this.log.warn('cluster discovery found no peers yet (nats-server keeps trying the routes it has)', { service: o.discovery.service, namespace: o.discovery.namespace, err });
      }
    }
    const store = path.join(o.dataDir, 'nats');
    mkdirSync(store, { recursive: true });
    const pidFile = path.join(store, 'nats-server.pid');
    await stopLeftover(pidFile, this.log);
    // Anything else on the port would answer in place of ours.
    if (await portOpen(o.clientPort)) throw new Error(`cluster: 127.0.0.1:${o.clientPort} (cluster.clientPort) is in use by another program: stop it, or choose another port`);
    const args = [
      '-P', pidFile,
      '-a', '127.0.0.1', '-p', String(o.clientPort), '-n', o.nodeName,
      // With no peer address at all (no cluster.addresses, no discovery) the node is a cluster of
      // one: its nats-server runs alone (clustered JetStream would wait for routes forever).
      ...(routes.length > 0 || discovering
        ? ['--cluster_name', 'spindle', '--cluster', `nats://${o.localAddress}`, ...(routes.length > 0 ? ['--routes', routes.map((r) => `nats://${r}`).join(',')] : [])]
        : []),
      '-js', '-sd', store,
    ];
    this.log.info('starting nats-server', { binary: o.binary, args: args.join(' ') });
    const setpriv = findSetpriv();
    const child = setpriv !== null
      ? spawn(setpriv, ['--pdeathsig', 'SIGTERM', '--', o.binary, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    if (setpriv === null) this.log.warn('setpriv (util-linux) not found: nats-server will outlive this node if it is killed hard; the next start stops it');
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

function findSetpriv(): string | null {
  for (const p of ['/usr/bin/setpriv', '/bin/setpriv']) if (existsSync(p)) return p;
  return null;
}

/** Stops the nats-server an earlier run of this node left (its pidfile names a live nats-server
 * process): SIGTERM, then SIGKILL after 5 s. */
async function stopLeftover(pidFile: string, log: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  const alive = () => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('nats-server');
    } catch {
      return false;
    }
  };
  if (Number.isInteger(pid) && pid > 1 && alive()) {
    log.warn('stopping the nats-server an earlier run of this node left', { pid });
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 5000;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (alive()) process.kill(pid, 'SIGKILL');
    while (alive()) await new Promise((r) => setTimeout(r, 50));
  }
  rmSync(pidFile, { force: true });
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
