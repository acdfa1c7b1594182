// Worker thread: owns its listeners, the connections they accept and the sessions of those
// connections. Routes through the process-wide native core; talks to the other workers over
// MessagePorts (delivery batches and session hand-over) and to the supervisor over parentPort.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';

import { Router, RetainedStore, ClientRegistry, DESC_SLOTS } from '../native/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import { createLogger } from '../log/index.ts';
import { StaticAuthenticator, StaticAuthorizer, CachedAuthorizer, type Authorizer, type ClientIdentity } from '../auth/index.ts';
import { WorkerRouter } from '../router/worker-router.ts';
import { SessionTable } from '../session/session-table.ts';
import { Connection } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { Listeners, type OpenEndpoint, type WorkerEndpoint } from '../listener/listeners.ts';
import { EndpointCounters } from '../broker/endpoint-counters.ts';
import type { Transport } from '../listener/transport.ts';
import { WorkerStats } from './stats.ts';
import { registerEndpointStats } from './endpoint-stats.ts';
import type { AuthMethod, WorkerContext } from './context.ts';
import type { ToWorker, FromWorker, PeerMessage } from './messages.ts';
import { createStore } from '../store/index.ts';
import { Persistence } from '../store/persistence.ts';
import type { StoredSession } from '../store/types.ts';
import { OPS } from './ops/index.ts';
import { OpError, type OpsEnv } from './ops/types.ts';

interface WorkerData {
  workerId: number;
  config: BrokerConfig;
  /** The endpoints to open, with this worker's listening socket for each TCP/TLS one. */
  endpoints: OpenEndpoint[];
  /** Per-endpoint connection and session counts shared by every worker. */
  counters: SharedArrayBuffer;
  /** The subscription set's generation, shared by every worker (match results cached per thread). */
  routeGeneration: SharedArrayBuffer;
  routerName: string;
  /** Stored sessions this worker takes on before it accepts connections. */
  restore: StoredSession[];
}

const data = workerData as WorkerData;
const config = data.config;
const log = createLogger({ level: config.log.level, name: `worker-${data.workerId}` });
const stats = new WorkerStats();
const peers = new Map<number, MessagePort>();
const connections = new Set<Connection>();
const authMethods = new Map<string, AuthMethod>();
const endpointCounters = new EndpointCounters(data.counters);

const staticAuthorizer = new StaticAuthorizer(config.auth);
const registry = ClientRegistry.open(data.routerName);
// MEMORY keeps nothing: the broker then skips the store entirely.
const store = config.store.storeType === 'MEMORY' ? null : await createStore(config);
if (store) await store.open();
const persistence = store ? new Persistence(store, registry, data.workerId, log) : null;
const ctx: WorkerContext = {
  workerId: data.workerId,
  config,
  log,
  stats,
  descTable: new Uint32Array(DESC_SLOTS * 1024),
  router: undefined as unknown as WorkerRouter,
  sessions: undefined as unknown as SessionTable,
  persistence,
  authenticator: new StaticAuthenticator(config.auth),
  authMethods,
  endpointCounters,
  authorizerFor(who: ClientIdentity): Authorizer {
    return staticAuthorizer.allowsEverything ? staticAuthorizer : new CachedAuthorizer(staticAuthorizer, config.auth.cacheSize);
  },
  sendControl(worker: number, msg: object): void {
    const port = peers.get(worker);
    if (port) port.postMessage(msg as PeerMessage);
    else log.warn('no port to worker', { worker });
  },
  connectionClosed(conn: Connection, wasConnected: boolean): void {
    connections.delete(conn);
    conn.endpoint.connections.delete(conn);
    conn.endpoint.stats.connectionsCurrent--;
    stats.connectionsCurrent--;
    if (wasConnected || conn.session) sessions.connectionClosed(conn);
  },
};

const sessions = new SessionTable(ctx, registry);
const router = new WorkerRouter(
  {
    workerId: data.workerId,
    session: (h) => sessions.byHandle.get(h) ?? sessions.internal.get(h),
    deliverLocal: (s, d, cache) => sessions.deliverLocal(s, d, cache),
    movedTo: (h) => sessions.movedTo(h),
    sendBatch(worker, buffer, length) {
      const port = peers.get(worker);
      if (port) port.postMessage({ t: 'batch', buffer, length } satisfies PeerMessage, [buffer]);
      else stats.dropped.noSession++;
    },
    dropped: () => stats.dropped.noSession++,
  },
  Router.open(data.routerName),
  RetainedStore.open(data.routerName),
  data.routeGeneration,
);
(ctx as { router: WorkerRouter }).router = router;
(ctx as { sessions: SessionTable }).sessions = sessions;

