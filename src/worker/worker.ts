// Worker thread: owns its listeners, the connections they accept and the sessions of those
// connections. Routes through the process-wide native core; talks to the other workers over
// MessagePorts (delivery batches and session hand-over) and to the supervisor over parentPort.
import { WorkerOverload } from '../features/overload/worker-overload.ts';
import { configMarks } from '../features/overload/marks.ts';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';

import { ClientRegistry, DESC_SLOTS, NO_PUBLISHER } from '../native/index.ts';
import { DomainError, toPlain } from '../errors/domain-error.ts';
import type { BrokerConfig } from '../config/index.ts';
import { createLogger } from '../log/index.ts';
import {
  StaticAuthenticator, StaticAuthorizer, ReloadableFile, parseAclFile, parsePasswdFile, ScramMethod, SCRAM_MECHANISM_NAMES,
  type AclFile, type Authorizer, type AuthMethod, type ClientIdentity, type PasswdFile,
} from '../auth/index.ts';
import { Persistence } from '../engine/session/persistence.ts';
import { loadStoredParts, storedSession } from '../engine/session/restore.ts';
import { WorkerNodeClaims } from './node-claims.ts';
import { Connection, type ConnectionHost } from '../engine/connection/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { Deadlines } from '../engine/connection/deadlines.ts';
import { Listeners, type OpenEndpoint, type WorkerEndpoint } from '../listener/listeners.ts';
import { EndpointCounters } from '../broker/endpoint-counters.ts';
import type { Transport } from '../engine/connection/transport.ts';
import { WorkerStats, sysFilters } from '../stats/worker-stats.ts';
import { registerEndpointStats, type EndpointStats } from '../stats/endpoint-stats.ts';
import type { ToWorker, FromWorker, PeerMessage } from './messages.ts';
import { createStore } from '../store/index.ts';
import type { StoredSession } from '../store/types.ts';
import type { Message } from '../broker/message.ts';
import { OPS } from './ops/index.ts';
import { OpError, type Op, type OpsEnv } from './ops/types.ts';
import { createEngine } from './engine.ts';
import { WorkerRules } from '../rules/worker-rules.ts';
import { WorkerLogTopics } from '../features/tracing/worker-log-topics.ts';
import { WorkerTraces } from '../features/tracing/worker-traces.ts';
import { WorkerBans } from '../features/bans/worker-bans.ts';
import { WorkerRewrite } from '../features/rewrite/worker-rewrite.ts';
import { WorkerTopicMetrics } from '../features/topic-metrics/worker-topic-metrics.ts';
import { WorkerSlowSubs } from '../features/slow-subs/worker-slow-subs.ts';
import { WorkerExclusive } from '../features/exclusive/worker-exclusive.ts';
import { SchemaRuntime } from '../features/schema-registry/runtime.ts';
import { CheckStage } from '../features/schema-registry/worker/check-stage.ts';
import { RuleStage, type PublisherReading } from '../features/schema-registry/worker/rule-stage.ts';
import { holdForRules, releaseForRules } from '../engine/handlers/reading.ts';
import { SchemaPool } from '../features/schema-registry/worker/schema-pool.ts';
import { WorkerDelayed } from '../features/delayed/worker-delayed.ts';
import { WorkerOtelTraces } from '../features/otel-traces/worker-otel-traces.ts';
import { ClientCertificateCheck } from '../features/revocation/client-check.ts';
import type { CertificateCheck } from '../engine/handlers/client.ts';
import type { EndpointConfig } from '../broker/endpoint-config.ts';
import { WorkerBridges } from '../bridges/worker-bridges.ts';
import { AuthFailureLimiter } from '../auth/failure-limiter.ts';
import { WorkerPolicies } from '../policies/worker/worker-policies.ts';
import { PolicyAuthenticator } from '../policies/worker/policy-authenticator.ts';
import { PolicyAuthorizer, SUPERUSER } from '../policies/worker/policy-authorizer.ts';
import { AnswerCache } from '../policies/worker/answer-cache.ts';
import { ProcessorStage } from '../features/scripts/worker/stage.ts';
import { EV } from '../engine/session/events.ts';
import { WorkerClientDb } from '../features/client-db/worker-db.ts';
import { ClientDbAuthenticator } from '../features/client-db/authenticator.ts';
import { ClientDbScramLookup } from '../features/client-db/scram-lookup.ts';
import { PolicyScramLookup } from '../policies/worker/policy-scram-lookup.ts';

