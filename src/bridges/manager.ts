// BridgeManager: every MQTT bridge of this broker (main thread). Bridges come from the
// configuration file (`bridges`, read-only in the admin API, never stored) and from the admin API
// (stored as admin documents of kind 'bridge'; a stored one whose name a file bridge has is
// skipped and logged). A running bridge has a handle: its local filters are routing-core entries
// under it, every worker knows the set of bridge handles (sent whole, also to a restarted worker),
// and the messages the workers post for a handle go to that bridge's outbound queue. In a cluster
// (leases given) each bridge runs on one node at a time, the one holding its lease: one
// connection to the remote broker, each inbound message brought in once; messages published on
// other nodes reach it through the cluster (its local filters are this node's interest).
import type { Logger } from '../log/index.ts';
import type { RunLeases } from '../cluster/run-leases.ts';
import type { Store } from '../store/types.ts';
import type { BatchMessage } from '../worker/messages.ts';
import { parseBridgeConfig, redactBridge, type BridgeConfig } from './bridge-config.ts';
import { Bridge, readTlsFiles, type BridgeStatus } from './bridge.ts';
import { BridgeCounters, type DropReason } from './counters.ts';
import { BridgeConfigError, BridgeError } from './errors.ts';
import type { BridgeOutput } from './worker-bridges.ts';
import type { TapOwnerHost } from '../features/feature.ts';

const KIND = 'bridge';

/** What the manager needs of the broker (the supervisor gives it). */
export interface BridgeHost extends TapOwnerHost {
  onBridgeOutputs(fn: (items: BridgeOutput[]) => void): void;
  /** `orderKey`: every batch with the same key is routed by the same worker (their order kept). */
  publishBatch(messages: BatchMessage[], publisher: number, publisherHash: number, orderKey: string): Promise<number[]>;
}

export type BridgeSource = 'config' | 'api';

interface Entry {
  config: BridgeConfig;
  source: BridgeSource;
  createTime: string;
  counters: BridgeCounters;
  /** Its handle and runtime while it runs. */
  running: Bridge | null;
  /** Why it is not running although enabled (it failed to start). */
  startError: string | null;
}

/** A bridge as the admin API answers it (no password). */
export type BridgeView = ReturnType<typeof redactBridge> & { source: BridgeSource; createTime: string };

export interface BridgeRuntime extends BridgeStatus {
  name: string;
  source: BridgeSource;
  enabled: boolean;
  messagesIn: number;
  messagesOut: number;
  dropped: Record<DropReason, number>;
  /** In a cluster: the node running it (null: none known); absent without a cluster. */
  runningOn?: string | null;
}

const leaseKey = (name: string) => `bridge.${name}`;
export const BRIDGE_KIND = KIND;

export class BridgeManager {
  private readonly entries = new Map<string, Entry>();
  private readonly byHandle = new Map<number, Bridge>();
  private closed = false;
  private leases: RunLeases | null = null;

  constructor(
    private readonly host: BridgeHost,
    /** Where API bridges are kept; null: only the file's bridges (no admin API). */
    private readonly store: Store | null,
    private readonly log: Logger,
    private readonly nodeName: string,
  ) {
    host.onBridgeOutputs((items) => this.outputs(items));
    host.onWorkerStart((worker) => {
      return host.call(worker, 'bridges.set', { handles: [...this.byHandle.keys()] }).catch((err: unknown) => this.log.error('bridges not installed on a restarted worker', { worker, err }));
    });
  }

  /** In a cluster, before load: each bridge runs where its lease is held. */
  useLeases(leases: RunLeases): void {
    this.leases = leases;
  }

