// Taps: routing-core entries of the main thread's features (rules, log topics, MQTT bridges,
// the cluster's remote nodes, the console's message viewers). A tap is a handle with filters and
// no session: every worker's publishes find it like a subscriber's, and the worker that routed a
// message acts on the match (rules, log topics) or posts it here, once per tick, for the feature
// that owns the handle (bridges, viewers, the cluster). Owns the sinks of those posts and the
// generation counter the workers' match caches watch (main thread).
import { Router, TAP_WORKER } from '../native/index.ts';
import type { BridgeOutput, ViewerSkips } from '../bridges/worker-bridges.ts';
import type { RetainedChange } from '../router/retained-changes.ts';

/** A worker's ticket for the QoS 1/2 messages of one tick that went to other nodes. */
export interface ClusterTicket {
  worker: number;
  ticket: number;
}

/** A tap of a feature (open()): its handle in the routing core, and close(). */
export interface Tap {
  readonly handle: number;
  close(): Promise<void>;
}

/** What a tap needs of the workers: telling every running one, and each that starts, the set of
 * handles whose matches it posts here. */
export interface TapWorkers {
  callAll(op: 'taps.set', args: { handles: number[] }): Promise<unknown>;
  call(worker: number, op: 'taps.set', args: { handles: number[] }): Promise<unknown>;
  onWorkerStart(fn: (worker: number) => Promise<unknown>): void;
}

export class Taps {
  /** The features' taps whose matches are posted here, and where each goes. */
  private readonly forwarded = new Map<number, (items: BridgeOutput[]) => void>();
  private workers: TapWorkers | null = null;
  /** The cluster's node and forward handles (empty without a cluster) and where their matches go. */
  private clusterHandles = new Set<number>();
  private clusterOutputs: (items: BridgeOutput[], from: ClusterTicket | null) => void = () => {};
  private retainedChanges: (items: RetainedChange[]) => void = () => {};
  private ruleOutputs: (items: unknown[]) => void = () => {};
  private bridgeOutputs: (items: BridgeOutput[]) => void = () => {};
  /** The console's message viewers' handles (they share the bridges' per-tick posts). */
  private viewerHandles: ReadonlySet<number> = new Set();
  private viewerOutputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void = () => {};

  /** `generation`: the shared counter the workers' match caches watch (bumped on each change). */
  constructor(private readonly router: InstanceType<typeof Router>, private readonly generation: Int32Array, private readonly newHandle: () => number) {}

  /** The workers the forwarded taps are installed on (each that starts gets them first). */
  attach(workers: TapWorkers): void {
    this.workers = workers;
    workers.onWorkerStart((w) => workers.call(w, 'taps.set', { handles: [...this.forwarded.keys()] }));
  }

  /**
   * Opens a tap for a feature: `filters` in the routing core under a new handle, and the
   * messages any worker routes to them posted to `sink` once per tick (copies: a tap costs a copy
   * of each matching message to the main thread, so a feature taps what it needs, not `#`).
   */
  async open(filters: readonly string[], sink: (items: BridgeOutput[]) => void): Promise<Tap> {
    const handle = this.newHandle();
    this.forwarded.set(handle, sink);
    await this.tellWorkers();
    this.set(handle, filters);
    return {
      handle,
      close: async () => {
        this.remove(handle);
        this.forwarded.delete(handle);
        await this.tellWorkers();
      },
    };
  }

  private async tellWorkers(): Promise<void> {
    await this.workers?.callAll('taps.set', { handles: [...this.forwarded.keys()] });
  }

  /** Gives tap `handle` these filters in the routing core (replacing what it had). */
  set(handle: number, filters: readonly string[]): void {
    this.router.removeSession(handle);
    try {
      for (const f of filters) this.router.subscribe(f, handle, TAP_WORKER, 0, null);
    } finally {
      this.changed();
    }
  }

  /** Adds or removes one filter of a tap (a remote node's interest); a `$share/<group>/<filter>`
   * makes the handle a member of that group, its matches then told with `subscriptionId` (the
   * cluster's number for the group). */
  setFilter(handle: number, filter: string, on: boolean, subscriptionId = 0): void {
    if (on) this.router.subscribe(filter, handle, TAP_WORKER, 0, subscriptionId === 0 ? null : subscriptionId);
    else this.router.unsubscribe(filter, handle);
    this.changed();
  }