interface WorkerData {
  workerId: number;
  config: BrokerConfig;
  /** Per-endpoint connection and session counts shared by every worker. */
  counters: SharedArrayBuffer;
  /** Shared by every worker: the subscription set's generation (match results are cached per
   * thread) and the routing clock. */
  routeShared: SharedArrayBuffer;
  routerName: string;
  /** This node's slot in a store the cluster's nodes share (message ids; 0: a store of its own). */
  nodeSlot: number;
  /** Stored sessions this worker takes on before it accepts connections. */
  restore: StoredSession[];
  /** Failed authentications per source address, shared by every worker. */
  authFailures: SharedArrayBuffer;
}

/** A warm worker (node/worker-prewarm.ts) loaded its modules before the node had its data: the
 * data is its first message. A cold one has it at spawn. */
function initMessage(): Promise<WorkerData> {
  return new Promise((resolve) => parentPort!.once('message', (msg: Extract<ToWorker, { t: 'init' }>) => resolve(msg.data as unknown as WorkerData)));
}

const data = (workerData as { deferred?: boolean }).deferred ? await initMessage() : (workerData as WorkerData);
const config = data.config;
const workerId = data.workerId;
const log = createLogger({ level: config.log.level, name: `worker-${workerId}` });
// A promise nobody awaits (a bug, ours or a driver's) must not end this worker's connections.
process.on('unhandledRejection', (err) => log.error('unhandled promise rejection (a bug): logged, the worker goes on', { err }));
const stats = new WorkerStats();
const peers = new Map<number, MessagePort>();
const connections = new Set<Connection>();
const authMethods = new Map<string, AuthMethod>();
const endpointCounters = new EndpointCounters(data.counters);
const limits = config.limits;

/** The Mosquitto files of auth.passwordFile and auth.aclFile, read now and again on 'reload-auth'. */
let passwordFile: ReloadableFile<PasswdFile> | undefined;
let aclFile: ReloadableFile<AclFile> | undefined;
try {
  if (config.auth.passwordFile !== '') passwordFile = new ReloadableFile(config.auth.passwordFile, parsePasswdFile);
  if (config.auth.aclFile !== '') aclFile = new ReloadableFile(config.auth.aclFile, parseAclFile);
} catch (err) {
  const e = err as Error & { code?: string };
  post({ t: 'failed', error: { code: e.code ?? 'AUTH_FILE_INVALID', message: e.message } });
  throw err;
}

const staticAuthorizer = new StaticAuthorizer({ ...config.auth, mosquittoAcl: aclFile });
// The auth and ACL policy chains live in the main thread (with the data sources); this worker
// asks them, caches their answers, and falls back to the static users and ACL.
const policies = new WorkerPolicies({
  post: (questions) => post({ t: 'policy-questions', questions }),
  timeoutMs: config.auth.policyTimeout,
  maxPending: config.auth.policyMaxPending,
  counters: stats.policies,
});
// The built-in client database (src/features/client-db) comes first: it decides for the usernames
// it holds, on this thread; the others go to the policies, then the static users.
const clientDb = new WorkerClientDb();
const authenticator = new ClientDbAuthenticator(clientDb, new PolicyAuthenticator(
  policies,
  new AnswerCache(config.auth.policyCacheSize, config.auth.policyCacheTtl * 1000),
  new StaticAuthenticator({ ...config.auth, mosquittoUsers: passwordFile }),
  workerId,
), config.auth.clientDbCache);
// Enhanced authentication (MQTT 5 AUTH): SCRAM-SHA-256 and SCRAM-SHA-512 with the credentials of
// the built-in client database, then of the database policies (src/auth/scram).
const scramLookup = new ClientDbScramLookup(clientDb, new PolicyScramLookup(policies));
const scramMockSalts = { key: () => clientDb.scramMockKey, iterations: config.auth.scram.iterations };
for (const mechanism of SCRAM_MECHANISM_NAMES) authMethods.set(mechanism, new ScramMethod(mechanism, scramLookup, stats.scram[mechanism], scramMockSalts));
function authorizerFor(who: ClientIdentity, peerhost: () => string = () => ''): Authorizer {
  if (who.superuser === true) return SUPERUSER;
  return new PolicyAuthorizer(policies, staticAuthorizer, who, peerhost, config.auth.cacheSize, clientDb);
}
const registry = ClientRegistry.open(data.routerName);
// MEMORY keeps nothing: the broker then skips the store entirely.
const store = config.store.storeType === 'MEMORY' ? null : await createStore(config);
if (store) await store.open();
const persistence = store ? new Persistence(store, registry, workerId, log, config.nodeName, data.nodeSlot) : null;

