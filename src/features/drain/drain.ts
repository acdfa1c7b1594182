// Drain: this node's drain and rebalance (main thread). A drain stops accepting connections (every
// worker closes new sockets at once), moves the connected clients away at a rate (MQTT 5:
// DISCONNECT 0x9C with the Server Reference of the least loaded running node; MQTT 3.1.1: closed),
// and waits for their persistent sessions to be claimed by the nodes they reconnect to (the
// claims of src/cluster/claims.ts move them whole). A rebalance moves the excess of the nodes
// above their share to the nodes below, the same way, while they keep accepting. Owns the state
// of the current (or last) run; the figures are read by the API, the console and the metrics.
import type { BrokerConfig } from '../../config/index.ts';
import type { Logger } from '../../log/index.ts';
import { DomainError } from '../../errors/domain-error.ts';
import type { FeatureContext, FeatureWorkers } from '../feature.ts';
import { DrainPart } from './cluster-part.ts';
import { Mover, type MoveJob } from './mover.ts';
import { leastLoaded, planRebalance } from './targets.ts';
import type { DrainStatus, MoveReason, NodeLoad, RebalanceMove, Target } from './types.ts';

export interface DrainHost {
  readonly config: BrokerConfig;
  readonly log: Logger;
  readonly workers: FeatureWorkers;
  setDraining(on: boolean): void;
  /** The enabled plain MQTT endpoint's port, if any (this node's address when cluster.mqttAddress is ''). */
  mqttPort(): number | undefined;
}

export interface DrainCounters {
  moved: Record<MoveReason, number>;
  handoverClaimed: number;
  handoverTimeouts: number;
}

/** A run asked by a rebalance: the plan, and what each node answered. */
export interface RebalanceAnswer {
  moves: (RebalanceMove & { error?: string })[];
  status: DrainStatus;
}

function idle(rate: number): DrainStatus {
  return { state: 'idle', reason: null, started: null, finished: null, total: 0, moved: 0, remaining: 0, awaitingHandover: 0, handedOver: 0, handoverTimeouts: 0, rate, targets: [] };
}

export class Drain {
  /** The drain's part of the cluster link (null on a single node). */
  readonly part: DrainPart | null;
  readonly counters: DrainCounters = { moved: { drain: 0, stop: 0, rebalance: 0 }, handoverClaimed: 0, handoverTimeouts: 0 };
  private current: DrainStatus;
  private mover: Mover | null = null;
  private done: Promise<unknown> = Promise.resolve();
  /** Clients sent to each node since its load was measured (`at`): a drain spreads them. */
  private readonly sent = new Map<string, { at: number; n: number }>();

  constructor(private readonly host: DrainHost, private readonly cluster: FeatureContext['cluster']) {
    this.current = idle(host.config.drain.rate);
    this.part = cluster ? new DrainPart({ load: () => this.load(), moveForPeer: (move, rate) => this.moveForPeer(move, rate) }) : null;
  }

  status(): DrainStatus {
    return structuredClone(this.current);
  }

  /** Whether the node refuses new connections (draining or drained). */
  get draining(): boolean {
    return this.current.state === 'draining' || this.current.state === 'drained';
  }

  /** Where MQTT clients reach this node (null: no plain MQTT endpoint to name). */
  mqttAddress(): string | null {
    const c = this.host.config.cluster;
    if (c.mqttAddress !== '') return c.mqttAddress;
    const port = this.host.mqttPort();
    if (port === undefined) return null;
    return `${c.localAddress.slice(0, c.localAddress.lastIndexOf(':'))}:${port}`;
  }

  /** This node's load now (sent to the other nodes every second). */
  async load(): Promise<NodeLoad> {
    const counts = await this.host.workers.callAll('drain.connected');
    const st = this.current;
    return { node: this.host.config.nodeName, mqtt: this.mqttAddress(), connections: counts.reduce((a, b) => a + b, 0), state: st.state, moved: st.moved, remaining: st.remaining, at: Date.now() };
  }

  /** The other running nodes' loads (none on a single node). */
  peers(): NodeLoad[] {
    return this.part?.peers() ?? [];
  }

  /**
   * Starts draining: no new connection from now on; the clients move away at `rate` per second.
   * Answers the status at the start. A node draining or drained already: 409.
   */
  async drain(rate: number = this.host.config.drain.rate, reason: 'drain' | 'stop' = 'drain'): Promise<DrainStatus> {
    if (this.draining) throw new DomainError('CONFLICT', `this node is ${this.current.state} already (POST /api/cluster/drain/cancel accepts clients again)`);
    if (this.current.state === 'rebalancing') await this.stopRun();
    this.host.setDraining(true);
    const total = (await this.host.workers.callAll('drain.connected')).reduce((a, b) => a + b, 0);
    this.begin('draining', reason, rate, total);
    const fallback = this.host.config.drain.serverReference || null;
    this.startRun(reason, {
      limit: Number.MAX_SAFE_INTEGER,
      rate,
      pick: (n) => leastLoaded(this.peers(), this.sentSince(), n, fallback),
      used: (targets) => this.noteSent(targets),
      // Drained once what still reached this node for the moved sessions has followed them: the
      // node may be stopped then.
      settled: async () => (await this.cluster?.departuresSettled()) ?? true,
    });
    this.host.log.info('draining: no new connections; clients move away', { rate, clients: total });
    return this.status();
  }

  /** Accepts connections again and stops moving clients (those moved stay where they went). */
  async cancel(): Promise<DrainStatus> {
    if (this.current.state === 'idle') throw new DomainError('CONFLICT', 'nothing to cancel: this node is not draining or rebalancing');
    await this.stopRun();
    this.host.setDraining(false);
    this.current.state = 'idle';
    this.current.finished ??= new Date().toISOString();
    this.host.log.info('drain cancelled: accepting connections again', { moved: this.current.moved });
    return this.status();
  }

