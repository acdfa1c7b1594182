// LiveFeed: the console's live picture, pushed (not polled): once a second, while at least one
// console is connected, the broker's counters are collected from every worker and the rates since
// the previous sample sent to every open /api/live WebSocket as one JSON text message. Samples
// are small (a few hundred bytes, plus one line per endpoint); a socket that does not take them
// (uWS backpressure over MAX_BACKPRESSURE) is closed by uWS, not waited for.
//
// In a cluster (`peers` given), each sample also has a part per node (`nodes`: connections,
// messages in and out per second) and the running nodes whose figures are missing
// (`nodesMissing`). The other nodes are asked through the admin queries across nodes (one small
// answer per node, the `metrics` operation) once a tick, without holding the sample back: a
// sample carries each node's latest answer (at most PEER_STALE_MS old), a node is not asked again
// while its last question is open, so a slow node delays nothing and holds back no other node's
// figures, and a node that stops answering drops out of `nodes` into `nodesMissing`.
import type { Logger } from '../../log/index.ts';
import type { WorkerMetricsSnapshot } from '../../worker/ops/metrics.ts';
import { sumEndpoints, type NodeTotals } from '../../metrics/endpoint-totals.ts';

export const LIVE_INTERVAL_MS = 1000;
/** A node's figures older than this are left out of the samples (it is named in nodesMissing). */
export const PEER_STALE_MS = 3000;

/** Another node's answer: its totals at its own clock's `t`. */
export type PeerTotals = NodeTotals & { t: number };

/** The other nodes of a cluster, for the per-node part of the samples. */
export interface LivePeers {
  /** The other running nodes. */
  running(): string[];
  /** One node's totals (its workers' counters merged into one), or why there are none. */
  ask(node: string): Promise<{ results: PeerTotals[] } | { reason: string }>;
}

/** What the feed reads the broker through (the supervisor, in the admin server). */
export interface LiveSource {
  readonly nodeName: string;
  metrics(): Promise<WorkerMetricsSnapshot[]>;
  /** Retained messages of clients, as the Messages page lists them (no $SYS). */
  retained(): number;
  /** Subscriptions in the routing core: clients' and the broker's own handles (absent: unknown). */
  routerSubscriptions?(): number;
  /** In a cluster: the other nodes (absent on a single node). */
  readonly peers?: LivePeers;
}

/** One node's part of a sample. */
export interface LiveNode {
  node: string;
  /** The node this feed runs on. */
  self: boolean;
  connections: number;
  in: number;
  out: number;
  dropped: number;
}

export interface LiveSample {
  /** Milliseconds since the epoch. */
  t: number;
  node: string;
  connections: number;
  sessions: number;
  /** Subscriptions of this node's client sessions (online or offline) to topics other than $SYS,
   * as the Topics page counts them. */
  subscriptions: number;
  /** Subscriptions of client sessions to $SYS topics. */
  subscriptionsSys: number;
  /** The broker's own subscriptions in the routing core: rules, bridges, log topics, console
   * viewers, cluster peers' interest (the routing core's count less the clients'). */
  subscriptionsInternal: number;
  /** Retained messages of clients (not $SYS), as the Messages page lists them. */
  retained: number;
  /** Per second since the previous sample. */
  in: number;
  out: number;
  dropped: number;
  endpoints: { id: string; port: number; connections: number; in: number; out: number; dropped: number }[];
  /** In a cluster only: every node that answered (this one first, then by name). */
  nodes?: LiveNode[];
  /** In a cluster only: running nodes whose figures are not in `nodes`, and why. */
  nodesMissing?: { node: string; reason: string }[];
}

interface PeerState {
  /** When this node last received an answer (its clock); 0: none yet. */
  at: number;
  totals: PeerTotals | null;
  line: LiveNode | null;
  /** A question is open. */
  asking: boolean;
  /** Why the last question got no figures (null: it did). */
  reason: string | null;
}

interface Totals {
  at: number;
  byEndpoint: Map<string, { received: number; sent: number; dropped: number }>;
}

export class LiveFeed {
  private timer: NodeJS.Timeout | null = null;
  private sockets = 0;
  private previous: Totals | null = null;
  private sampling = false;
  private readonly peerState = new Map<string, PeerState>();

  constructor(private readonly source: LiveSource, private readonly publish: (json: string) => void, private readonly log: Logger) {}