// The rule engine of this thread; its host's functions run once the engine below exists.
const rules: WorkerRules = new WorkerRules({
  node: config.nodeName,
  publish: (m, ruleId) => {
    // A republish of a traced message goes on in its trace: its own publish span, parented on the
    // rule's span (m.props carries it), with the route and delivery spans under it.
    const t = m.props !== null ? otelTraces.originated(`rule:${ruleId}`, m) : undefined;
    if (t === undefined) {
      router.publish(m, NO_PUBLISHER, 0);
      return;
    }
    const matched = router.publish(m, NO_PUBLISHER, 0);
    otelTraces.routed(t, matched);
    otelTraces.finished(t, `rule:${ruleId}`, m.topic, m.qos, matched);
  },
  publisherOf(handle) {
    const s = sessions.byHandle.get(handle);
    if (!s) return undefined;
    const conn = s.connection as Connection | null;
    return { clientId: s.clientId, username: s.username, peerhost: conn?.remoteAddress };
  },
  postOutputs: (items) => post({ t: 'rule-outputs', items }),
});

// Log topics are routing-core entries like rules; a handle is one or the other.
const logTopics: WorkerLogTopics = new WorkerLogTopics(log, (handle) => sessions.byHandle.get(handle)?.clientId);
// So are the MQTT bridges' local filters; their matches go to the main thread, once per tick.
const bridges = new WorkerBridges({ postOutputs: (items, transfer, ticket, skipped) => parentPort!.postMessage({ t: 'bridge-outputs', items, ticket, skipped } satisfies FromWorker, transfer) });

// Scripts and extensions: run by this worker's pool threads, never on this thread.
const processors = new ProcessorStage({
  log,
  threads: config.scripts.threads,
  timeoutMs: config.scripts.timeout,
  memoryMb: config.scripts.memoryLimit,
  onError: config.scripts.onError,
  maxTopicLevels: limits.maxTopicLevels,
});

// Client ids across the cluster's nodes (turned on by the cluster's 'cluster.set').
const nodeClaims = new WorkerNodeClaims((claims) => post({ t: 'node-claims', claims }));
// Delayed publish (src/features/delayed): $delayed/ PUBLISHes go to the main thread to be stored.
const delayed = new WorkerDelayed((p) => post({ t: 'delayed-accepts', ...p }), (who) => authorizerFor(who));

// The ban list and flapping detection (src/features/bans), asked per CONNECT while active.
const bans = new WorkerBans(log, rules);
// Topic rewrite (src/features/rewrite): the handlers read its rules before the ACL.
const rewrite = new WorkerRewrite();
// Topic metrics (src/features/topic-metrics): per-filter counts on the data path while any filter
// is configured. Slow subscribers (src/features/slow-subs): acknowledgement latencies while enabled.
const topicMetrics = new WorkerTopicMetrics();
const slowSubs = new WorkerSlowSubs();
// Exclusive subscriptions (src/features/exclusive): the node's table, shared by every worker.
const exclusive = new WorkerExclusive((notes) => post({ t: 'exclusive-notes', notes }));
// The schema registry (src/features/schema-registry): the rule SQL's codecs, and the topic checks
// asked per PUBLISH while `active`.
// Large payloads (schemaRegistry.offloadBytes) are decoded by this worker's schema pool threads:
// the checks, and the rules that call schema_decode or spb_decode.
const schemaCfg = config.schemaRegistry;
const schemaPool = new SchemaPool({ log, threads: schemaCfg.threads, timeoutMs: schemaCfg.timeout, maxWaitingBytes: schemaCfg.maxWaitingBytes, maxWaitingMessages: schemaCfg.maxWaitingMessages });
const checkStage = new CheckStage(schemaPool, { log, onFailure: schemaCfg.onPoolFailure });
const schemas = new SchemaRuntime(log).install().offloadTo(checkStage, schemaCfg.offloadBytes);
// Past the pool's bound, the clients publishing what those rules decode are paused until it
// catches up (engine/handlers/reading.ts), rather than the rules evaluated on this thread. Not a
// WebSocket client: uWebSockets.js cannot stop reading, so a paused one holds what it sends and
// is closed past its held bytes (fit for a rate limit, not for the broker's own backlog).
const rulePublishers: PublisherReading<Connection> = {
  pause(handle) {
    const conn = sessions.byHandle.get(handle)?.connection as Connection | null | undefined;
    return conn && conn.transport.kind !== 'ws' && holdForRules(conn) ? conn : null;
  },
  resume: (conn) => releaseForRules(conn, limits.receiveMaximum),
};
rules.offloadTo(new RuleStage(schemaPool, schemas, { log, minBytes: schemaCfg.offloadBytes, node: config.nodeName, publishers: rulePublishers as PublisherReading }));
// Overload protection (src/features/overload): the CONNECT handler and the outbox read its flags.
const overload = new WorkerOverload(workerId, configMarks(config), (on, st) => {
  if (on) log.warn('worker overloaded: new connections are refused (0x89 Server busy)', { reasons: st.reasons, lagMs: st.lagMs, heapUsedBytes: st.heapUsedBytes, rssBytes: st.rssBytes });
  else log.info('worker no longer overloaded: accepting connections again', { lagMs: st.lagMs });
});

