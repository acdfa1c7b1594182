// DrainPart: the drain feature's part of the cluster link (main thread). Every second each node
// tells the others its load on `spindle.drain.load` (its MQTT address, its connected clients, its
// drain state), so a draining node knows where to send clients and any node can plan a
// rebalance; and each node answers `spindle.drain.move.<node>`: a rebalance asking it to move some
// of its clients to other nodes.
import type { Msg } from '@nats-io/transport-node';

import type { ClusterPart, ClusterPartContext } from '../../cluster/part.ts';
import { token } from '../../cluster/names.ts';
import type { NodeLoad, RebalanceMove } from './types.ts';

const LOAD_EVERY_MS = 1000;
/** A load older than this is not used (its node is being marked down). */
const LOAD_STALE_MS = 3500;
const ASK_TIMEOUT_MS = 5000;

export interface DrainPartHost {
  /** This node's load now. */
  load(): Promise<NodeLoad>;
  /** Another node's rebalance asks this node to move clients; throws a refusal. */
  moveForPeer(move: RebalanceMove, rate: number): void;
}

export interface DrainPartCounters {
  loadsSent: number;
  loadsReceived: number;
  badMessages: number;
  movesAsked: number;
  movesServed: number;
}

export class DrainPart implements ClusterPart {
  readonly name = 'drain';
  readonly counters: DrainPartCounters = { loadsSent: 0, loadsReceived: 0, badMessages: 0, movesAsked: 0, movesServed: 0 };
  private ctx: ClusterPartContext | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly loads = new Map<string, NodeLoad & { seen: number }>();

  constructor(private readonly host: DrainPartHost) {}

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    ctx.nc.subscribe('spindle.drain.load', { callback: (err, m) => {
      if (!err) this.onLoad(m);
    } });
    ctx.nc.subscribe(`spindle.drain.move.${token(ctx.nodeName)}`, { callback: (err, m) => {
      if (!err) this.onMove(m);
    } });
    this.timer = setInterval(() => void this.sendLoad(), LOAD_EVERY_MS);
    void this.sendLoad();
  }

  peerDown(node: string): void {
    this.loads.delete(node);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The other running nodes' last loads. */
  peers(): NodeLoad[] {
    const ctx = this.ctx;
    if (!ctx) return [];
    const running = new Set(ctx.runningPeers());
    const now = Date.now();
    const out: NodeLoad[] = [];
    for (const l of this.loads.values()) {
      if (!running.has(l.node) || now - l.seen > LOAD_STALE_MS) continue;
      const { seen: _seen, ...load } = l;
      out.push(load);
    }
    return out.sort((a, b) => (a.node < b.node ? -1 : 1));
  }

  /** Asks `move.from` to move its part of a rebalance; rejects with its refusal. */
  async ask(move: RebalanceMove, rate: number): Promise<void> {
    const ctx = this.ctx;
    if (!ctx) throw new Error('the cluster is not joined');
    this.counters.movesAsked++;
    const reply = await ctx.nc.request(`spindle.drain.move.${token(move.from)}`, JSON.stringify({ move, rate }), { timeout: ASK_TIMEOUT_MS });
    const answer = reply.json<{ ok: boolean; error?: string }>();
    if (!answer.ok) throw new Error(`${move.from}: ${answer.error ?? 'refused'}`);
  }

  private async sendLoad(): Promise<void> {
    const ctx = this.ctx;
    if (!ctx || !ctx.natsUp()) return;
    try {
      const load = await this.host.load();
      ctx.nc.publish('spindle.drain.load', JSON.stringify(load));
      this.counters.loadsSent++;
    } catch (err) {
      ctx.log.warn('drain: this node\'s load could not be measured; the other nodes keep the last one', { err });
    }
  }

  private onLoad(m: Msg): void {
    let l: NodeLoad;
    try {
      l = m.json<NodeLoad>();
      if (typeof l?.node !== 'string' || typeof l.connections !== 'number' || (l.mqtt !== null && typeof l.mqtt !== 'string')) throw new Error('not a load');
    } catch {
      this.counters.badMessages++;
      return;
    }
    if (l.node === this.ctx?.nodeName) return;
    this.counters.loadsReceived++;
    this.loads.set(l.node, { ...l, seen: Date.now() });
  }

  private onMove(m: Msg): void {
    let body: { move: RebalanceMove; rate: number };
    try {
      body = m.json();
      if (typeof body?.rate !== 'number' || typeof body.move?.count !== 'number' || !Array.isArray(body.move.targets)) throw new Error('not a move');
    } catch {
      this.counters.badMessages++;
      m.respond(JSON.stringify({ ok: false, error: 'a move request that does not parse' }));
      return;
    }
    try {
      this.host.moveForPeer(body.move, body.rate);
      this.counters.movesServed++;
      m.respond(JSON.stringify({ ok: true }));
    } catch (err) {
      m.respond(JSON.stringify({ ok: false, error: (err as Error).message }));
    }
  }
}
