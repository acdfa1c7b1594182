// Supervisor: the main thread's handle on the broker's shared core. Opens the store, the log
// store and the endpoints (the SO_REUSEPORT listening sockets), starts the workers (worker-pool.ts)
// with the state every worker shares, publishes $SYS, and runs the graceful shutdown. Its parts
// have files of their own: the workers and their calls (worker-pool.ts, worker-channel.ts), the
// store (node-store.ts), the main-thread features' routing-core entries (taps.ts), and what the
// cluster asks of the workers (cluster-host.ts). Holds no session state.

import { Router, RetainedStore, ClientRegistry, NO_PUBLISHER } from '../native/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { BatchMessage, FromWorker } from '../worker/messages.ts';
import type { NodeClaim, NodeClaimReply } from '../worker/node-claims.ts';
import type { DelayedReply } from '../features/delayed/types.ts';
import type { DelayedPost } from '../features/delayed/worker-delayed.ts';
import type { SpanPost } from '../features/otel-traces/span-record.ts';
import type { ExclusiveNote, ExclusiveReply } from '../features/exclusive/types.ts';
import type { StoredSession } from '../store/types.ts';
import type { EndpointManager } from '../broker/endpoints.ts';
import { createCounters, EndpointCounters } from '../broker/endpoint-counters.ts';
import { sysTopics } from '../broker/sys-topics.ts';
import { createFailureTable } from '../auth/failure-limiter.ts';
import type { PolicyQuestion, PolicyReply, PolicyState } from '../policies/channel.ts';
import { ReplicatedState } from './worker-state.ts';
import { WorkerPool } from './worker-pool.ts';
import { WorkerOpError } from './worker-channel.ts';
import { NodeStore } from './node-store.ts';
import { Taps, type ClusterTicket } from './taps.ts';
import { adoptSessions, forwardedFilters, releaseClients } from './cluster-host.ts';
import { NodeLog } from './node-log.ts';
import { openEndpoints, type Ports } from './node-endpoints.ts';
import { VERSION } from '../install/root.ts';

export { WorkerOpError } from './worker-channel.ts';
export type { ClusterTicket } from './taps.ts';

export type { Ports } from './node-endpoints.ts';

const RETAINED_SWEEP_MS = 1000;

export class Supervisor {
  readonly ports: Ports = {};
  readonly startedAt = Date.now();
  readonly router: InstanceType<typeof Router>;
  readonly retained: InstanceType<typeof RetainedStore>;
  readonly registry: InstanceType<typeof ClientRegistry>;
  /** The endpoints (MQTT listeners), managed at run time by the admin API. */
  endpoints!: EndpointManager;
  readonly pool: WorkerPool;
  readonly taps: Taps;
  private readonly nodeStore: NodeStore;
  private stopping = false;
  private sysTimer: NodeJS.Timeout | null = null;
  /** Removes expired retained messages from the shared retained store once a second (they are
   * never delivered once expired; this frees their place under limits.maxRetainedMessages). */
  private retainedSweep: NodeJS.Timeout | null = null;
  /** The stored sessions open() read, until startWorkers() hands them to the workers. */
  private stored: StoredSession[] = [];
  private nextPublishWorker = 0;
  /** Per-endpoint counts every worker shares (connection and session limits). */
  private readonly countersBuffer = createCounters();
  /** Shared by the workers' routers: the subscription set's generation (workers drop their
   * remembered matches when it moves) and the routing clock. */
  private readonly routeShared = new SharedArrayBuffer(8);
  /** Failed MQTT authentications per source address (every worker's limiter maps it). */
  private readonly authFailures = createFailureTable();
  /** The log level and the log files (node-log.ts). */
  private readonly nodeLog: NodeLog;
  /** State every worker holds a copy of: sent at a worker's start, and to all on each change. */
  readonly state: ReplicatedState;
  /** Without a policy manager nothing asks: there are no policies. */
  private policyQuestions: (worker: number, questions: PolicyQuestion[]) => void = () => {};
  /** Where the workers' client-id claims for the cluster's other nodes go (src/cluster/claims.ts). */
  private nodeClaims: (worker: number, claims: NodeClaim[]) => void = (worker, claims) => this.answerNodeClaims(worker, claims.map((c) => ({ id: c.id, state: null })));