// OpenTelemetry traces (src/features/otel-traces): sampled messages' spans go to the main thread,
// which exports them, once per tick.
const otelTraces = new WorkerOtelTraces(config.otel.traces, (p) => parentPort!.postMessage({ t: 'otel-spans', ...p } satisfies FromWorker, [p.spans.buffer as ArrayBuffer]));

const { router, sessions, outbox, proxies, dispatcher, sessionLimits } = createEngine({
  tracer: otelTraces,
  gate: bans,
  rewrite,
  exclusive,
  payloadCheck: schemas,
  overload: overload.flag,
  shedding: overload.shedding,
  topics: topicMetrics,
  acks: slowSubs,
  nodes: nodeClaims,
  delayed,
  // A QoS 1/2 message another node wants is acknowledged once the cluster has it.
  ackGates: bridges,
  transforms: processors,
  authFailures: limits.authMaxFailures > 0 ? new AuthFailureLimiter(data.authFailures, { maxFailures: limits.authMaxFailures, windowSeconds: limits.authFailureWindow, lockoutSeconds: limits.authLockout }) : null,
  events: rules,
  tapMatched(handle, m, publisher, share, publisherHash) {
    // Bridges (and the cluster's node handles) run on one node of a cluster: they take messages
    // from every node.
    if (bridges.has(handle)) bridges.matched(handle, m, publisher, share, publisherHash);
    // A message from another node of the cluster: its own node ran its rules and log topics (the
    // same everywhere: the configuration is replicated), so they fire once.
    else if (bridges.fromOtherNode(publisher)) return;
    else if (logTopics.has(handle)) logTopics.matched(handle, m, publisher);
    else if (m.trace !== undefined) tracedRule(handle, m, publisher);
    else rules.matched(handle, m, publisher);
  },
  workerId,
  config,
  log,
  stats,
  routerName: data.routerName,
  registry,
  routeShared: data.routeShared,
  persistence,
  endpointCounters,
  authenticator,
  authMethods,
  authorizerFor,
  postRetained: (items, transfer) => parentPort!.postMessage({ t: 'retained-changes', items } satisfies FromWorker, transfer),
  sendBatch(worker, buffer, length) {
    const port = peers.get(worker);
    if (!port) return false;
    port.postMessage({ t: 'batch', buffer, length } satisfies PeerMessage, [buffer]);
    return true;
  },
  sendControl(worker, msg) {
    const port = peers.get(worker);
    if (port) port.postMessage(msg satisfies PeerMessage);
    else log.warn('no port to worker', { worker });
  },
  peers: () => [...peers.keys()],
  loadStored: async (clientId, handle) => {
    if (!store) return null;
    const stored = (await store.loadSessions()).find((s) => s.clientId === clientId);
    return stored ? storedSession(handle, await loadStoredParts(store, stored), sessionLimits) : null;
  },
});
const traces = new WorkerTraces(log);

