// Supervisor: the main thread. Creates the SO_REUSEPORT listening sockets (one per worker and
// listener), starts the worker threads, connects every pair of workers with a MessageChannel,
// restarts a worker that dies, publishes $SYS, and runs the graceful shutdown. Holds no session
// state of its own. Owns the log store: the main thread's lines reach it through a sink on its
// logger, the workers' through their stdout, which it reads and passes on to its own.
import { MessageChannel, type Worker } from 'node:worker_threads';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { DomainError, codeOfStatus, isErrorCode } from '../errors/domain-error.ts';
import { reuseportListener, listenerPort, closeFd, Router, RetainedStore, ClientRegistry, RULE_WORKER, NO_PUBLISHER } from '../native/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import { addLogSink, setLogLevel, type Logger, type LogLevel } from '../log/index.ts';
import { LogStore } from '../log/log-store.ts';
import { relayLines } from '../log/line-relay.ts';
import { spawnTsWorker } from '../threads/spawn.ts';
import type { BatchMessage, FromWorker, RpcError, ToWorker } from '../worker/messages.ts';
import type { OpName, OpResult, OpTail } from '../worker/ops/index.ts';
import type { NodeClaim, NodeClaimReply } from '../worker/node-claims.ts';
import type { SessionState } from '../engine/session/handover.ts';
import type { WorkerStatsSnapshot } from '../stats/worker-stats.ts';
import type { BridgeOutput, ViewerSkips } from '../bridges/worker-bridges.ts';
import type { RetainedChange } from '../router/retained-changes.ts';
import { sysTopics } from './sys-topics.ts';
import { createStore } from '../store/index.ts';
import type { Store, StoredSession } from '../store/types.ts';
import { toRecord } from './message.ts';
import { EndpointManager } from './endpoints.ts';
import { configEndpoints, LIMITS } from './endpoint-config.ts';
import { createCounters, EndpointCounters } from './endpoint-counters.ts';
import { createFailureTable } from '../auth/failure-limiter.ts';
import { NO_PROCESSORS, type ProcessorState } from '../scripts/types.ts';
import { NO_POLICIES, type PolicyQuestion, type PolicyReply, type PolicyState } from '../policies/channel.ts';
import { MAX_NODE_SLOTS } from '../store/message-id.ts';

/** A worker's ticket for the QoS 1/2 messages of one tick that went to other nodes. */
export interface ClusterTicket {
  worker: number;
  ticket: number;
}

export interface Ports {
  tcp?: number;
  tls?: number;
  ws?: number;
}

/**
 * Where a worker thread is in its start: 'starting' (restoring its sessions), 'loaded' (it answers
 * operations and routes, and the features install their state on it, but it has no listener yet),
 * 'open' (its listeners accept clients).
 */
type Phase = 'starting' | 'loaded' | 'open';

interface Slot {
  id: number;
  worker: Worker | null;
  phase: Phase;
  restarts: number;
  stats: WorkerStatsSnapshot | null;
  /** Settles when the worker's stdout has ended (its last lines are in the log store). */
  relayed: Promise<void> | null;
}

/** A worker operation's refusal or failure, as the worker reported it, rebuilt as a domain error
 * (an unknown code takes the code of its status; a failure is INTERNAL_ERROR). */
export class WorkerOpError extends DomainError {
  constructor(e: RpcError) {
    super(isErrorCode(e.code) ? e.code : codeOfStatus(e.status ?? 500), e.message, { field: e.field, details: e.details });
    this.name = 'WorkerOpError';
  }
}

const RPC_TIMEOUT_MS = 5000;
/** How long a started worker waits for the features' state before it opens its listeners
 * anyway (a feature that failed to install is logged). */
const INSTALL_TIMEOUT_MS = 10_000;
/** How long a worker has to give up sessions another node claims (a hand-over between workers
 * may wait for a CONNECT in progress). */
const RELEASE_TIMEOUT_MS = 8000;
/** How long a shutdown waits for a stopped worker's last lines. */
const RELAY_DRAIN_MS = 1000;