  /** Where the workers' delayed messages go (src/features/delayed); refused until it starts. */
  /** Nothing exports spans until the OpenTelemetry traces feature takes them. */
  private otelSpans: (post: SpanPost) => void = () => {};
  private delayedAccepts: (worker: number, post: DelayedPost) => void = (worker, p) => this.replyDelayed(worker, p.items.map((i) => ({ id: i.id, rc: 0x83 })));

  /** Where the workers' exclusive-subscription notes go (src/features/exclusive); claims are
   * refused until it starts. */
  private exclusiveNotes: (worker: number, notes: ExclusiveNote[]) => void = (worker, notes) => this.replyExclusive(worker, notes.flatMap((n) => (n.op === 'claim' ? [{ id: n.id, result: 'cluster' as const }] : [])));

  constructor(private readonly config: BrokerConfig, private readonly log: Logger, private readonly routerName = 'default') {
    this.router = Router.open(routerName);
    this.retained = RetainedStore.open(routerName);
    this.registry = ClientRegistry.open(routerName);
    this.nodeLog = new NodeLog(config, log, (level) => this.pool.callAll('log.setLevel', { level }));
    this.taps = new Taps(this.router, new Int32Array(this.routeShared, 0, 1), () => this.registry.newHandle());
    this.nodeStore = new NodeStore(config, log, this.retained, this.registry);
    this.pool = new WorkerPool({
      log,
      workerLines: () => this.nodeLog.workerLines(),
      workerData: (workerId, restore) => ({
        workerId, config: { ...config, log: { ...config.log, level: this.nodeLog.level } }, counters: this.countersBuffer, routeShared: this.routeShared, routerName,
        nodeSlot: this.nodeStore.nodeSlot, restore, authFailures: this.authFailures,
      }),
      youngGenerationMb: config.workerYoungGeneration,
      endpoints: () => this.endpoints.specsForWorker(),
      orphanedSessions: (w) => this.nodeStore.orphanedSessions(w),
      onMessage: (w, msg) => this.fromWorker(w, msg),
      shutdownTimeoutMs: config.shutdownTimeout,
    });
    this.state = new ReplicatedState(this.pool);
    this.taps.attach(this.pool);
  }

  private fromWorker(worker: number, msg: FromWorker): void {
    if (msg.t === 'rule-outputs') this.taps.rulePosted(msg.items);
    else if (msg.t === 'bridge-outputs') this.taps.matchesPosted(msg.items, worker, msg.ticket, msg.skipped);
    else if (msg.t === 'retained-changes') this.taps.retainedPosted(msg.items);
    else if (msg.t === 'policy-questions') this.policyQuestions(worker, msg.questions);
    else if (msg.t === 'node-claims') this.nodeClaims(worker, msg.claims);
    else if (msg.t === 'delayed-accepts') this.delayedAccepts(worker, msg);
    else if (msg.t === 'otel-spans') this.otelSpans(msg);
    else if (msg.t === 'exclusive-notes') this.exclusiveNotes(worker, msg.notes);
  }

  /** Takes the spans the workers post (src/features/otel-traces). */
  onOtelSpans(fn: (post: SpanPost) => void): void {
    this.otelSpans = fn;
  }

  /** Takes the exclusive-subscription notes the workers post (src/features/exclusive). */
  onExclusiveNotes(fn: (worker: number, notes: ExclusiveNote[]) => void): void {
    this.exclusiveNotes = fn;
  }

  /** Answers a worker's exclusive-subscription claims. */
  replyExclusive(worker: number, replies: ExclusiveReply[]): void {
    if (replies.length > 0) this.pool.post(worker, { t: 'exclusive-replies', replies });
  }

  /** Takes the delayed messages the workers post (src/features/delayed). */
  onDelayedAccepts(fn: (worker: number, post: DelayedPost) => void): void {
    this.delayedAccepts = fn;
  }

  /** Answers a worker's delayed messages: 0 stored, else a reason code. */
  replyDelayed(worker: number, replies: DelayedReply[]): void {
    if (replies.length > 0) this.pool.post(worker, { t: 'delayed-replies', replies });
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
    this.nodeLog.open();
    try {
      this.stored = await this.nodeStore.open();
      this.endpoints = await openEndpoints(this.config, this.ports, {
        store: this.nodeStore.store, log: this.log, counters: new EndpointCounters(this.countersBuffer),
        workers: () => this.pool.open(), call: (w, op, ...tail) => this.pool.call(w, op, ...tail),
      });
    } catch (err) {
      await this.nodeStore.close();
      this.nodeLog.close();
      throw err;
    }
    return this.ports;
  }