/** A rule matched a traced message: it runs under a span of its own. */
function tracedRule(handle: number, m: Message, publisher: number): void {
  const id = rules.idOf(handle);
  if (id === undefined) rules.matched(handle, m, publisher);
  else otelTraces.rule(m.trace!, id, rules, () => rules.matched(handle, m, publisher));
}
const connectionHost: ConnectionHost = {
  deadlines: new Deadlines(),
  tracer: traces,
  limits,
  stats,
  log,
  descTable: new Uint32Array(DESC_SLOTS * 1024),
  endpointCounters,
  closed(conn, wasConnected) {
    connections.delete(conn);
    const endpoint = conn.endpoint as WorkerEndpoint;
    endpoint.connections.delete(conn);
    endpoint.stats.connectionsCurrent--;
    stats.connectionsCurrent--;
    if (wasConnected && rules.wants[EV.CLOSE]) {
      rules.emit('CLOSE', { clientid: conn.clientId, username: conn.username ?? null, peerhost: conn.remoteAddress, reason: conn.closeReason ?? 'normal', timestamp: Date.now() });
    }
    if (conn.session) sessions.connectionClosed(conn.session, conn);
  },
  drained(conn) {
    if (conn.session) outbox.drain(conn.session);
  },
};

function accept(t: Transport, endpoint: WorkerEndpoint): void {
  if (shuttingDown) {
    t.destroy();
    return;
  }
  const conn = new Connection(t, endpoint, connectionHost, dispatcher);
  connections.add(conn);
  endpoint.connections.add(conn);
  stats.connectionsCurrent++;
  stats.connectionsTotal++;
  endpoint.stats.connectionsCurrent++;
  endpoint.stats.connectionsTotal++;
  registerEndpointStats(endpoint.slot, endpoint.stats);
  conn.start();
}

/** An endpoint's OCSP check of client certificates (src/features/revocation). */
function clientCertificateCheck(c: EndpointConfig, stats: EndpointStats): CertificateCheck {
  const ssl = c.sslConfig!;
  return new ClientCertificateCheck(c.id, ssl.ocspClientCheck!, ssl.ca!, stats.revocation, log);
}
// TLS-PSK endpoints with fromClientDb ask the client database for a key during the handshake.
const listeners = new Listeners(config.mqtt.io, config.mqtt.host, limits.maxOutboundBytes, endpointCounters, accept, (identity) => clientDb.pskKey(identity), clientCertificateCheck);
// Runs when the thread exits, also after an uncaught exception (the supervisor restarts us).
process.on('exit', () => listeners.releaseWs());

function onPeerMessage(from: number, msg: PeerMessage): void {
  if (msg.t === 'batch') router.receiveBatch(msg.buffer, msg.length, from);
  else sessions.onControl(msg, from);
}

let shuttingDown = false;

/** Stop accepting, tell v5 clients the server is going away (0x8B), flush, and report. */
async function shutdown(): Promise<void> {
  shuttingDown = true;
  overload.close();
  listeners.stopAccepting();
  policies.close();
  await processors.close();
  for (const conn of [...connections]) conn.disconnectWith(RC.SERVER_SHUTTING_DOWN, 'shutdown');
  // Give the final writes a moment to leave.
  await new Promise((r) => setTimeout(r, 50));
  await schemaPool.close();
  if (store) await store.close().catch((err: unknown) => log.error('store close failed', { err }));
  post({ t: 'stopped' });
}

function post(msg: FromWorker): void {
  parentPort!.postMessage(msg);
}

