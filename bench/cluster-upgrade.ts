// `make cluster-demo ARGS=upgrade`: a rolling upgrade of a three-node cluster under load, and what
// clients saw of it. Starts three nodes (as scripts/cluster-demo.sh does; it checks the ports and
// runs this program), connects QoS 1 publishers (MQTT 5, one per node, each sending its own
// numbered stream one message at a time) and persistent subscribers (MQTT 5 ones follow the
// Server Reference of DISCONNECT 0x9C; MQTT 3.1.1 ones reconnect to the next node), then for each
// node in turn: POST /api/cluster/drain, wait until it is drained, stop it (SIGTERM), start it
// again, and wait until it has rejoined. Then it stops the publishers, waits for the subscribers
// to receive everything acknowledged, and prints and writes (CLUSTER_UPGRADE_RESULTS, default
// bench/results/cluster-upgrade.md) the figures: messages acknowledged, lost (acknowledged and
// never received, per subscriber), repeated (with DUP set, resent by a publisher that lost its
// connection before PUBACK whichever of its two copies came first, and neither: the last ones are
// what MQTT does not allow), and the longest gap a client saw. CLUSTER_UPGRADE_DEBUG=<file> also
// writes, per subscriber, the numbers lost and repeated, each publisher's resent numbers, and
// every node's /api/cluster/status.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import path from 'node:path';

import mqtt, { type MqttClient } from 'mqtt';

import { MovingClient } from '../test/helpers/moving-client.ts';

const env = process.env;
const host = env.CLUSTER_DEMO_HOST ?? '127.0.0.1';
const base = (name: string, d: number) => Number(env[name] ?? d);
const MQTT = base('CLUSTER_DEMO_MQTT_PORT', 1883), ADMIN = base('CLUSTER_DEMO_ADMIN_PORT', 8080);
const NATS = base('CLUSTER_DEMO_NATS_PORT', 4222), ROUTE = base('CLUSTER_DEMO_ROUTE_PORT', 6222);
const dir = env.CLUSTER_DEMO_DIR ?? './data/cluster-demo';
const password = env.SPINDLE_ADMIN_PASSWORD ?? `demo-password-${Math.random().toString(36).slice(2, 10)}`;
const natsServer = env.SPINDLE_CLUSTER_NATS_SERVER ?? '';
const results = env.CLUSTER_UPGRADE_RESULTS ?? 'bench/results/cluster-upgrade.md';
/** Messages per second of each publisher; clients moved per second by a drain. */
const PUBLISH_RATE = Number(env.CLUSTER_UPGRADE_PUBLISH_RATE ?? 50);
const DRAIN_RATE = Number(env.CLUSTER_UPGRADE_DRAIN_RATE ?? 10);
const SUBSCRIBERS_V5 = 6, SUBSCRIBERS_V4 = 3;
const NODES = [1, 2, 3];
const WAIT_MS = 120_000;

const mqttAddr = (n: number) => `${host}:${MQTT + n - 1}`;
const adminUrl = (n: number) => `http://${host}:${ADMIN + n - 1}`;
const auth = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;

const procs = new Map<number, ChildProcess>();

