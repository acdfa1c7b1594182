// EndpointManager: the registry of endpoints (MQTT listeners) of this broker, in the main thread.
// It validates changes, applies them to every worker at once (listeners open, close or change
// limits without a restart), keeps them in the store and restores them at start. The endpoints of
// the configuration file come first; what the admin API changed is stored per id and applied over
// them (a removed configuration endpoint is stored as removed). Changes run one at a time.
import net from 'node:net';

import { DomainError, codeOfStatus } from '../errors/domain-error.ts';

import { reuseportListener, closeFd } from '../native/index.ts';
import type { Store } from '../store/types.ts';
import type { Logger } from '../log/index.ts';
import type { OpenEndpoint } from '../listener/listeners.ts';
import type { EndpointRuntime } from '../worker/ops/endpoints.ts';
import { EndpointCounters, MAX_ENDPOINT_SLOTS } from './endpoint-counters.ts';
import { checkEndpointCombination, checkEndpointFields, checkEndpointTls, checkRevocation, completeEndpoint, DEFAULT_BACKLOG, proxyFields, type EndpointConfig } from './endpoint-config.ts';
import type { OpName, OpResult, OpTail, WorkerCall } from '../worker/ops/index.ts';

const KIND = 'endpoint';

/** A refused change, a domain error: 400 (bad field), 404 (no such endpoint) or 409 (conflict). */
export class EndpointError extends DomainError {
  constructor(status: 400 | 404 | 409, field: string | undefined, message: string) {
    super(codeOfStatus(status), message, { field });
    this.name = 'EndpointError';
  }
}

export interface EndpointStatus {
  id: string;
  running: boolean;
  /** Connections open on the endpoint, over every worker. */
  endpointNumber: number;
}

interface Entry {
  config: EndpointConfig;
  slot: number;
}

type Stored = EndpointConfig | { id: string; removed: true };

export interface EndpointDeps {
  host: string;
  /** messageMaxSize of an endpoint that does not set it (limits.maxPacketSize, capped to the spec's range). */
  defaultMessageMaxSize: number;
  counters: EndpointCounters;
  store: Store | null;
  log: Logger;
  /** Ids of the running workers. */
  workers(): number[];
  call: WorkerCall;
}

export class EndpointManager {
  private readonly entries = new Map<string, Entry>();
  private nextSlot = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly changeListeners: (() => void)[] = [];

  constructor(private readonly deps: EndpointDeps) {}

  /** Calls `fn` after every change of the endpoints (added, updated, removed, here or on another
   * node of the cluster). */
  onChange(fn: () => void): void {
    this.changeListeners.push(fn);
  }

  /** The configuration's endpoints with the stored changes applied over them. */
  async restore(fromConfig: EndpointConfig[]): Promise<void> {
    const stored = this.deps.store ? await this.deps.store.listAdmin<Stored>(KIND) : [];
    const byId = new Map(fromConfig.map((e) => [e.id, e]));
    for (const { id, doc } of stored) {
      if ('removed' in doc) byId.delete(id);
      else byId.set(id, doc);
    }
    for (const config of byId.values()) this.entries.set(config.id, { config, slot: this.takeSlot() });
    if (stored.length) this.deps.log.info('endpoints restored', { stored: stored.length, endpoints: this.entries.size });
  }

  list(): EndpointConfig[] {
    return [...this.entries.values()].map((e) => e.config);
  }

  get(id: string): EndpointConfig | undefined {
    return this.entries.get(id)?.config;
  }

  byPort(port: number): EndpointConfig | undefined {
    for (const e of this.entries.values()) if (e.config.port === port) return e.config;
    return undefined;
  }

  slotOf(id: string): number | undefined {
    return this.entries.get(id)?.slot;
  }

  get counters(): EndpointCounters {
    return this.deps.counters;
  }