  /** Starts the worker threads (each takes a share of the stored sessions, gets every feature's
   * state, then opens its listeners); resolves once all accept clients. */
  async startWorkers(): Promise<Ports> {
    const stored = this.stored;
    this.stored = [];
    await this.pool.start(this.config.workers, stored);
    this.sysTimer = this.config.sys.enabled ? setInterval(() => void this.publishSys(), this.config.sys.interval * 1000) : null;
    this.retainedSweep = setInterval(() => this.retained.removeExpired(Date.now()), RETAINED_SWEEP_MS);
    return this.ports;
  }

  /** The log store (null when log.file.enabled is off), the log level, and its change. */
  get logs() {
    return this.nodeLog.store;
  }
  get logLevel() {
    return this.nodeLog.level;
  }
  readonly setLogLevel: NodeLog['setLevel'] = (level) => this.nodeLog.setLevel(level);
  /** Adds a sink for every log line of the node (node-log.ts). */
  readonly addLogLineSink: NodeLog['addLineSink'] = (sink) => this.nodeLog.addLineSink(sink);

  /** Publishes a message through a running worker (it routes to every worker). */
  publish(topic: string, payload: Buffer, qos: 0 | 1 | 2 = 0, retain = false): boolean {
    const [worker] = this.pool.running();
    if (worker === undefined) return false;
    this.pool.post(worker, { t: 'publish', message: { topic, payload, qos, retain, expiresAt: 0 } });
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
  async publishBatchCounted(messages: BatchMessage[], publisher = NO_PUBLISHER, publisherHash = 0, orderKey?: string): Promise<{ matched: number[]; sharesMissed: number; absent: { index: number; only: string[] }[] }> {
    const running = this.pool.running();
    if (running.length === 0) throw new WorkerOpError({ code: 'UNAVAILABLE', message: 'no worker is running', status: 503 });
    // With an order key, the same worker routes every batch of it (its messages keep their order).
    const worker = orderKey === undefined ? running[this.nextPublishWorker++ % running.length] : running[hashKey(orderKey) % running.length];
    return this.pool.call(worker, 'clients.publishBatch', { messages, publisher, publisherHash });
  }

  // The workers: calls, life cycle, counters (worker-pool.ts).
  readonly call: WorkerPool['call'] = (w, op, ...tail) => this.pool.call(w, op, ...tail);
  readonly callAll: WorkerPool['callAll'] = (op, ...tail) => this.pool.callAll(op, ...tail);
  readonly runningWorkers = () => this.pool.running();
  readonly onWorkerStart: WorkerPool['onWorkerStart'] = (fn) => this.pool.onWorkerStart(fn);
  readonly onWorkerExit: WorkerPool['onWorkerExit'] = (fn) => this.pool.onWorkerExit(fn);
  readonly collectStats: WorkerPool['collectStats'] = (timeoutMs) => this.pool.collectStats(timeoutMs);
  readonly workerStates = () => this.pool.states();
  get workers() {
    return this.pool.workers;
  }

  // Taps: the main-thread features' routing-core entries and the matches posted for them (taps.ts).
  readonly setTap: Taps['set'] = (handle, filters) => this.taps.set(handle, filters);
  readonly setTapFilter: Taps['setFilter'] = (handle, filter, on, subscriptionId) => this.taps.setFilter(handle, filter, on, subscriptionId);
  readonly removeTap: Taps['remove'] = (handle) => this.taps.remove(handle);
  readonly onRuleOutputs: Taps['onRuleOutputs'] = (fn) => this.taps.onRuleOutputs(fn);
  readonly onBridgeOutputs: Taps['onBridgeOutputs'] = (fn) => this.taps.onBridgeOutputs(fn);
  readonly setViewers: Taps['setViewers'] = (handles, fn) => this.taps.setViewers(handles, fn);
  /** A handle no session or routing-core entry has had (the client registry's counter). */
  readonly newHandle = () => this.registry.newHandle();
  /** The worker that owns the session of `clientId` now, if any. */
  readonly workerOf = (clientId: string) => this.registry.lookup(clientId)?.[1];

  // The cluster (src/cluster): its taps, claims, and the sessions of nodes that went down.
  readonly reserveClusterHandles: Taps['reserveCluster'] = (nodes) => this.taps.reserveCluster(nodes);
  readonly onClusterOutputs: Taps['onClusterOutputs'] = (fn) => this.taps.onClusterOutputs(fn);
  readonly onRetainedChanges: Taps['onRetainedChanges'] = (fn) => this.taps.onRetainedChanges(fn);
  /** Filters that gained ("+f") or lost ("-f") all their local subscriptions since the last call. */
  readonly takeInterestChanges = () => this.router.takeInterestChanges();
  readonly interestSnapshot = () => this.router.interestSnapshot();
  readonly releaseClients = (clients: Parameters<typeof releaseClients>[2], forward?: number) => releaseClients(this.pool, this.registry, clients, forward);
  readonly forwardedFilters = forwardedFilters;
  readonly adoptSessions = (node: string) => adoptSessions(this.pool, this.nodeStore, node);
  readonly takeStoredSessions: NodeStore['takeStoredSessions'] = (claims, from) => this.nodeStore.takeStoredSessions(claims, from);
  onNodeClaims(fn: (worker: number, claims: NodeClaim[]) => void): void {
    this.nodeClaims = fn;
  }
  /** Answers to a worker's client-id claims (dropped when the worker is gone: its clients are). */
  answerNodeClaims(worker: number, replies: NodeClaimReply[]): void {
    this.pool.post(worker, { t: 'node-claim-replies', replies });
  }
  /** The cluster accepted a worker's QoS 1/2 messages for other nodes (their publishers are
   * acknowledged), or could not (they are not). */
  clusterAcked(t: ClusterTicket, ok: boolean): void {
    this.pool.post(t.worker, { t: 'cluster-acked', ticket: t.ticket, ok });
  }

  // Policies and scripts: state every worker holds, and the questions workers ask the policies.
  onPolicyQuestions(fn: (worker: number, questions: PolicyQuestion[]) => void): void {
    this.policyQuestions = fn;
  }
  sendPolicyReplies(worker: number, replies: PolicyReply[]): void {
    this.pool.post(worker, { t: 'policy-replies', replies });
  }
  /** The policy chains changed: every worker is told now, a worker that starts later at start. */
  setPolicyState(state: PolicyState): void {
    this.state.set('policies', state);
  }

  /** This node's slot in a store the cluster's nodes share (0: a store of its own). */
  get nodeSlot(): number {
    return this.nodeStore.nodeSlot;
  }

  /** The opened store (null with MEMORY, where the broker keeps nothing). */
  get openedStore() {
    return this.nodeStore.store;
  }

  private async publishSys(): Promise<void> {
    const workers = await this.pool.collectStats();
    const topics = sysTopics({ version: VERSION, startedAt: this.startedAt, workers, subscriptions: this.router.subscriptionCount, retained: this.retained.size, clientsKnown: this.registry.size });
    for (const [topic, text] of topics) this.publish(topic, Buffer.from(text), 0, true);
  }

  reloadTls(): void {
    this.pool.postAll({ t: 'reload-tls' });
    for (const fn of this.tlsReloadListeners) fn();
  }

  private readonly tlsReloadListeners: (() => void)[] = [];
  /** Calls `fn` on every TLS reload (SIGHUP), after the workers were told. */
  onTlsReload(fn: () => void): void {
    this.tlsReloadListeners.push(fn);
  }

  /** config limits.maxRetainedMessages (0: no limit). */
  get retainedLimit(): number {
    return this.config.limits.maxRetainedMessages;
  }

  /** Every worker reads auth.passwordFile and auth.aclFile again (a bad file: logged, old kept). */
  reloadAuth(): void {
    this.pool.postAll({ t: 'reload-auth' });
  }

  /** Graceful stop: workers stop accepting, send v5 clients DISCONNECT 0x8B, flush; then exit. */
  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.sysTimer) clearInterval(this.sysTimer);
    if (this.retainedSweep) clearInterval(this.retainedSweep);
    await this.pool.stop();
    await this.nodeStore.close();
    this.nodeLog.close();
  }
}

/** A string's 32-bit hash (Java's), to pick the worker of an order key. */
function hashKey(key: string): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) >>> 0;
  return h;
}