  /** A bridge added, changed or removed on another node of the cluster (`doc` null: removed),
   * applied here as this node's API would (the store is written by the caller). */
  async applyStored(name: string, doc: { config: unknown; createTime: string } | null): Promise<void> {
    const e = this.entries.get(name);
    if (e?.source === 'config') {
      this.log.error('a bridge from another node has the name of a bridge of the configuration file; the file wins', { name });
      return;
    }
    if (e) {
      await this.halt(e);
      this.entries.delete(name);
    }
    if (doc === null) return;
    const config = parseBridgeConfig(doc.config);
    const entry: Entry = { config, source: 'api', createTime: doc.createTime, counters: new BridgeCounters(), running: null, startError: null };
    this.entries.set(name, entry);
    if (config.enabled) await this.start(entry);
  }

  /** Starts the file's bridges, then the stored ones. A bridge that fails to start is kept, not
   * running, with the reason in its runtime. */
  async load(fileBridges: readonly BridgeConfig[]): Promise<void> {
    const now = new Date().toISOString();
    for (const config of fileBridges) this.entries.set(config.name, { config, source: 'config', createTime: now, counters: new BridgeCounters(), running: null, startError: null });
    if (this.store) {
      for (const { id, doc } of await this.store.listAdmin<{ config: unknown; createTime: string }>(KIND)) {
        let config: BridgeConfig;
        try {
          config = parseBridgeConfig(doc.config);
        } catch (err) {
          this.log.error('stored bridge does not validate; not started', { id, err });
          continue;
        }
        if (this.entries.has(config.name)) {
          this.log.error('stored bridge has the name of a bridge of the configuration file; the file wins', { name: config.name });
          continue;
        }
        this.entries.set(config.name, { config, source: 'api', createTime: doc.createTime, counters: new BridgeCounters(), running: null, startError: null });
      }
    }
    for (const e of this.entries.values()) {
      if (!e.config.enabled) continue;
      try {
        await this.start(e);
      } catch (err) {
        this.log.error('bridge failed to start', { bridge: e.config.name, err });
      }
    }
  }

  list(): BridgeView[] {
    return [...this.entries.values()].map((e) => this.view(e));
  }

  get(name: string): BridgeView {
    return this.view(this.entry(name));
  }

  /** Adds a bridge from the admin API (stored) and starts it when enabled. */
  async add(input: unknown): Promise<BridgeView> {
    const config = parseBridgeConfig(input);
    if (this.entries.has(config.name)) throw new BridgeError('CONFLICT', 'name', `name: a bridge named ${config.name} exists`);
    const e: Entry = { config, source: 'api', createTime: new Date().toISOString(), counters: new BridgeCounters(), running: null, startError: null };
    if (config.enabled) this.checkStartable(config);
    await this.store?.putAdmin(KIND, config.name, { config, createTime: e.createTime });
    this.entries.set(config.name, e);
    if (config.enabled) await this.start(e);
    return this.view(e);
  }

  /** Replaces an API bridge's configuration (a missing password keeps the stored one) and
   * restarts it. */
  async update(input: unknown): Promise<BridgeView> {
    const name = (input as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || name === '') throw new BridgeConfigError('name', 'is required');
    const e = this.writable(name);
    const given = input as Record<string, unknown>;
    const config = parseBridgeConfig(given.password === undefined && e.config.password !== '' ? { ...given, password: e.config.password } : given);
    if (config.enabled) this.checkStartable(config);
    await this.store?.putAdmin(KIND, name, { config, createTime: e.createTime });
    await this.halt(e);
    e.config = config;
    if (config.enabled) await this.start(e);
    return this.view(e);
  }

  async delete(name: string): Promise<void> {
    const e = this.writable(name);
    await this.halt(e);
    this.entries.delete(name);
    await this.store?.deleteAdmin(KIND, name);
  }

  /** Starts or stops a bridge. An API bridge keeps the change (enabled); a file bridge runs or
   * not until the broker restarts, when the file decides again. */
  async setEnabled(name: string, enabled: boolean): Promise<BridgeView> {
    const e = this.entry(name);
    const changed = e.config.enabled !== enabled;
    if (enabled && e.running === null) {
      this.checkStartable(e.config);
      e.config = { ...e.config, enabled };
      await this.start(e);
    } else if (!enabled) await this.halt(e);
    if (changed) {
      e.config = { ...e.config, enabled };
      if (e.source === 'api') await this.store?.putAdmin(KIND, name, { config: e.config, createTime: e.createTime });
    }
    return this.view(e);
  }