  /** What a worker opens when it starts: every endpoint, with a fresh listening socket for each
   * enabled TCP/TLS one. */
  specsForWorker(): OpenEndpoint[] {
    return [...this.entries.values()].map(({ config, slot }) => ({ config, slot, fd: this.fdFor(config) }));
  }

  /** Ports of every enabled endpoint, for the start-up check that nothing else holds them. */
  enabledPorts(): { id: string; host: string; port: number }[] {
    return this.list().filter((c) => c.enabled).map((c) => ({ id: c.id, host: c.host ?? this.deps.host, port: c.port }));
  }

  async status(id: string): Promise<EndpointStatus> {
    const entry = this.entries.get(id);
    if (!entry) throw new EndpointError(404, 'id', `endpoint ${id} not found`);
    const runtimes = await this.everyWorker('endpoints.runtime');
    const here = runtimes.map((list) => list.find((r) => r.id === id));
    return {
      id,
      running: entry.config.enabled && here.length > 0 && here.every((r) => r?.running === true),
      endpointNumber: here.reduce((n, r) => n + (r?.connections ?? 0), 0),
    };
  }

  /** Checks a new endpoint without adding it: the complete configuration, or an EndpointError. */
  async validateNew(input: unknown): Promise<EndpointConfig> {
    const config = this.checkFields(input);
    checkRevocation(config);
    await this.checkPlace(config, undefined);
    return config;
  }

  /** Checks a change without applying it: the configuration it would give. */
  async validateChange(id: string, input: unknown): Promise<EndpointConfig> {
    const entry = this.entries.get(id);
    if (!entry) throw new EndpointError(404, 'id', `endpoint ${id} not found`);
    const next = this.merge(entry.config, input);
    checkRevocation(next);
    await this.checkPlace(next, entry.config);
    return next;
  }

  add(input: unknown): Promise<EndpointConfig> {
    return this.serial(async () => {
      const config = await this.validateNew(input);
      const entry = { config, slot: this.takeSlot() };
      await this.openEverywhere(entry);
      this.entries.set(config.id, entry);
      if (config.isDefault) await this.makeOnlyDefault(config.id);
      await this.persist(config);
      this.deps.log.info('endpoint added', { id: config.id, port: config.port });
      return config;
    });
  }

  update(id: string, input: unknown): Promise<EndpointConfig> {
    return this.serial(async () => {
      const entry = this.entries.get(id);
      if (!entry) throw new EndpointError(404, 'id', `endpoint ${id} not found`);
      const prev = entry.config;
      const next = await this.validateChange(id, input);
      if (prev.isDefault && !next.isDefault) throw new EndpointError(409, 'isDefault', `endpoint ${id} is the default endpoint: make another one the default instead`);
      if (listenerChanged(prev, next)) {
        const nextEntry = { config: next, slot: entry.slot };
        await this.openEverywhere(nextEntry, entry);
        this.entries.set(id, nextEntry);
      } else {
        await this.everyWorker('endpoints.update', { config: next });
        entry.config = next;
      }
      if (next.isDefault && !prev.isDefault) await this.makeOnlyDefault(id);
      await this.persist(next);
      this.deps.log.info('endpoint updated', { id, port: next.port });
      return next;
    });
  }

  remove(id: string): Promise<EndpointConfig> {
    return this.serial(async () => {
      const entry = this.entries.get(id);
      if (!entry) throw new EndpointError(404, 'id', `endpoint ${id} not found`);
      if (entry.config.isDefault && this.entries.size > 1) throw new EndpointError(409, 'isDefault', `endpoint ${id} is the default endpoint: make another one the default first`);
      await this.everyWorker('endpoints.remove', { id });
      this.entries.delete(id);
      if (this.deps.store) {
        if (entry.config.source === 'config') await this.deps.store.putAdmin(KIND, id, { id, removed: true } satisfies Stored);
        else await this.deps.store.deleteAdmin(KIND, id);
      }
      this.deps.log.info('endpoint removed', { id, port: entry.config.port });
      return entry.config;
    });
  }