function startNode(n: number): void {
  const peers = NODES.filter((m) => m !== n).map((m) => `127.0.0.1:${ROUTE + m - 1}`);
  const log = createWriteStream(path.join(dir, `node-${n}.log`), { flags: 'a' });
  const child = spawn('bin/spindle', [], {
    env: {
      ...env,
      SPINDLE_NODE_NAME: `node-${n}`, SPINDLE_WORKERS: env.SPINDLE_WORKERS ?? '1', SPINDLE_DATA_DIR: path.join(dir, `node-${n}`),
      SPINDLE_MQTT_HOST: host, SPINDLE_MQTT_TCP_PORT: String(MQTT + n - 1), SPINDLE_MQTT_WS_ENABLED: 'false',
      SPINDLE_ADMIN_ENABLED: 'true', SPINDLE_ADMIN_HOST: host, SPINDLE_ADMIN_PORT: String(ADMIN + n - 1), SPINDLE_ADMIN_PASSWORD: password,
      SPINDLE_CLUSTER_ENABLED: 'true', SPINDLE_CLUSTER_NATS_URL: '', SPINDLE_CLUSTER_NATS_SERVER: natsServer,
      SPINDLE_CLUSTER_CLIENT_PORT: String(NATS + n - 1), SPINDLE_CLUSTER_LOCAL_ADDRESS: `127.0.0.1:${ROUTE + n - 1}`,
      SPINDLE_CLUSTER_ADDRESSES: JSON.stringify(peers), SPINDLE_CLUSTER_MQTT_ADDRESS: mqttAddr(n),
      SPINDLE_DRAIN_RATE: String(DRAIN_RATE), SPINDLE_SYS_ENABLED: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  procs.set(n, child);
}

async function stopNode(n: number): Promise<void> {
  const p = procs.get(n);
  procs.delete(n);
  if (!p || p.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGTERM');
  });
}

async function api(n: number, method: string, p: string, body?: unknown): Promise<any> {
  const r = await fetch(adminUrl(n) + p, { method, headers: { authorization: auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await r.json() as { data?: unknown; message?: string };
  if (!r.ok) throw new Error(`${method} ${p} on node-${n}: ${r.status} ${json.message ?? ''}`);
  return json.data;
}

/** Polls `check` every 200 ms until it answers true (a program waiting on processes it started). */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`cluster-upgrade: ${what} not within ${WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits until node `n` answers /health; a node that exits while starting (a clustered JetStream
 * that did not answer in time on a loaded machine) is started again, three times at most. */
async function healthy(n: number): Promise<void> {
  let starts = 1;
  let failed = false;
  await until(`node-${n} healthy`, async () => {
    if (procs.get(n)?.exitCode !== null) {
      if (starts++ >= 3) return (failed = true);
      console.log(`cluster-upgrade: node-${n} exited while starting; started again`);
      startNode(n);
      return false;
    }
    return (await fetch(`${adminUrl(n)}/health`)).ok;
  });
  if (failed) throw new Error(`node-${n} exited three times while starting (see ${dir}/node-${n}.log)`);
}

async function running(n: number): Promise<number> {
  const r = await fetch(`${adminUrl(n)}/public/cluster`);
  return ((await r.json()) as { nodes: { status: string }[] }).nodes.filter((x) => x.status === 'running').length;
}

/** A QoS 1 publisher of numbers ≡ index (mod count), one at a time, following the broker when
 * it is moved; a number whose PUBACK did not come is sent again, marked `:retry`. */
class Publisher {
  client: MqttClient | null = null;
  acked = new Set<number>();
  next: number;
  stopped = false;
  retries = 0;
  /** The numbers sent again after a connection lost before their PUBACK. */
  readonly resent = new Set<number>();
  private reference: string | null = null;
  constructor(readonly index: number, readonly count: number, public address: string) {
    this.next = index;
  }

  private connect(): Promise<MqttClient> {
    const [h, p] = [this.address.slice(0, this.address.lastIndexOf(':')), Number(this.address.slice(this.address.lastIndexOf(':') + 1))];
    const c = mqtt.connect({ host: h, port: p, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 3000, clientId: `upgrade-pub-${this.index}` });
    c.on('error', () => undefined);
    c.on('disconnect', (pk) => {
      if (pk.reasonCode === 0x9c && pk.properties?.serverReference) this.reference = pk.properties.serverReference;
    });
    return new Promise((resolve, reject) => {
      c.once('connect', () => resolve(c));
      c.once('close', () => reject(new Error('closed')));
    });
  }

  async run(): Promise<void> {
    let retry = false;
    const period = 1000 / PUBLISH_RATE;
    let at = Date.now();
    while (!this.stopped) {
      if (!this.client?.connected) {
        try {
          this.client = await this.connect();
        } catch {
          this.moveOn();
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
      }
      const n = this.next;
      try {
        // mqtt.js keeps a QoS 1 message of a closed connection for its reconnect, which this
        // client never makes (a new one is made): the close ends the wait.
        const c = this.client;
        let onClose = () => {};
        const closed = new Promise((_, reject) => c.once('close', (onClose = () => reject(new Error('closed before PUBACK')))));
        try {
          await Promise.race([c.publishAsync('upgrade/stream', retry ? `${n}:retry` : String(n), { qos: 1 }), closed]);
        } finally {
          c.off('close', onClose);
        }
        this.acked.add(n);
        this.next += this.count;
        retry = false;
      } catch {
        retry = true;
        this.retries++;
        this.resent.add(n);
        this.client?.end(true);
        this.client = null;
        this.moveOn();
        continue;
      }
      at += period;
      const wait = at - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else at = Date.now();
    }
    await this.client?.endAsync().catch(() => undefined);
  }

  private moveOn(): void {
    if (this.reference) this.address = this.reference;
    else this.address = nextNode(this.address);
    this.reference = null;
  }
}

function nextNode(address: string): string {
  const i = NODES.findIndex((n) => mqttAddr(n) === address);
  return mqttAddr(NODES[(i + 1) % NODES.length]);
}

async function main(): Promise<void> {
  for (const n of NODES) rmSync(path.join(dir, `node-${n}`), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  try {
    for (const n of NODES) startNode(n);
    for (const n of NODES) await healthy(n);
    await until('three running nodes', async () => (await running(1)) === 3 && (await running(3)) === 3);
    console.log('cluster-upgrade: three nodes running');
    const subs: MovingClient[] = [];
    for (let i = 0; i < SUBSCRIBERS_V5 + SUBSCRIBERS_V4; i++) {
      const version = i < SUBSCRIBERS_V5 ? 5 : 4;
      subs.push(new MovingClient({ clientId: `upgrade-sub-${i}-v${version}`, version, topic: 'upgrade/stream', address: mqttAddr(NODES[i % 3]), pick: nextNode }));
    }
    for (const s of subs) await s.start();
    // Every node knows every subscriber's interest: a probe published on each node reaches all.
    // Probes are negative numbers, published again each round: their copies are not counted as
    // repeats (MovingClient), and they are left out of the stream's figures.
    await until('subscriptions known on every node', async () => {
      for (const n of NODES) {
        const c = await mqtt.connectAsync({ host, port: MQTT + n - 1, protocolVersion: 5, reconnectPeriod: 0 });
        await c.publishAsync('upgrade/stream', String(-n), { qos: 1 });
        await c.endAsync();
      }
      await new Promise((r) => setTimeout(r, 300));
      return subs.every((s) => NODES.every((n) => s.seen.has(-n)));
    });
    for (const s of subs) s.streamStarts();
    const pubs = NODES.map((n, i) => new Publisher(i, NODES.length, mqttAddr(n)));
    const publishing = pubs.map((p) => p.run());
    const steps: string[] = [];
    await new Promise((r) => setTimeout(r, 2000));
    for (const n of NODES) {
      const t0 = Date.now();
      await api(n, 'POST', '/api/cluster/drain', { rate: DRAIN_RATE });
      let status: any;
      await until(`node-${n} drained`, async () => {
        status = (await api(n, 'GET', '/api/cluster/drain')).self;
        return status.state === 'drained';
      });
      const drainedMs = Date.now() - t0;
      await stopNode(n);
      const stoppedMs = Date.now() - t0;
      startNode(n);
      await healthy(n);
      const other = NODES.find((m) => m !== n)!;
      await until(`node-${n} rejoined`, async () => (await running(other)) === 3 && (await running(n)) === 3);
      const line = `node-${n}: drained in ${(drainedMs / 1000).toFixed(1)} s (moved ${status.moved}, sessions handed over ${status.handedOver}, not claimed ${status.handoverTimeouts}), stopped at ${(stoppedMs / 1000).toFixed(1)} s, back in the cluster at ${((Date.now() - t0) / 1000).toFixed(1)} s`;
      console.log(`cluster-upgrade: ${line}`);
      steps.push(line);
      await new Promise((r) => setTimeout(r, 2000));
    }
    for (const p of pubs) p.stopped = true;
    await Promise.all(publishing);
    const acked = new Set<number>();
    for (const p of pubs) for (const n of p.acked) acked.add(n);
    // Everything acknowledged reaches every subscriber, or is counted lost after 30 s of waiting.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !subs.every((s) => [...acked].every((n) => s.seen.has(n)))) await new Promise((r) => setTimeout(r, 250));
    const perSub = subs.map((s) => ({
      id: s.clientId, address: s.address, moves: s.moves, followedReference: s.followedReference,
      lost: [...acked].filter((n) => !s.seen.has(n)).length, dup: s.dupRedeliveries, retried: s.publisherRetries, duplicates: s.duplicates,
      gapMs: s.longestGapMs, silenceMs: s.longestSilenceMs,
    }));
    if (env.CLUSTER_UPGRADE_DEBUG) {
      const dump: Record<string, unknown> = {};
      for (const s of subs) {
        const missing = [...acked].filter((n) => !s.seen.has(n)).sort((x, y) => x - y);
        dump[s.clientId] = { missingByPublisher: [0, 1, 2].map((k) => missing.filter((n) => n % 3 === k).length), first: missing.slice(0, 5), last: missing.slice(-5), duplicates: s.duplicateNumbers };
      }
      dump.resent = pubs.map((p) => [...p.resent]);
      for (const n of NODES) dump[`node-${n}`] = await api(n, 'GET', '/api/cluster/status').catch((e: Error) => e.message);
      writeFileSync(env.CLUSTER_UPGRADE_DEBUG, JSON.stringify(dump, null, 1));
    }
    for (const s of subs) await s.stop();
    const sum = (k: 'lost' | 'dup' | 'retried' | 'duplicates') => perSub.reduce((a, s) => a + s[k], 0);
    const figures = [
      `Rolling upgrade of 3 nodes (drain, stop, start, rejoin each in turn), ${((Date.now() - started) / 1000).toFixed(0)} s in all`,
      `publishers: ${pubs.length} (MQTT 5, QoS 1, ${PUBLISH_RATE} msg/s each); subscribers: ${SUBSCRIBERS_V5} MQTT 5 + ${SUBSCRIBERS_V4} MQTT 3.1.1, persistent, QoS 1; drain rate ${DRAIN_RATE} clients/s`,
      ...steps,
      `messages acknowledged to publishers: ${acked.size} (publisher resends after a lost connection: ${pubs.reduce((a, p) => a + p.retries, 0)})`,
      `lost (acknowledged, never received), over all subscribers: ${sum('lost')}`,
      `duplicated without DUP and not resent by the publisher (what MQTT does not allow): ${sum('duplicates')}`,
      `repeats with DUP set (redelivery after a reconnect, allowed): ${sum('dup')}; repeats of a publisher's resend (allowed): ${sum('retried')}`,
      `longest time a subscriber was without a connection: ${Math.max(...perSub.map((s) => s.gapMs))} ms; longest time between two messages at a subscriber: ${Math.max(...perSub.map((s) => s.silenceMs))} ms`,
      `subscribers that followed a Server Reference: ${perSub.filter((s) => s.followedReference > 0).length} of ${SUBSCRIBERS_V5} MQTT 5`,
    ];
    const table = ['| subscriber | moves | followed 0x9C | lost | DUP repeats | publisher resends | duplicates | longest gap ms | longest silence ms |', '|---|---|---|---|---|---|---|---|---|',
      ...perSub.map((s) => `| ${s.id} | ${s.moves} | ${s.followedReference} | ${s.lost} | ${s.dup} | ${s.retried} | ${s.duplicates} | ${s.gapMs} | ${s.silenceMs} |`)];
    for (const f of figures) console.log(`cluster-upgrade: ${f}`);
    mkdirSync(path.dirname(results), { recursive: true });
    writeFileSync(results, `# Cluster rolling upgrade (${new Date().toISOString()})\n\n${figures.map((f) => `- ${f}`).join('\n')}\n\n${table.join('\n')}\n`);
    console.log(`cluster-upgrade: written to ${results}`);
    process.exitCode = sum('lost') + sum('duplicates') === 0 ? 0 : 1;
  } finally {
    for (const n of [...procs.keys()]) await stopNode(n);
  }
}

main().catch(async (err) => {
  console.error(`cluster-upgrade: ${(err as Error).message}`);
  for (const n of [...procs.keys()]) await stopNode(n);
  process.exit(2);
});