function accept(t: Transport, endpoint: WorkerEndpoint): void {
  if (shuttingDown) {
    t.destroy();
    return;
  }
  const conn = new Connection(t, ctx, endpoint);
  connections.add(conn);
  endpoint.connections.add(conn);
  stats.connectionsCurrent++;
  stats.connectionsTotal++;
  endpoint.stats.connectionsCurrent++;
  endpoint.stats.connectionsTotal++;
  registerEndpointStats(endpoint.slot, endpoint.stats);
  conn.start();
}

const listeners = new Listeners(config.mqtt.host, endpointCounters, accept);
// Runs when the thread exits, also after an uncaught exception (the supervisor restarts us).
process.on('exit', () => listeners.releaseWs());

function onPeerMessage(msg: PeerMessage): void {
  switch (msg.t) {
    case 'batch': router.receiveBatch(msg.buffer, msg.length); break;
    case 'takeover': sessions.onTakeoverRequest(msg); break;
    case 'session-state': sessions.onSessionState(msg); break;
  }
}

let shuttingDown = false;

/** Stop accepting, tell v5 clients the server is going away (0x8B), flush, and report. */
async function shutdown(): Promise<void> {
  shuttingDown = true;
  listeners.stopAccepting();
  for (const conn of [...connections]) conn.disconnectWith(RC.SERVER_SHUTTING_DOWN, 'shutdown');
  // Give the final writes a moment to leave.
  await new Promise((r) => setTimeout(r, 50));
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
      msg.port.on('message', onPeerMessage);
      break;
    case 'peer-gone':
      peers.get(msg.worker)?.close();
      peers.delete(msg.worker);
      break;
    case 'publish': {
      // The supervisor ($SYS) or the admin API publishing through this worker.
      router.publish({ ...msg.message, topicBytes: Buffer.from(msg.message.topic), payload: Buffer.from(msg.message.payload), props: null, receivedAt: Date.now() }, 0xffffffff, 0);
      break;
    }
    case 'stats':
      stats.sessions = sessions.size;
      stats.persistentSessions = 0;
      for (const s of sessions.all()) if (s.expiryInterval > 0) stats.persistentSessions++;
      post({ t: 'stats', stats: stats.snapshot() });
      break;
    case 'reload-tls':
      try {
        listeners.reloadTls();
        log.info('TLS certificates reloaded');
      } catch (err) {
        log.error('TLS certificate reload failed; keeping the old ones', { err });
      }
      break;
    case 'rpc':
      void runOp(msg.id, msg.op, msg.args);
      break;
    case 'shutdown':
      void shutdown();
      break;
  }
});

const opsEnv: OpsEnv = { ctx, connections, listeners };

/** Runs an operation the supervisor asked for and answers with its value or its error. */
async function runOp(id: number, op: string, args: unknown): Promise<void> {
  const fn = OPS[op];
  try {
    if (!fn) throw new OpError(500, 'UNKNOWN_OP', `worker has no operation ${op}`);
    post({ t: 'rpc-reply', id, value: await fn(args, opsEnv) });
  } catch (err) {
    const e = err as Partial<OpError> & Error;
    if (!(err instanceof OpError)) log.error('worker operation failed', { op, err });
    post({ t: 'rpc-reply', id, error: { code: e.code ?? 'OP_FAILED', message: e.message, status: e.status, field: e.field } });
  }
}

/** Loads each stored session this worker takes on, before any client can connect. */
async function restore(list: StoredSession[]): Promise<void> {
  if (!store) return;
  for (const s of list) {
    const [subs, deliveries, incoming] = await Promise.all([
      store.loadSubscriptions(s.clientId),
      store.loadDeliveries(s.clientId),
      store.loadIncomingQos2(s.clientId),
    ]);
    sessions.restore(s, subs, deliveries, incoming);
  }
  if (list.length) log.info('sessions restored', { count: list.length });
}

async function openEndpoints(list: OpenEndpoint[]): Promise<void> {
  for (const e of list) await listeners.open(e);
}

restore(data.restore).then(() => openEndpoints(data.endpoints)).then(
  () => post({ t: 'ready' }),
  (err: Error) => {
    log.error('listeners failed to start', { err });
    post({ t: 'failed', error: { code: (err as { code?: string }).code ?? 'LISTEN_FAILED', message: err.message } });
  },
);