  /**
   * An endpoint changed on another node of the cluster (src/cluster/config-sync.ts), stored here
   * once applied: `doc` as stored (null or `removed`: gone). It is opened, changed or closed
   * on every worker like a local change, without the port check (on one host the nodes share the
   * port through SO_REUSEPORT), but never on a port another endpoint of this node holds.
   */
  applyStored(id: string, doc: unknown): Promise<void> {
    return this.serial(async () => {
      const entry = this.entries.get(id);
      if (doc === null || (typeof doc === 'object' && 'removed' in (doc as object))) {
        if (!entry) return;
        await this.everyWorker('endpoints.remove', { id });
        this.entries.delete(id);
        this.deps.log.info('endpoint removed on another node', { id, port: entry.config.port });
        return;
      }
      const config = doc as EndpointConfig;
      if (typeof doc !== 'object' || config.id !== id || typeof config.port !== 'number' || typeof config.enabled !== 'boolean') {
        throw new EndpointError(400, 'id', `endpoint ${id} from another node is not an endpoint configuration`);
      }
      for (const e of this.entries.values()) {
        if (e.config.id !== id && e.config.port === config.port) throw new EndpointError(409, 'port', `port ${config.port} is used by endpoint ${e.config.id} on this node`);
      }
      if (!entry) {
        const added = { config, slot: this.takeSlot() };
        await this.openEverywhere(added);
        this.entries.set(id, added);
      } else if (listenerChanged(entry.config, config)) {
        const changed = { config, slot: entry.slot };
        await this.openEverywhere(changed, entry);
        this.entries.set(id, changed);
      } else {
        await this.everyWorker('endpoints.update', { config });
        entry.config = config;
      }
      this.deps.log.info('endpoint changed on another node', { id, port: config.port, enabled: config.enabled });
    });
  }

  /** The store changes are written to from now on (the admin API's, which the cluster
   * replicates; with MEMORY the admin API's own). */
  useStore(store: Store): void {
    this.deps.store = store;
  }