  /**
   * Evens the connections across the running nodes: plans the moves from the nodes' loads, runs
   * this node's part and asks the others to run theirs. Needs a cluster; refused while this node
   * drains or rebalances (409).
   */
  async rebalance(rate: number = this.host.config.drain.rate): Promise<RebalanceAnswer> {
    const part = this.part;
    if (!part) throw new DomainError('CONFLICT', 'a single node has nothing to rebalance (cluster.enabled is off)');
    if (this.current.state !== 'idle') throw new DomainError('CONFLICT', `this node is ${this.current.state}`);
    const self = await this.load();
    const loads = [self, ...this.peers()].filter((l) => l.state === 'idle' || l.state === 'rebalancing');
    const moves = planRebalance(loads);
    const answered: RebalanceAnswer['moves'] = [];
    for (const move of moves) {
      try {
        if (move.from === self.node) this.moveForPeer(move, rate);
        else await part.ask(move, rate);
        answered.push(move);
      } catch (err) {
        answered.push({ ...move, error: (err as Error).message });
        this.host.log.warn('rebalance: a node did not take its part', { node: move.from, err });
      }
    }
    this.host.log.info('rebalance planned', { nodes: loads.length, moves: moves.map((m) => ({ from: m.from, count: m.count })) });
    return { moves: answered, status: this.status() };
  }

  /** This node's part of a rebalance (asked by any node, this one included). */
  moveForPeer(move: RebalanceMove, rate: number): void {
    if (this.current.state !== 'idle') throw new Error(`${this.host.config.nodeName} is ${this.current.state}`);
    if (!Number.isInteger(rate) || rate < 1 || rate > 100_000) throw new Error(`rate must be an integer 1..100000, got ${rate}`);
    const quotas = move.targets.map((t) => ({ ...t }));
    this.begin('rebalancing', 'rebalance', rate, move.count);
    this.startRun('rebalance', {
      limit: move.count,
      rate,
      pick: (n) => {
        const left = quotas.map((q) => q.quota);
        const out: (Target | null)[] = [];
        for (let i = 0; i < n; i++) {
          let best = -1;
          for (let k = 0; k < left.length; k++) if (left[k] > 0 && (best < 0 || left[k] > left[best])) best = k;
          if (best < 0) break;
          left[best]--;
          out.push({ node: quotas[best].node, address: quotas[best].address });
        }
        return out;
      },
      used: (targets) => {
        for (const t of targets) {
          const q = quotas.find((x) => x.node === t?.node);
          if (q) q.quota--;
        }
      },
    });
  }

  /** With drain.onStop: drains before the node stops, for drain.stopTimeout seconds at most. */
  async beforeStop(): Promise<void> {
    const c = this.host.config.drain;
    if (!c.onStop) return;
    if (!this.draining) {
      try {
        await this.drain(c.rate, 'stop');
      } catch (err) {
        this.host.log.error('the drain on stop did not start; stopping at once', { err });
        return;
      }
    }
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      this.done.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), c.stopTimeout * 1000))),
    ]);
    clearTimeout(timer);
    if (!finished) {
      this.host.log.warn('the drain on stop did not finish within drain.stopTimeout; stopping with the clients left', { remaining: this.current.remaining, awaitingHandover: this.current.awaitingHandover });
      await this.stopRun();
    }
  }

  /** Resolves when the current run ends (at once when none runs). */
  settled(): Promise<unknown> {
    return this.done;
  }

  async close(): Promise<void> {
    await this.stopRun();
  }

  private begin(state: 'draining' | 'rebalancing', reason: MoveReason, rate: number, total: number): void {
    this.current = { ...idle(rate), state, reason, started: new Date().toISOString(), total, remaining: total };
  }

  private startRun(reason: MoveReason, job: Pick<MoveJob, 'limit' | 'rate' | 'pick' | 'used' | 'settled'>): void {
    const st = this.current;
    const mover = new Mover(this.host.workers, st);
    this.mover = mover;
    this.done = mover.run({
      ...job,
      handoverTimeoutMs: this.host.config.drain.handoverTimeout * 1000,
      onMoved: (n) => (this.counters.moved[reason] += n),
      onHandover: (claimed, timedOut) => {
        this.counters.handoverClaimed += claimed;
        this.counters.handoverTimeouts += timedOut;
      },
    }).then((ended) => {
      if (this.mover !== mover) return;
      this.mover = null;
      if (!ended) return;
      st.finished = new Date().toISOString();
      st.state = st.state === 'draining' ? 'drained' : 'idle';
      this.host.log.info(st.state === 'drained' ? 'drained: every client moved away' : 'rebalance done', { moved: st.moved, handedOver: st.handedOver, handoverTimeouts: st.handoverTimeouts });
    }, (err: unknown) => {
      this.host.log.error('moving clients failed; the run stopped', { err });
      if (this.mover === mover) this.mover = null;
    });
  }

  private async stopRun(): Promise<void> {
    this.mover?.cancel();
    this.mover = null;
    await this.done;
  }

  private sentSince(): Map<string, number> {
    const out = new Map<string, number>();
    for (const l of this.peers()) {
      const s = this.sent.get(l.node);
      if (s && s.at === l.at) out.set(l.node, s.n);
      else this.sent.set(l.node, { at: l.at, n: 0 });
    }
    return out;
  }

  private noteSent(targets: readonly (Target | null)[]): void {
    for (const t of targets) {
      if (t?.node == null) continue;
      const s = this.sent.get(t.node);
      if (s) s.n++;
    }
  }
}