  /** A console connected: sampling runs while any is. */
  opened(): void {
    this.sockets++;
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), LIVE_INTERVAL_MS);
    this.timer.unref();
    void this.tick();
  }

  closed(): void {
    this.sockets = Math.max(0, this.sockets - 1);
    if (this.sockets > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    this.previous = null;
    this.peerState.clear();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    if (this.sampling) return; // a slow collection is not stacked
    this.sampling = true;
    try {
      this.askPeers();
      const sample = this.sample(await this.source.metrics());
      if (this.timer) this.publish(JSON.stringify(sample));
    } catch (err) {
      this.log.debug('console live sample failed', { err });
    } finally {
      this.sampling = false;
    }
  }

  /** The sample of `workers`' counters, rates against the previous one. */
  sample(workers: readonly WorkerMetricsSnapshot[], now = Date.now()): LiveSample {
    const endpoints = sumEndpoints(workers);
    const prev = this.previous;
    const seconds = prev ? Math.max(0.001, (now - prev.at) / 1000) : 1;
    const totals: Totals = { at: now, byEndpoint: new Map() };
    // Client subscriptions, summed over the workers' sessions as the Topics page finds them: the
    // router's count would include the broker's own handles (rules, bridges, log topics, viewers).
    const clients = workers.reduce((n, w) => n + (w.stats?.subscriptions ?? 0), 0);
    const sys = workers.reduce((n, w) => n + (w.stats?.sysSubscriptions ?? 0), 0);
    const router = this.source.routerSubscriptions?.();
    const out: LiveSample = {
      t: now, node: this.source.nodeName, connections: 0, sessions: 0, subscriptions: clients - sys, subscriptionsSys: sys,
      subscriptionsInternal: router === undefined ? 0 : Math.max(0, router - clients), retained: this.source.retained(), in: 0, out: 0, dropped: 0, endpoints: [],
    };
    for (const e of endpoints.values()) {
      const s = e.stats;
      const dropped = Object.values(s.dropped).reduce((a, b) => a + b, 0);
      const cur = { received: s.messagesReceived, sent: s.messagesSent, dropped };
      totals.byEndpoint.set(e.id, cur);
      const before = prev?.byEndpoint.get(e.id);
      // Counters only grow; a worker restarted (its counters from zero) gives no negative rate.
      const rate = (a: number, b: number | undefined) => (b === undefined ? 0 : Math.max(0, (a - b) / seconds));
      const line = { id: e.id, port: e.port, connections: s.connectionsCurrent, in: rate(cur.received, before?.received), out: rate(cur.sent, before?.sent), dropped: rate(dropped, before?.dropped) };
      out.endpoints.push(line);
      out.connections += s.connectionsCurrent;
      out.sessions += s.sessionsCurrent;
      out.in += line.in;
      out.out += line.out;
      out.dropped += line.dropped;
    }
    out.endpoints.sort((a, b) => a.port - b.port);
    this.previous = totals;
    if (this.source.peers) {
      const self: LiveNode = { node: out.node, self: true, connections: out.connections, in: out.in, out: out.out, dropped: out.dropped };
      const nodes = [...this.peerState.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      out.nodes = [self, ...nodes.filter(([, p]) => p.line !== null && now - p.at <= PEER_STALE_MS).map(([, p]) => p.line!)];
      out.nodesMissing = nodes.filter(([, p]) => p.line === null || now - p.at > PEER_STALE_MS)
        .map(([node, p]) => ({ node, reason: p.reason ?? (p.at === 0 ? 'no answer yet' : `no figures for ${PEER_STALE_MS / 1000} s`) }));
    }
    return out;
  }

  /** Asks each other running node for its totals, unless its last question is still open (every
   * tick; the answers are in the samples that follow). */
  askPeers(): void {
    const peers = this.source.peers;
    if (!peers) return;
    const running = new Set(peers.running());
    // A node no longer running (no longer asked) is forgotten.
    for (const node of this.peerState.keys()) if (!running.has(node)) this.peerState.delete(node);
    for (const node of running) {
      let p = this.peerState.get(node);
      if (!p) {
        p = { at: 0, totals: null, line: null, asking: false, reason: null };
        this.peerState.set(node, p);
      }
      if (p.asking) continue;
      p.asking = true;
      const state = p;
      peers.ask(node).then((r) => this.took(node, state, r), (err: unknown) => this.took(node, state, { reason: `failed: ${String(err)}` })).finally(() => {
        state.asking = false;
      });
    }
  }

  /** A node's answer: its rates since its previous answer (on its own clock). */
  private took(node: string, p: PeerState, r: { results: PeerTotals[] } | { reason: string }, now = Date.now()): void {
    if (this.peerState.get(node) !== p) return; // the feed stopped, or the node left, meanwhile
    if ('reason' in r) {
      p.reason = r.reason;
      return;
    }
    const cur = r.results[0];
    if (!cur || typeof cur.t !== 'number') {
      p.reason = 'failed: an answer without figures';
      return;
    }
    const prev = p.totals;
    if (prev && cur.t <= prev.t) return; // not newer than what is shown
    const seconds = prev ? (cur.t - prev.t) / 1000 : 0;
    // Counters only grow; a restarted worker (its counters from zero) gives no negative rate.
    const rate = (a: number, b: number | undefined) => (b === undefined || seconds <= 0 ? 0 : Math.max(0, (a - b) / seconds));
    p.line = { node, self: false, connections: cur.connections, in: rate(cur.received, prev?.received), out: rate(cur.sent, prev?.sent), dropped: rate(cur.dropped, prev?.dropped) };
    p.totals = cur;
    p.at = now;
    p.reason = null;
  }
}