  /** Whether a TCP port can be bound on `host` now (really tries it). */
  static portAvailable(host: string, port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
    });
  }

  // ---------------------------------------------------------------------------------------

  /** A new endpoint's fields checked and completed with defaults (no id, port or bind checks). */
  checkFields(input: unknown): EndpointConfig {
    return completeEndpoint(checkEndpointFields(input), { messageMaxSize: this.deps.defaultMessageMaxSize }, 'api');
  }

  private merge(prev: EndpointConfig, input: unknown): EndpointConfig {
    const fields = checkEndpointFields(input);
    if (fields.id !== undefined && fields.id !== prev.id) throw new EndpointError(400, 'id', 'an endpoint id cannot change');
    const next: EndpointConfig = { ...prev, ...fields, id: prev.id, createTime: prev.createTime, source: prev.source };
    // null clears a limit (unlimited) or TLS.
    const raw = input as Record<string, unknown>;
    for (const f of ['maxSessionSize', 'maxConnectionSize', 'maxConnectionPerSecond', 'rateLimit', 'totalRateLimit', 'sslConfig'] as const) if (raw[f] === null) delete next[f];
    // proxyProtocol 'off' is kept as none.
    delete next.proxyProtocol;
    Object.assign(next, proxyFields({ ...prev, ...(fields as Parameters<typeof proxyFields>[0]) }));
    checkEndpointTls(next);
    checkEndpointCombination(next);
    return next;
  }

  /** 409 when the id or port is taken by another endpoint, or the port by another program. */
  private async checkPlace(config: EndpointConfig, current: EndpointConfig | undefined): Promise<void> {
    if (!current && this.entries.has(config.id)) throw new EndpointError(409, 'id', `endpoint ${config.id} exists`);
    for (const e of this.entries.values()) {
      if (e.config.id !== config.id && e.config.port === config.port) throw new EndpointError(409, 'port', `port ${config.port} is used by endpoint ${e.config.id}`);
    }
    if (this.entries.size >= MAX_ENDPOINT_SLOTS - 1 && !current) throw new EndpointError(409, 'id', 'too many endpoints');
    const samePlace = current && current.port === config.port && (current.host ?? '') === (config.host ?? '') && current.enabled;
    if (config.enabled && !samePlace && !(await EndpointManager.portAvailable(config.host ?? this.deps.host, config.port))) {
      throw new EndpointError(409, 'port', `port ${config.port} is in use on ${config.host ?? this.deps.host}`);
    }
  }

  /** Opens (or re-opens) the endpoint on every worker; on any failure every worker goes back to
   * `previous` (or forgets the endpoint when it is new). */
  private async openEverywhere(entry: Entry, previous?: Entry): Promise<void> {
    const workers = this.deps.workers();
    const opened: number[] = [];
    try {
      for (const w of workers) {
        const fd = this.fdFor(entry.config);
        try {
          await this.deps.call(w, 'endpoints.open', { config: entry.config, slot: entry.slot, fd } satisfies OpenEndpoint);
        } catch (err) {
          if (fd !== undefined) closeFd(fd);
          throw err;
        }
        opened.push(w);
      }
    } catch (err) {
      if (previous) {
        await Promise.allSettled(workers.map((w) => this.deps.call(w, 'endpoints.open', { config: previous.config, slot: previous.slot, fd: this.fdFor(previous.config) } satisfies OpenEndpoint)));
      } else {
        await Promise.allSettled(opened.map((w) => this.deps.call(w, 'endpoints.remove', { id: entry.config.id })));
      }
      const message = (err as Error).message;
      throw new EndpointError(409, 'port', `endpoint ${entry.config.id} could not open: ${message}`);
    }
  }

  private fdFor(config: EndpointConfig): number | undefined {
    if (!config.enabled || config.useWebsocket) return undefined;
    return reuseportListener(config.host ?? this.deps.host, config.port, config.serverOptions.backlog ?? DEFAULT_BACKLOG, false);
  }

  private async makeOnlyDefault(id: string): Promise<void> {
    for (const e of this.entries.values()) {
      if (e.config.id === id || !e.config.isDefault) continue;
      e.config = { ...e.config, isDefault: false };
      await this.everyWorker('endpoints.update', { config: e.config });
      await this.persist(e.config);
    }
  }

  private async persist(config: EndpointConfig): Promise<void> {
    await this.deps.store?.putAdmin(KIND, config.id, config);
  }

  private everyWorker<K extends OpName>(op: K, ...tail: OpTail<K>): Promise<OpResult<K>[]> {
    return Promise.all(this.deps.workers().map((w) => this.deps.call(w, op, ...tail)));
  }

  private takeSlot(): number {
    if (this.nextSlot >= MAX_ENDPOINT_SLOTS) throw new EndpointError(409, 'id', 'too many endpoints created since start');
    return this.nextSlot++;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run.then((result) => {
      for (const listener of this.changeListeners) listener();
      return result;
    });
  }
}


/** Whether a change needs the listener re-opened (rather than new limits only). */
function listenerChanged(a: EndpointConfig, b: EndpointConfig): boolean {
  return a.port !== b.port || a.host !== b.host || a.useWebsocket !== b.useWebsocket || a.path !== b.path || a.enabled !== b.enabled ||
    JSON.stringify(a.sslConfig) !== JSON.stringify(b.sslConfig) || JSON.stringify(a.serverOptions) !== JSON.stringify(b.serverOptions) ||
    // PROXY protocol on or off: another kind of listener (mqtt.io node); the mode, the trusted
    // blocks and CN as username change in place, for new connections.
    (a.proxyProtocol === undefined) !== (b.proxyProtocol === undefined);
}