const WORKER_ENTRY = new URL('../worker/worker.ts', import.meta.url);
const SWEEP_INTERVAL_MS = 60_000;
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export class Supervisor {
  readonly ports: Ports = {};
  private readonly slots: Slot[] = [];
  private stopping = false;
  private sysTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  /** The main thread's own store handle (restore at start, expiry sweeps); null with MEMORY. */
  private store: Store | null = null;
  private slotOfNode = 0;
  /** The stored sessions open() read, until startWorkers() hands them to the workers. */
  private stored: StoredSession[] = [];
  readonly startedAt = Date.now();
  private rpcSeq = 0;
  private nextPublishWorker = 0;
  private readonly startListeners: ((worker: number) => void | Promise<unknown>)[] = [];
  /** The cluster's node handles (empty without a cluster) and where their matches go. */
  private clusterHandles = new Set<number>();
  private clusterOutputs: (items: BridgeOutput[], from: ClusterTicket | null) => void = () => {};
  private retainedChanges: (items: RetainedChange[]) => void = () => {};
  private readonly exitListeners: ((worker: number) => void)[] = [];
  private ruleOutputs: (items: unknown[]) => void = () => {};
  private bridgeOutputs: (items: BridgeOutput[]) => void = () => {};
  /** The console's message viewers' handles (they share the bridges' per-tick posts) and where
   * their matches go. */
  private viewerHandles: ReadonlySet<number> = new Set();
  private viewerOutputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void = () => {};
  /** Without a policy manager (no admin API) nothing asks: there are no policies. */
  private policyQuestions: (worker: number, questions: PolicyQuestion[]) => void = () => {};
  /** Where the workers' client-id claims for the cluster's other nodes go (src/cluster/claims.ts). */
  private nodeClaims: (worker: number, claims: NodeClaim[]) => void = (worker, claims) => this.answerNodeClaims(worker, claims.map((c) => ({ id: c.id, state: null })));
  private policyState: PolicyState = NO_POLICIES;
  private processorState: ProcessorState = NO_PROCESSORS;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  readonly router: InstanceType<typeof Router>;
  readonly retained: InstanceType<typeof RetainedStore>;
  readonly registry: InstanceType<typeof ClientRegistry>;
  /** Per-endpoint counts every worker shares (connection and session limits). */
  private readonly countersBuffer = createCounters();
  /** Shared by the workers' routers: the subscription set's generation (workers drop their
   * remembered matches when it moves) and the routing clock. */
  private readonly routeShared = new SharedArrayBuffer(8);
  /** Failed MQTT authentications per source address (every worker's limiter maps it). */
  private readonly authFailures = createFailureTable();
  /** The endpoints (MQTT listeners), managed at run time by the admin API. */
  endpoints!: EndpointManager;
  /** Rotating files in <dataDir>/logs; null when log.file.enabled is off. */
  private logStore: LogStore | null = null;
  private detachLogSink: () => void = () => {};
  /** The log level now (changed at run time by setLogLevel; restarted workers start with it). */
  private level: LogLevel;

  constructor(private config: BrokerConfig, private readonly log: Logger, private readonly routerName = 'default') {
    this.router = Router.open(routerName);
    this.retained = RetainedStore.open(routerName);
    this.registry = ClientRegistry.open(routerName);
    this.level = config.log.level;
  }

  /** open(), then startWorkers(). */
  async start(): Promise<Ports> {
    await this.open();
    return this.startWorkers();
  }

  /**
   * Opens the log store, the store (retained messages back in the routing core) and the
   * endpoints, and checks their ports are free; no worker runs yet. The features load their
   * state between this and startWorkers(), so the workers start with it.
   */
  async open(): Promise<Ports> {
    this.openLogStore();
    try {
      await this.openEndpoints();
    } catch (err) {
      this.closeLogStore();
      throw err;
    }
    return this.ports;
  }

  private async openEndpoints(): Promise<void> {
    const c = this.config.mqtt;
    // Port 0 (tests): the first socket picks a free port, the others join it.
    if (c.tcp.enabled) this.ports.tcp = c.tcp.port || await freePort(c.host);
    if (c.tls.enabled) this.ports.tls = c.tls.port || await freePort(c.host);
    if (c.ws.enabled) this.ports.ws = c.ws.port || await freePort(c.host);
    const stored = await this.openStore();
    this.endpoints = new EndpointManager({
      host: c.host,
      defaultMessageMaxSize: Math.min(Math.max(this.config.limits.maxPacketSize, LIMITS.messageMaxSize[0]), LIMITS.messageMaxSize[1]),
      counters: new EndpointCounters(this.countersBuffer),
      store: this.store,
      log: this.log,
      workers: () => this.slots.filter((s) => s.worker && s.phase === 'open').map((s) => s.id),
      call: (w, op, ...tail) => this.call(w, op, ...tail),
    });
    await this.endpoints.restore(configEndpoints(this.config, this.ports));
    // The ports the endpoints really use (stored changes may have moved one).
    for (const name of ['tcp', 'tls', 'ws'] as const) {
      const e = this.endpoints.get(name);
      if (e?.enabled) this.ports[name] = e.port;
      else delete this.ports[name];
    }
    try {
      await this.checkPortsFree();
    } catch (err) {
      await this.store?.close();
      throw err;
    }
    this.stored = stored;
  }

  /** Starts the worker threads (each takes a share of the stored sessions, gets every feature's
   * state, then opens its listeners); resolves once all accept clients. */
  async startWorkers(): Promise<Ports> {
    const stored = this.stored;
    this.stored = [];
    for (let id = 0; id < this.config.workers; id++) this.slots.push({ id, worker: null, phase: 'starting', restarts: 0, stats: null, relayed: null });
    // Stored sessions are spread over the workers; each restores its share before accepting.
    const shares = this.slots.map(() => [] as StoredSession[]);
    stored.forEach((s, i) => shares[i % shares.length].push(s));
    await Promise.all(this.slots.map((s, i) => this.spawn(s, shares[i])));
    this.sysTimer = this.config.sys.enabled ? setInterval(() => void this.publishSys(), this.config.sys.interval * 1000) : null;
    return this.ports;
  }

  /**
   * SO_REUSEPORT would let a second broker share a port with one already running and split the
   * clients between them. A socket without it cannot join a port held with it, so a plain bind
   * first tells whether the port is really free.
   */
  private async checkPortsFree(): Promise<void> {
    for (const { id, host, port } of this.endpoints.enabledPorts()) {
      await new Promise<void>((resolve, reject) => {
        const probe = net.createServer();
        probe.once('error', (err: NodeJS.ErrnoException) => reject(Object.assign(new Error(`endpoint ${id}: port ${port} on ${host} is in use (${err.code})`), { code: err.code })));
        probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
      });
    }
  }

  /** The log store, and the sink that puts the main thread's lines into it. */
  private openLogStore(): void {
    const f = this.config.log.file;
    if (!f.enabled) return;
    const store = new LogStore({ dir: path.resolve(this.config.dataDir, 'logs'), maxSize: f.maxSize, maxFiles: f.maxFiles });
    store.open();
    this.logStore = store;
    this.detachLogSink = addLogSink(this.log, (line) => store.append(line));
  }

  private closeLogStore(): void {
    this.detachLogSink();
    this.logStore?.close();
  }

  /** The log store (null when log.file.enabled is off). */
  get logs(): LogStore | null {
    return this.logStore;
  }

  get logLevel(): LogLevel {
    return this.level;
  }

  /** Changes the log level of the main thread's logger and of every worker (and of workers
   * started later). */
  async setLogLevel(level: LogLevel): Promise<void> {
    this.level = level;
    setLogLevel(this.log, level);
    await this.callAll('log.setLevel', { level });
  }

  /** Opens the store, puts the retained messages back into the shared retained store, starts
   * the expiry sweep, and answers the stored sessions. */
  private async openStore(): Promise<StoredSession[]> {
    if (this.config.store.storeType === 'MEMORY') return [];
    const store = await createStore(this.config);
    await store.open();
    this.store = store;
    const now = Date.now();
    for (const r of await store.loadRetained()) {
      const m = r.message;
      if (m.expiresAt !== 0 && m.expiresAt <= now) continue;
      this.retained.set(r.topic, toRecord({ topic: m.topic, topicBytes: Buffer.from(m.topic), payload: m.payload, qos: m.qos, retain: true, props: m.properties, expiresAt: m.expiresAt, receivedAt: storedAt(m.id, now), storeId: m.id }));
    }
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
    let sessions = await store.loadSessions();
    // Nodes of a cluster may share one database: each restores its own sessions only (those of a
    // node that went down are adopted by another: adoptSessions).
    if (this.config.cluster.enabled && sharedStore(store)) {
      sessions = sessions.filter((s) => s.node === undefined || s.node === this.config.nodeName);
      // Its slot makes the message ids this node stores unique among the nodes sharing the store.
      if (store.claimNodeSlot) this.slotOfNode = await store.claimNodeSlot(this.config.nodeName, MAX_NODE_SLOTS);
      this.log.info('node slot in the shared store', { slot: this.slotOfNode });
    }
    this.log.info('store opened', { type: store.kind, sessions: sessions.length, retained: this.retained.size });
    return sessions;
  }

  /** Expired messages and sessions leave the store while the broker runs. */
  private async sweep(): Promise<void> {
    try {
      const removed = await this.store!.deleteExpired(Date.now());
      if (removed.sessions.length || removed.messages) this.log.info('expired data removed', { sessions: removed.sessions.length, messages: removed.messages });
    } catch (err) {
      this.log.error('expiry sweep failed', { err });
    }
  }

  /**
   * The sessions another node of the cluster held in the database this node shares with it, once
   * that node went down: restored here, offline, spread over the workers (their clients reconnect
   * to them; their wills go out as after a restart), and stored as this node's. Answers how many.
   */
  async adoptSessions(node: string): Promise<number> {
    if (!this.store || !sharedStore(this.store) || !this.store.takeSessions) return 0;
    // Moved to this node in the store first, one session at a time: a client that reconnected
    // meanwhile on another node has taken its own (takeStoredSessions), and is left alone.
    const taken = new Set(await this.store.takeSessions(node, this.config.nodeName));
    if (taken.size === 0) return 0;
    const theirs = (await this.store.loadSessions()).filter((s) => taken.has(s.clientId));
    const workers = this.runningWorkers();
    if (theirs.length === 0 || workers.length === 0) return 0;
    const shares = workers.map(() => [] as StoredSession[]);
    theirs.forEach((s, i) => shares[i % shares.length].push(s));
    const counts = await Promise.all(workers.map((w, i) => this.call(w, 'cluster.adopt', { sessions: shares[i] }, RELEASE_TIMEOUT_MS * 4)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Moves the stored sessions of these claims from node `from` (which went down) to this node;
   * those of Clean Start claims end. Answers the client ids of the resumed ones moved (none
   * without a store the nodes share). */
  async takeStoredSessions(claims: readonly { clientId: string; resume: boolean }[], from: string): Promise<string[]> {
    const store = this.store;
    if (!store || !sharedStore(store) || !store.takeSessions || claims.length === 0) return [];
    const taken = new Set(await store.takeSessions(from, this.config.nodeName, claims.map((c) => c.clientId)));
    const resumed: string[] = [];
    for (const c of claims) {
      if (!taken.has(c.clientId)) continue;
      // Clean Start: the session ends [MQTT-3.1.2-4].
      if (c.resume) resumed.push(c.clientId);
      else await store.deleteSession(c.clientId);
    }
    return resumed;
  }

  /** The stored sessions a dead worker owned, for its replacement to restore. */
  private async orphanedSessions(worker: number): Promise<StoredSession[]> {
    if (!this.store) return [];
    const all = await this.store.loadSessions();
    return all.filter((s) => this.registry.lookup(s.clientId)?.[1] === worker);
  }

  private spawn(slot: Slot, restore: StoredSession[] = []): Promise<void> {
    const worker = spawnTsWorker(
      WORKER_ENTRY,
      { workerId: slot.id, config: { ...this.config, log: { ...this.config.log, level: this.level } }, counters: this.countersBuffer, routeShared: this.routeShared, routerName: this.routerName, nodeSlot: this.slotOfNode, restore, authFailures: this.authFailures, policies: this.policyState, processors: this.processorState },
      // A small nursery: message objects live and die in it, in the CPU caches (see the key).
      // With the log store on, the worker's stdout comes here (one writer for the files).
      { resourceLimits: { maxYoungGenerationSizeMb: this.config.workerYoungGeneration }, stdout: this.logStore !== null },
    );
    const logs = this.logStore;
    const module = `worker-${slot.id}`;
    slot.relayed = logs ? relayLines(worker.stdout, process.stdout, (line) => logs.append(line, module)) : null;
    slot.worker = worker;
    slot.phase = 'starting';
    return new Promise((resolve, reject) => {
      worker.on('message', (msg: FromWorker) => {
        switch (msg.t) {
          case 'loaded':
            slot.phase = 'loaded';
            this.connectPeers(slot);
            void this.install(slot, worker);
            break;
          case 'ready':
            slot.phase = 'open';
            resolve();
            break;
          case 'failed':
            reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
            break;
          case 'stats':
            slot.stats = msg.stats;
            break;
          case 'rpc-reply': {
            const p = this.pending.get(msg.id);
            if (!p) break;
            this.pending.delete(msg.id);
            clearTimeout(p.timer);
            if (msg.error) p.reject(new WorkerOpError(msg.error));
            else p.resolve(msg.value);
            break;
          }
          case 'rule-outputs':
            this.ruleOutputs(msg.items);
            break;
          case 'bridge-outputs': {
            const items = this.viewerHandles.size === 0 ? msg.items : this.takeViewerOutputs(msg.items, msg.skipped);
            if (this.clusterHandles.size === 0) {
              if (items.length > 0) this.bridgeOutputs(items);
            } else this.splitOutputs(items, slot.id, msg.ticket);
            break;
          }
          case 'retained-changes':
            this.retainedChanges(msg.items);
            break;
          case 'policy-questions':
            this.policyQuestions(slot.id, msg.questions);
            break;
          case 'node-claims':
            this.nodeClaims(slot.id, msg.claims);
            break;
          case 'stopped':
            break;
        }
      });
      worker.on('error', (err) => this.log.error('worker failed', { worker: slot.id, err }));
      worker.on('exit', (code) => {
        slot.worker = null;
        slot.phase = 'starting';
        for (const fn of this.exitListeners) fn(slot.id);
        slot.stats = null; // a dead worker's last counters are not reported as a live one's
        // The worker's listening sockets closed with its event loop; the fds are not ours to close.
        for (const other of this.slots) if (other !== slot && other.worker) post(other, { t: 'peer-gone', worker: slot.id });
        if (this.stopping) return;
        this.log.error('worker exited; restarting it', { worker: slot.id, code, restarts: slot.restarts });
        slot.restarts++;
        // Back off a little on repeated crashes.
        setTimeout(() => {
          if (this.stopping) return;
          // Its persistent sessions come back from the store; its clients reconnect to them.
          this.orphanedSessions(slot.id)
            .then((restore) => this.spawn(slot, restore))
            .catch((err) => this.log.error('worker restart failed', { worker: slot.id, err }));
        }, Math.min(5000, 100 * 2 ** Math.min(slot.restarts, 6)));
        reject(new Error(`worker ${slot.id} exited with code ${code} before it was ready`));
      });
    });
  }

  /**
   * Every feature's state goes to a (re)started worker before it opens its listeners: the worker
   * handles messages in order, so what a feature posts now is in place before the 'open' that
   * follows, and a change made meanwhile reaches it too (it answers calls from now on). So the
   * first client message the worker accepts already meets every rule, bridge, log topic, trace
   * and viewer.
   */
  private async install(slot: Slot, worker: Worker): Promise<void> {
    const installs = this.startListeners.map(async (fn) => fn(slot.id));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), INSTALL_TIMEOUT_MS)));
    const settled = await Promise.race([Promise.allSettled(installs), timedOut]);
    clearTimeout(timer);
    if (settled === 'timeout') this.log.error('a worker opens its listeners before every feature installed its state', { worker: slot.id, timeoutMs: INSTALL_TIMEOUT_MS });
    else for (const r of settled) if (r.status === 'rejected') this.log.error('a feature failed to install its state on a worker', { worker: slot.id, err: r.reason });
    // The endpoints as they are now (one may have changed while the worker started).
    if (slot.worker === worker) worker.postMessage({ t: 'open', endpoints: this.endpoints.specsForWorker() } satisfies ToWorker);
  }

  /** A MessageChannel between a (re)started worker and every other running worker. */
  private connectPeers(slot: Slot): void {
    for (const other of this.slots) {
      if (other === slot || !other.worker || other.phase === 'starting') continue;
      const { port1, port2 } = new MessageChannel();
      slot.worker!.postMessage({ t: 'peer', worker: other.id, port: port1 } satisfies ToWorker, [port1]);
      other.worker.postMessage({ t: 'peer', worker: slot.id, port: port2 } satisfies ToWorker, [port2]);
    }
  }

  /** Publishes a message through a running worker (it routes to every worker). */
  publish(topic: string, payload: Buffer, qos: 0 | 1 | 2 = 0, retain = false): boolean {
    const slot = this.slots.find((s) => s.worker && s.phase !== 'starting');
    if (!slot) return false;
    post(slot, { t: 'publish', message: { topic, payload, qos, retain, expiresAt: 0 } });
    return true;
  }

  /**
   * Publishes `messages` in order through one running worker (round robin over batches), as
   * client PUBLISHes from `publisher` (a handle from newHandle(), or NO_PUBLISHER): resolves once
   * each is routed and, where it must be kept, stored; rejects (UNAVAILABLE) when
   * that cannot be known, and the caller sends the batch again (at least once).
   */
  async publishBatch(messages: BatchMessage[], publisher = NO_PUBLISHER, publisherHash = 0, orderKey?: string): Promise<number[]> {
    return (await this.publishBatchCounted(messages, publisher, publisherHash, orderKey)).matched;
  }

  /** publishBatch, answering besides how many shared groups named by messages from another node
   * (published with the cluster's inbound handle) had no member here. */
  async publishBatchCounted(messages: BatchMessage[], publisher = NO_PUBLISHER, publisherHash = 0, orderKey?: string): Promise<{ matched: number[]; sharesMissed: number }> {
    const running = this.runningWorkers();
    if (running.length === 0) throw new WorkerOpError({ code: 'UNAVAILABLE', message: 'no worker is running', status: 503 });
    // With an order key, the same worker routes every batch of it (its messages keep their order).
    const worker = orderKey === undefined ? running[this.nextPublishWorker++ % running.length] : running[hashKey(orderKey) % running.length];
    return this.call(worker, 'clients.publishBatch', { messages, publisher, publisherHash });
  }

  /** Fresh counters from every running worker (each answers with a snapshot). */
  async collectStats(timeoutMs = 1000): Promise<WorkerStatsSnapshot[]> {
    const running = this.slots.filter((s) => s.worker && s.phase !== 'starting');
    await Promise.all(running.map((s) => new Promise<void>((resolve) => {
      const w = s.worker!;
      const timer = setTimeout(done, timeoutMs);
      function onMessage(m: FromWorker) {
        if (m.t === 'stats') done();
      }
      function done() {
        clearTimeout(timer);
        w.off('message', onMessage);
        resolve();
      }
      w.on('message', onMessage);
      post(s, { t: 'stats' });
    })));
    return running.map((s) => s.stats).filter((s): s is WorkerStatsSnapshot => s !== null);
  }

  /** Runs a named operation (src/worker/ops) on one worker and answers its result. */
  call<K extends OpName>(worker: number, op: K, ...[args, timeoutMs = RPC_TIMEOUT_MS]: OpTail<K>): Promise<OpResult<K>> {
    const slot = this.slots[worker];
    if (!slot?.worker || slot.phase === 'starting') return Promise.reject(new WorkerOpError({ code: 'UNAVAILABLE', message: `worker ${worker} is not running`, status: 503 }));
    const id = ++this.rpcSeq;
    return new Promise<OpResult<K>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new WorkerOpError({ code: 'UNAVAILABLE', message: `worker ${worker} did not answer ${op} within ${timeoutMs} ms`, status: 503 }));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      post(slot, { t: 'rpc', id, op, args: args ?? {} });
    });
  }

  /** Runs an operation on every running worker; answers the results in worker order. */
  callAll<K extends OpName>(op: K, ...tail: OpTail<K>): Promise<OpResult<K>[]> {
    return Promise.all(this.slots.filter((s) => s.worker && s.phase !== 'starting').map((s) => this.call(s.id, op, ...tail)));
  }

  /** The ids of the workers running now: those that answer operations (their listeners may not
   * be open yet, and a change sent to them is in place before they are). */
  runningWorkers(): number[] {
    return this.slots.filter((s) => s.worker && s.phase !== 'starting').map((s) => s.id);
  }

  /** Calls `fn` each time a worker has started (also after a restart), before it opens its
   * listeners: a feature sends its state to the worker there. The worker opens them once every
   * promise `fn` returned settled (INSTALL_TIMEOUT_MS at most). */
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void {
    this.startListeners.push(fn);
  }

  /** Calls `fn` each time a worker thread has exited (crashed, or at shutdown): what it held in
   * memory shared with the main thread is to be given back. */
  onWorkerExit(fn: (worker: number) => void): void {
    this.exitListeners.push(fn);
  }

  /** A handle no session or routing-core entry has had (the client registry's counter). */
  newHandle(): number {
    return this.registry.newHandle();
  }

  /** Where the workers' client-id claims go (the cluster). */
  onNodeClaims(fn: (worker: number, claims: NodeClaim[]) => void): void {
    this.nodeClaims = fn;
  }

  /** Answers to a worker's client-id claims (dropped when the worker is gone: its clients are). */
  answerNodeClaims(worker: number, replies: NodeClaimReply[]): void {
    const slot = this.slots[worker];
    if (slot?.worker) post(slot, { t: 'node-claim-replies', replies });
  }

  /**
   * Another node claims these client ids: the worker holding each takes its connection over
   * (0x8E) and gives the session up; answers, per client, the state of a session to resume there
   * (null: none, or it ends).
   */
  async releaseClients(clients: readonly { clientId: string; resume: boolean; worker?: number }[]): Promise<(SessionState | null)[]> {
    const out: (SessionState | null)[] = clients.map(() => null);
    const byWorker = new Map<number, number[]>();
    clients.forEach((c, i) => {
      // Not in the registry yet, but just let claim by `c.worker` (its answer is on the way):
      // asked after that answer, the worker finds the claim.
      const held = this.registry.lookup(c.clientId)?.[1];
      const w = held ?? (c.worker !== undefined && this.slots[c.worker]?.worker ? c.worker : undefined);
      if (w === undefined) return;
      let list = byWorker.get(w);
      if (!list) byWorker.set(w, (list = []));
      list.push(i);
    });
    await Promise.all([...byWorker].map(async ([w, idx]) => {
      const states = await this.call(w, 'cluster.release', { clients: idx.map((i) => ({ clientId: clients[i].clientId, resume: clients[i].resume })) }, RELEASE_TIMEOUT_MS);
      idx.forEach((i, k) => (out[i] = states[k] ?? null));
    }));
    return out;
  }

  /** Where the workers' questions to the auth and ACL policy chains go (the policy manager). */
  onPolicyQuestions(fn: (worker: number, questions: PolicyQuestion[]) => void): void {
    this.policyQuestions = fn;
  }

  /** Answers to a worker's policy questions (dropped when the worker is gone: its clients are). */
  sendPolicyReplies(worker: number, replies: PolicyReply[]): void {
    const slot = this.slots[worker];
    if (slot?.worker) post(slot, { t: 'policy-replies', replies });
  }

  /** The policy chains changed: every worker is told now, a worker that starts later at start. */
  setPolicyState(state: PolicyState): void {
    this.policyState = state;
    for (const slot of this.slots) if (slot.worker) post(slot, { t: 'policies', state });
  }

  /** The scripts and extensions changed: every worker is told now, a worker that starts later at start. */
  setProcessorState(state: ProcessorState): void {
    this.processorState = state;
    for (const slot of this.slots) if (slot.worker) post(slot, { t: 'processors', state });
  }

  /** Where the rule outputs the workers post go (the rule engine's action pipelines). */
  onRuleOutputs(fn: (items: unknown[]) => void): void {
    this.ruleOutputs = fn;
  }

  /**
   * Reserves `nodes` handles for the cluster's remote nodes and one for the messages that come
   * from them, and makes the routing core keep the local interest (every subscription but those
   * of these handles). Before start(): nothing may have subscribed yet.
   */
  reserveClusterHandles(nodes: number): { nodes: number[]; inbound: number } {
    const handles = Array.from({ length: nodes }, () => this.newHandle());
    const inbound = this.newHandle();
    if (!this.router.enableInterest([...handles, inbound])) throw new Error('the cluster must be set up before anything subscribes');
    this.clusterHandles = new Set(handles);
    return { nodes: handles, inbound };
  }

  /** Where the workers' matches for the cluster's node handles go (the cluster link). */
  onClusterOutputs(fn: (items: BridgeOutput[], from: ClusterTicket | null) => void): void {
    this.clusterOutputs = fn;
  }

  /** Answers a worker's ticket: the cluster accepted its QoS 1/2 messages for other nodes (their
   * publishers are acknowledged), or could not (they are not). */
  clusterAcked(t: ClusterTicket, ok: boolean): void {
    const slot = this.slots[t.worker];
    if (slot?.worker) post(slot, { t: 'cluster-acked', ticket: t.ticket, ok });
  }

  /** Where the workers' retained sets and clears go (the cluster; posted only once it is on). */
  onRetainedChanges(fn: (items: RetainedChange[]) => void): void {
    this.retainedChanges = fn;
  }

  /** Filters that gained ("+f") or lost ("-f") all their local subscriptions since the last call. */
  takeInterestChanges(): string[] {
    return this.router.takeInterestChanges();
  }

  interestSnapshot(): string[] {
    return this.router.interestSnapshot();
  }

  /** Adds or removes one filter of a handle in the routing core (a remote node's interest); a
   * `$share/<group>/<filter>` makes the handle a member of that group, its matches then told with
   * `subscriptionId` (the cluster's number for the group). */
  setHandleFilter(handle: number, filter: string, on: boolean, subscriptionId = 0): void {
    if (on) this.router.subscribe(filter, handle, RULE_WORKER, 0, subscriptionId === 0 ? null : subscriptionId);
    else this.router.unsubscribe(filter, handle);
    Atomics.add(new Int32Array(this.routeShared, 0, 1), 0, 1);
  }

  /** Removes every filter of a handle from the routing core (a node that went away). */
  clearHandle(handle: number): void {
    this.router.removeSession(handle);
    Atomics.add(new Int32Array(this.routeShared, 0, 1), 0, 1);
  }

  private splitOutputs(items: BridgeOutput[], worker: number, ticket: number): void {
    const bridges: BridgeOutput[] = [];
    const cluster: BridgeOutput[] = [];
    for (const item of items) (this.clusterHandles.has(item.handle) ? cluster : bridges).push(item);
    if (bridges.length > 0) this.bridgeOutputs(bridges);
    if (cluster.length > 0 || ticket !== 0) this.clusterOutputs(cluster, ticket === 0 ? null : { worker, ticket });
  }

  /** The items of a worker's post that are for the console's message viewers, given to them;
   * answers the others. */
  private takeViewerOutputs(items: BridgeOutput[], skipped: ViewerSkips | null): BridgeOutput[] {
    const rest: BridgeOutput[] = [];
    const viewers: BridgeOutput[] = [];
    for (const item of items) (this.viewerHandles.has(item.handle) ? viewers : rest).push(item);
    if (viewers.length > 0 || skipped !== null) this.viewerOutputs(viewers, skipped);
    return rest;
  }

  /** The console's message viewers: their handles now (the main thread's copy; the workers are
   * told by the 'bridges.viewers' operation) and where the workers' matches for them go. */
  setViewers(handles: ReadonlySet<number>, outputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void): void {
    this.viewerHandles = handles;
    this.viewerOutputs = outputs;
  }

  /** Where the messages the workers post for the MQTT bridges go (the bridge manager). */
  onBridgeOutputs(fn: (items: BridgeOutput[]) => void): void {
    this.bridgeOutputs = fn;
  }

  /** Subscribes the rule `handle` to `filters` in the routing core (every worker's publishes
   * then find it); replaces what it had. */
  subscribeRule(handle: number, filters: readonly string[]): void {
    this.router.removeSession(handle);
    try {
      for (const f of filters) this.router.subscribe(f, handle, RULE_WORKER, 0, null);
    } finally {
      Atomics.add(new Int32Array(this.routeShared, 0, 1), 0, 1);
    }
  }

  unsubscribeRule(handle: number): void {
    this.router.removeSession(handle);
    Atomics.add(new Int32Array(this.routeShared, 0, 1), 0, 1);
  }

  /** The worker that owns the session of `clientId` now, if any. */
  workerOf(clientId: string): number | undefined {
    return this.registry.lookup(clientId)?.[1];
  }

  /** The opened store (null with MEMORY, where the broker keeps nothing). */
  /** This node's slot in a store the cluster's nodes share (0: a store of its own). */
  get nodeSlot(): number {
    return this.slotOfNode;
  }

  get openedStore(): Store | null {
    return this.store;
  }

  /** Each worker thread: running (started and ready) or not, and how often it was restarted. */
  workerStates(): { id: number; running: boolean; restarts: number }[] {
    return this.slots.map((s) => ({ id: s.id, running: s.worker !== null && s.phase === 'open', restarts: s.restarts }));
  }

  /** The worker threads (for operators' tooling and crash tests). */
  get workers(): readonly (Worker | null)[] {
    return this.slots.map((s) => s.worker);
  }

  private async publishSys(): Promise<void> {
    const workers = await this.collectStats();
    const topics = sysTopics({
      version: VERSION,
      startedAt: this.startedAt,
      workers,
      subscriptions: this.router.subscriptionCount,
      retained: this.retained.size,
      clientsKnown: this.registry.size,
    });
    for (const [topic, text] of topics) this.publish(topic, Buffer.from(text), 0, true);
  }

  reloadTls(): void {
    for (const s of this.slots) if (s.worker) post(s, { t: 'reload-tls' });
  }

  /** Every worker reads auth.passwordFile and auth.aclFile again (a bad file: logged, old kept). */
  reloadAuth(): void {
    for (const s of this.slots) if (s.worker) post(s, { t: 'reload-auth' });
  }

  /** Graceful stop: workers stop accepting, send v5 clients DISCONNECT 0x8B, flush; then exit. */
  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.sysTimer) clearInterval(this.sysTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    const running = this.slots.filter((s) => s.worker);
    await Promise.all(running.map((s) => new Promise<void>((resolve) => {
      const w = s.worker!;
      const timer = setTimeout(resolve, this.config.shutdownTimeout);
      w.on('message', (m: FromWorker) => {
        if (m.t === 'stopped') {
          clearTimeout(timer);
          resolve();
        }
      });
      post(s, { t: 'shutdown' });
    })));
    await Promise.all(running.map((s) => s.worker?.terminate()));
    // A stopped worker's last lines may still be on their way through its stdout.
    await Promise.all(this.slots.map((s) => s.relayed && Promise.race([s.relayed, new Promise((resolve) => setTimeout(resolve, RELAY_DRAIN_MS).unref())])));
    if (this.store) await this.store.close().catch((err: unknown) => this.log.error('store close failed', { err }));
    this.closeLogStore();
  }
}

/** When a stored message was stored: its id starts with the milliseconds (store/persistence.ts). */
function storedAt(id: bigint, now: number): number {
  const ms = Number(id >> 22n);
  return ms > 946_684_800_000 && ms <= now ? ms : now;
}

function post(slot: Slot, msg: ToWorker): void {
  slot.worker?.postMessage(msg);
}

/** A free TCP port on `host` (for port 0 in tests), found by binding and letting go. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const fd = reuseportListener(host, 0, 1, false);
    const port = listenerPort(fd);
    closeFd(fd);
    if (port) resolve(port);
    else reject(new Error('no free port'));
  });
}

/** A store other nodes may use too (a database server), unlike LOCAL's files. */
function sharedStore(store: Store): boolean {
  return store.kind === 'POSTGRESQL' || store.kind === 'MYSQL';
}

/** A string's 32-bit hash (Java's), to pick the worker of an order key. */
function hashKey(key: string): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) >>> 0;
  return h;
}