  /** Removes every filter of a tap. */
  remove(handle: number): void {
    this.router.removeSession(handle);
    this.changed();
  }

  private changed(): void {
    Atomics.add(this.generation, 0, 1);
  }

  /**
   * Reserves `nodes` handles for the cluster's remote nodes and one for the messages that come
   * from them, and makes the routing core keep the local interest (every subscription but those
   * of these handles). Before anything subscribes.
   */
  reserveCluster(nodes: number): { nodes: number[]; inbound: number; forwards: number[] } {
    const handles = Array.from({ length: nodes }, () => this.newHandle());
    const inbound = this.newHandle();
    // One forward handle per node too: the subscriptions of the sessions that left this node for
    // that one, kept a while (src/cluster/forwards.ts). They are this node's interest (not
    // excluded): the other nodes go on sending here what those sessions want until they know
    // where the sessions went.
    const forwards = Array.from({ length: nodes }, () => this.newHandle());
    if (!this.router.enableInterest([...handles, inbound])) throw new Error('the cluster must be set up before anything subscribes');
    this.clusterHandles = new Set([...handles, ...forwards]);
    return { nodes: handles, inbound, forwards };
  }

  onRuleOutputs(fn: (items: unknown[]) => void): void {
    this.ruleOutputs = fn;
  }

  onBridgeOutputs(fn: (items: BridgeOutput[]) => void): void {
    this.bridgeOutputs = fn;
  }

  onClusterOutputs(fn: (items: BridgeOutput[], from: ClusterTicket | null) => void): void {
    this.clusterOutputs = fn;
  }

  onRetainedChanges(fn: (items: RetainedChange[]) => void): void {
    this.retainedChanges = fn;
  }

  /** The console's message viewers: their handles now and where their matches go. */
  setViewers(handles: ReadonlySet<number>, outputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void): void {
    this.viewerHandles = handles;
    this.viewerOutputs = outputs;
  }

  /** A worker's rule outputs of one tick (actions that run in the main thread). */
  rulePosted(items: unknown[]): void {
    this.ruleOutputs(items);
  }

  /** A worker's matches of one tick for the bridges, the viewers and the cluster's nodes. */
  matchesPosted(items: BridgeOutput[], worker: number, ticket: number, skipped: ViewerSkips | null): void {
    let rest = this.viewerHandles.size === 0 ? items : this.takeViewerOutputs(items, skipped);
    if (this.forwarded.size > 0) rest = this.takeForwarded(rest);
    if (this.clusterHandles.size === 0) {
      if (rest.length > 0) this.bridgeOutputs(rest);
      return;
    }
    const bridges: BridgeOutput[] = [];
    const cluster: BridgeOutput[] = [];
    for (const item of rest) (this.clusterHandles.has(item.handle) ? cluster : bridges).push(item);
    if (bridges.length > 0) this.bridgeOutputs(bridges);
    if (cluster.length > 0 || ticket !== 0) this.clusterOutputs(cluster, ticket === 0 ? null : { worker, ticket });
  }

  /** A worker's retained sets and clears of one tick (for the cluster). */
  retainedPosted(items: RetainedChange[]): void {
    this.retainedChanges(items);
  }

  /** The items of a post that are for the features' taps, given to each; answers the others. */
  private takeForwarded(items: BridgeOutput[]): BridgeOutput[] {
    const rest: BridgeOutput[] = [];
    const bySink = new Map<(items: BridgeOutput[]) => void, BridgeOutput[]>();
    for (const item of items) {
      const sink = this.forwarded.get(item.handle);
      if (sink === undefined) rest.push(item);
      else {
        let list = bySink.get(sink);
        if (!list) bySink.set(sink, (list = []));
        list.push(item);
      }
    }
    for (const [sink, list] of bySink) sink(list);
    return rest;
  }

  /** The items of a post that are for the viewers, given to them; answers the others. */
  private takeViewerOutputs(items: BridgeOutput[], skipped: ViewerSkips | null): BridgeOutput[] {
    const rest: BridgeOutput[] = [];
    const viewers: BridgeOutput[] = [];
    for (const item of items) (this.viewerHandles.has(item.handle) ? viewers : rest).push(item);
    if (viewers.length > 0 || skipped !== null) this.viewerOutputs(viewers, skipped);
    return rest;
  }
}