  runtime(name?: string): BridgeRuntime[] {
    const list = name === undefined ? [...this.entries.values()] : [this.entry(name)];
    return list.map((e) => {
      const status: BridgeStatus = e.running?.status() ?? { state: 'stopped', connectedSince: null, lastError: e.startError, lastErrorAt: null, queued: 0, inflight: 0, subscribed: false, inboundWaiting: 0 };
      const r: BridgeRuntime = { name: e.config.name, source: e.source, enabled: e.config.enabled, ...status, messagesIn: e.counters.in, messagesOut: e.counters.out, dropped: { ...e.counters.dropped } };
      if (this.leases !== null) r.runningOn = this.leases.owner(leaseKey(e.config.name));
      return r;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.entries.values()].map((e) => this.halt(e)));
  }

  /** Starts a bridge: here, or, in a cluster, on the node holding its lease. */
  private async start(e: Entry): Promise<void> {
    if (this.closed) return;
    if (this.leases === null) return this.startHere(e);
    this.leases.want(leaseKey(e.config.name), {
      granted: () => {
        if (this.entries.get(e.config.name) !== e || !e.config.enabled || e.running) return;
        this.startHere(e).catch((err: unknown) => this.log.error('bridge failed to start', { bridge: e.config.name, err }));
      },
      lost: () => void this.stopHere(e),
    });
  }

  private async startHere(e: Entry): Promise<void> {
    if (this.closed) return;
    const bridge = new Bridge(e.config, this.host.newHandle(), e.counters, { nodeName: this.nodeName, log: this.log, publishBatch: (m, p) => this.host.publishBatch(m, p, 0, `bridge:${e.config.name}`) });
    try {
      bridge.start();
    } catch (err) {
      e.startError = (err as Error).message;
      throw err;
    }
    e.startError = null;
    e.running = bridge;
    this.byHandle.set(bridge.handle, bridge);
    // Workers know the handle before the routing core can match it.
    await this.installHandles();
    const filters = bridge.localFilters();
    if (filters.length > 0) this.host.setTap(bridge.handle, filters);
  }

  /** Stops a bridge here, and gives its lease up (after it stopped) in a cluster. */
  private async halt(e: Entry): Promise<void> {
    await this.stopHere(e);
    await this.leases?.release(leaseKey(e.config.name));
  }

  /** Stops a running bridge: its filters leave the routing core, then the connection closes. */
  private async stopHere(e: Entry): Promise<void> {
    const bridge = e.running;
    if (!bridge) return;
    e.running = null;
    this.host.removeTap(bridge.handle);
    this.byHandle.delete(bridge.handle);
    await this.installHandles();
    await bridge.stop();
  }

  private async installHandles(): Promise<void> {
    const handles = [...this.byHandle.keys()];
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'bridges.set', { handles }).catch((err: unknown) => this.log.error('bridge handles not installed on a worker', { worker: w, err }))));
  }

  private outputs(items: BridgeOutput[]): void {
    for (const item of items) this.byHandle.get(item.handle)?.enqueue(item);
  }

  /** Reads the TLS files now, so the API answers 400 instead of a bridge that cannot start. */
  private checkStartable(config: BridgeConfig): void {
    readTlsFiles(config);
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new BridgeError('NOT_FOUND', 'name', `no bridge named ${name}`);
    return e;
  }

  private writable(name: string): Entry {
    const e = this.entry(name);
    if (e.source === 'config') throw new BridgeError('BRIDGE_FROM_CONFIG', 'name', `name: the bridge ${name} comes from the configuration file; change it there`);
    return e;
  }

  private view(e: Entry): BridgeView {
    return { ...redactBridge(e.config), source: e.source, createTime: e.createTime };
  }
}