parentPort!.on('message', (msg: ToWorker) => {
  switch (msg.t) {
    case 'peer':
      peers.set(msg.worker, msg.port);
      msg.port.on('message', (m: PeerMessage) => onPeerMessage(msg.worker, m));
      break;
    case 'cluster-acked':
      bridges.acked(msg.ticket, msg.ok);
      break;
    case 'peer-gone':
      peers.get(msg.worker)?.close();
      peers.delete(msg.worker);
      sessions.onPeerGone(msg.worker);
      break;
    case 'publish': {
      // The supervisor ($SYS) or the admin API publishing through this worker.
      router.publish({ ...msg.message, topicBytes: Buffer.from(msg.message.topic), payload: Buffer.from(msg.message.payload), props: null, receivedAt: Date.now() }, NO_PUBLISHER, 0);
      break;
    }
    case 'stats':
      stats.sessions = sessions.size;
      stats.persistentSessions = 0;
      stats.subscriptions = 0;
      stats.sysSubscriptions = 0;
      for (const s of sessions.all()) {
        if (s.expiryInterval > 0) stats.persistentSessions++;
        stats.subscriptions += s.subscriptionCount;
        if (s.subscriptionCount > 0) stats.sysSubscriptions += sysFilters(s.subscriptions.keys());
      }
      post({ t: 'stats', stats: stats.snapshot() });
      break;
    case 'reload-tls': {
      const failed = listeners.reloadTls();
      for (const f of failed) log.error('TLS certificate or PSK file reload failed; the endpoint keeps the old ones', { endpoint: f.id, err: f.error });
      if (failed.length === 0) log.info('TLS certificates reloaded');
      break;
    }
    case 'reload-auth':
      void reloadAuthFiles();
      break;
    case 'rpc':
      void runOp(msg.id, msg.op, msg.args);
      break;
    case 'state':
      // Before 'open': the supervisor sends every piece of state first.
      if (msg.key === 'policies') policies.setState(msg.value);
      else if (msg.key === 'draining') listeners.setDraining(msg.value);
      else if (msg.key === 'bans') bans.setState(msg.value);
      else if (msg.key === 'overload') overload.setMarks(msg.value);
      else if (msg.key === 'ocspStaples') listeners.setStaples(msg.value);
      else if (msg.key === 'rewrite') rewrite.setState(msg.value);
      else if (msg.key === 'exclusive') exclusive.setState(msg.value);
      else if (msg.key === 'schemaRegistry') schemas.setState(msg.value);
      else if (msg.key === 'delayed') delayed.setState(msg.value);
      else if (msg.key === 'topicMetrics') topicMetrics.setState(msg.value);
      else if (msg.key === 'slowSubs') slowSubs.setState(msg.value);
      else processors.setState(msg.value);
      break;
    case 'policy-replies':
      policies.answer(msg.replies);
      break;
    case 'node-claim-replies':
      nodeClaims.answer(msg.replies);
      break;
    case 'delayed-replies':
      delayed.answer(msg.replies);
      break;
    case 'exclusive-replies':
      exclusive.answer(msg.replies);
      break;
    case 'open':
      openEndpoints(msg.endpoints).then(
        () => post({ t: 'ready' }),
        (err: Error) => {
          log.error('listeners failed to start', { err });
          post({ t: 'failed', error: { code: (err as { code?: string }).code ?? 'LISTEN_FAILED', message: err.message } });
        },
      );
      break;
    case 'shutdown':
      void shutdown();
      break;
  }
});

/** Reads the Mosquitto files again; one that fails keeps its old contents. */
async function reloadAuthFiles(): Promise<void> {
  for (const file of [passwordFile, aclFile]) {
    if (!file) continue;
    try {
      await file.reload();
      log.info('auth file reloaded', { path: file.path });
    } catch (err) {
      log.error('auth file reload failed; keeping the old contents', { path: file.path, err });
    }
  }
}

const opsEnv: OpsEnv = { workerId, config, log, stats, router, sessions, persistence, proxies, connections, listeners, rules, logTopics, traces, processors, bridges, nodeClaims, sessionLimits, bans, clientDb, overload, exclusive, delayed, topicMetrics, slowSubs, otelTraces };

/** Runs an operation the supervisor asked for and answers with its value or its error. */
async function runOp(id: number, op: string, args: unknown): Promise<void> {
  const fn = Object.hasOwn(OPS, op) ? (OPS as Record<string, Op>)[op] : undefined;
  try {
    if (!fn) throw new OpError('INTERNAL_ERROR', `worker has no operation ${op}`);
    post({ t: 'rpc-reply', id, value: await fn(args, opsEnv) });
  } catch (err) {
    // A refusal crosses as its plain form (the class is lost on postMessage); anything else is a
    // fault of the worker, logged here and answered as an internal error.
    if (err instanceof DomainError) {
      post({ t: 'rpc-reply', id, error: toPlain(err) });
      return;
    }
    log.error('worker operation failed', { op, err });
    post({ t: 'rpc-reply', id, error: { code: 'INTERNAL_ERROR', message: (err as Error)?.message ?? String(err), status: 500 } });
  }
}

/** Loads each stored session this worker takes on, before any client can connect. */
async function restore(list: StoredSession[]): Promise<void> {
  if (!store) return;
  for (const s of list) {
    const parts = await loadStoredParts(store, s);
    sessions.restore(s.clientId, (handle) => storedSession(handle, parts, sessionLimits));
  }
  if (list.length) log.info('sessions restored', { count: list.length });
}

async function openEndpoints(list: OpenEndpoint[]): Promise<void> {
  for (const e of list) await listeners.open(e);
}

// Restored, this worker answers operations; the supervisor sends every feature's state, then
// 'open' with the endpoints, and only then are clients accepted.
restore(data.restore).then(
  () => post({ t: 'loaded' }),
  (err: Error) => {
    log.error('sessions failed to restore', { err });
    post({ t: 'failed', error: { code: (err as { code?: string }).code ?? 'RESTORE_FAILED', message: err.message } });
  },
);
