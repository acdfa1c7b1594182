// The table of every worker operation, by name, and the types the main thread calls them with:
// a call names an operation of this table and passes its argument type, and its answer has the
// operation's result type, so the compiler checks every caller against the implementation.
import type { Op } from './types.ts';
import { metricsOps } from './metrics.ts';
import { endpointOps } from './endpoints.ts';
import { systemOps } from './system.ts';
import { clientOps } from './clients.ts';
import { subscriptionOps } from './subscriptions.ts';
import { ruleOps } from './rules.ts';
import { logTopicOps } from './log-topics.ts';
import { traceOps } from './traces.ts';
import { logOps } from './logs.ts';
import { scriptOps } from './scripts.ts';
import { bridgeOps } from './bridges.ts';
import { clusterOps } from './cluster.ts';
import { drainOps } from './drain.ts';
import { clientDbOps } from './client-db.ts';
import { banOps } from './bans.ts';
import { overloadOps } from './overload.ts';
import { exclusiveOps } from './exclusive.ts';
import { rateLimitOps } from './rate-limits.ts';
import { delayedOps } from './delayed.ts';
import { topicMetricOps } from './topic-metrics.ts';

export const OPS = {
  ...metricsOps,
  ...endpointOps,
  ...systemOps,
  ...clientOps,
  ...subscriptionOps,
  ...ruleOps,
  ...logTopicOps,
  ...traceOps,
  ...logOps,
  ...scriptOps,
  ...bridgeOps,
  ...clusterOps,
  ...drainOps,
  ...clientDbOps,
  ...banOps,
  ...overloadOps,
  ...exclusiveOps,
  ...rateLimitOps,
  ...delayedOps,
  ...topicMetricOps,
} satisfies Record<string, Op>;

type Ops = typeof OPS;

/** The name of a worker operation. */
export type OpName = keyof Ops;
/** What operation `K` takes (it crosses by structured clone). */
export type OpArgs<K extends OpName> = Parameters<Ops[K]>[0];
/** What operation `K` answers. */
export type OpResult<K extends OpName> = Awaited<ReturnType<Ops[K]>>;

/** A call's argument and time limit; the argument may be left out where the operation takes none. */
export type OpTail<K extends OpName> = undefined extends OpArgs<K> ? [args?: OpArgs<K>, timeoutMs?: number] : [args: OpArgs<K>, timeoutMs?: number];

/** Runs operation `op` on one worker (rejects with its refusal, or UNAVAILABLE when the worker is down or does not answer). */
export type WorkerCall = <K extends OpName>(worker: number, op: K, ...tail: OpTail<K>) => Promise<OpResult<K>>;
/** Runs operation `op` on every running worker; answers the results in worker order. */
export type WorkerCallAll = <K extends OpName>(op: K, ...tail: OpTail<K>) => Promise<OpResult<K>[]>;
