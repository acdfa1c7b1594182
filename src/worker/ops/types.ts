// Operations the supervisor (the admin API) asks a worker thread to run on the state it owns:
// its connections, sessions, listeners and counters. Each module of ops is a plain table of
// named functions; results and errors cross back as structured-clone values.
import type { BrokerConfig } from '../../config/index.ts';
import { DomainError, type ErrorCode } from '../../errors/domain-error.ts';
import type { Logger } from '../../log/index.ts';
import type { Connection } from '../../engine/connection/connection.ts';
import type { SessionTable } from '../../engine/session/session-table.ts';
import type { Session, SessionLimits } from '../../engine/session/session.ts';
import type { Persistence } from '../../engine/session/persistence.ts';
import type { ProxyEnv } from '../../engine/session/proxy-subscriptions.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Listeners } from '../../listener/listeners.ts';
import type { WorkerRules } from '../../rules/worker-rules.ts';
import type { WorkerLogTopics } from '../../features/tracing/worker-log-topics.ts';
import type { WorkerTraces } from '../../features/tracing/worker-traces.ts';
import type { WorkerBridges } from '../../bridges/worker-bridges.ts';
import type { WorkerNodeClaims } from '../node-claims.ts';
import type { WorkerClientDb } from '../../features/client-db/worker-db.ts';
import type { WorkerBans } from '../../features/bans/worker-bans.ts';

/** What the operations reach of their worker thread (the worker wires it). */
import type { ProcessorStage } from '../../features/scripts/worker/stage.ts';
import type { WorkerOverload } from '../../features/overload/worker-overload.ts';
import type { WorkerExclusive } from '../../features/exclusive/worker-exclusive.ts';
import type { WorkerDelayed } from '../../features/delayed/worker-delayed.ts';
import type { WorkerTopicMetrics } from '../../features/topic-metrics/worker-topic-metrics.ts';
import type { WorkerSlowSubs } from '../../features/slow-subs/worker-slow-subs.ts';
import type { WorkerOtelTraces } from '../../features/otel-traces/worker-otel-traces.ts';

export interface OpsEnv {
  readonly workerId: number;
  readonly config: BrokerConfig;
  readonly log: Logger;
  readonly stats: WorkerStats;
  readonly router: WorkerRouter;
  readonly sessions: SessionTable;
  readonly persistence: Persistence | null;
  /** Subscriptions made by the broker (also the environment subscribing needs). */
  readonly proxies: ProxyEnv;
  readonly connections: ReadonlySet<Connection>;
  readonly listeners: Listeners;
  readonly rules: WorkerRules;
  readonly logTopics: WorkerLogTopics;
  readonly traces: WorkerTraces;
  readonly processors: ProcessorStage;
  readonly bridges: WorkerBridges;
  readonly nodeClaims: WorkerNodeClaims;
  readonly sessionLimits: SessionLimits;
  /** The worker's copy of the built-in client database (src/features/client-db). */
  readonly clientDb: WorkerClientDb;
  readonly bans: WorkerBans;
  readonly overload: WorkerOverload;
  readonly exclusive: WorkerExclusive;
  readonly delayed: WorkerDelayed;
  readonly topicMetrics: WorkerTopicMetrics;
  readonly slowSubs: WorkerSlowSubs;
  readonly otelTraces: WorkerOtelTraces;
}

// The shape every operation has. Each table keeps its operations' own argument and result types
// (`satisfies`, not a declared Record), and index.ts derives the callers' types from them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Op = (args: any, env: OpsEnv) => unknown | Promise<unknown>;

/** An op's refusal, a domain error (404 unknown client, ...); it crosses to the main thread as
 * its PlainError and is rebuilt there (WorkerOpError). */
export class OpError extends DomainError {
  constructor(code: ErrorCode, message: string, field?: string) {
    super(code, message, { field });
    this.name = 'OpError';
  }
}

/** The connection of a session: every SessionLink of this worker's sessions is a Connection (the
 * worker makes them), so the operations may read its details. */
export function connectionOf(session: Session): Connection | null {
  return session.connection as Connection | null;
}
