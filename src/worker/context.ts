// WorkerContext: what the connections and handlers of one worker thread share: configuration,
// logger, counters, the routing view, the session table, access control. One per worker thread.
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { Authenticator, Authorizer, ClientIdentity } from '../auth/index.ts';
import type { WorkerRouter } from '../router/worker-router.ts';
import type { SessionTable } from '../session/session-table.ts';
import type { Connection } from '../session/connection.ts';
import type { WorkerStats } from './stats.ts';
import type { Persistence } from '../store/persistence.ts';
import type { EndpointCounters } from '../broker/endpoint-counters.ts';

/** An enhanced-authentication method (MQTT 5.0 section 4.12) completed within CONNECT. */
export interface AuthMethod {
  authenticate(req: { clientId: string; username?: string; data?: Buffer }): Promise<{ ok: true; username?: string } | { ok: false; reason: 'bad_credentials' | 'not_authorized' | 'banned' }>;
}

export interface WorkerContext {
  readonly workerId: number;
  readonly config: BrokerConfig;
  readonly log: Logger;
  readonly stats: WorkerStats;
  /** The framer descriptor table of this thread (a feed's descriptors are read before the next). */
  readonly descTable: Uint32Array;
  readonly router: WorkerRouter;
  readonly sessions: SessionTable;
  /** The store's view for this worker; null with the MEMORY store (nothing is kept). */
  readonly persistence: Persistence | null;
  readonly authenticator: Authenticator;
  readonly authMethods: ReadonlyMap<string, AuthMethod>;
  /** Connections and sessions per endpoint, shared by every worker (endpoint limits). */
  readonly endpointCounters: EndpointCounters;
  /** A per-connection authorizer (decisions cached, bounded). */
  authorizerFor(who: ClientIdentity): Authorizer;
  sendControl(worker: number, msg: object): void;
  connectionClosed(conn: Connection, wasConnected: boolean): void;
}
