// What the MQTT-facing admin routes share: calling a worker (its refusals are domain errors),
// finding the worker (and in a cluster the node) that owns a client, asking every node, and the
// schemas of client ids, topics and subscription options, and the checks of topic names and
// filters a schema cannot make.
import { Type } from '@sinclair/typebox';

import { DomainError, fromPlain, invalid, notFound } from '../../errors/domain-error.ts';
import { topicFilterProblem, topicNameProblem } from '../../auth/topic-filter.ts';
import type { AdminContext } from '../context.ts';
import { callOwner, NOT_HELD } from '../../broker/owner-call.ts';
import { runsAcrossNodes, type MissingNode } from '../../cluster/admin-ops.ts';
import type { OpArgs, OpName, OpResult, OpTail } from '../../worker/ops/index.ts';

// A worker's refusal (404 unknown client, 400 bad filter, 503 worker down) arrives as a
// WorkerOpError, a domain error: the server answers it as it is.
export function onWorker<K extends OpName>(ctx: AdminContext, worker: number, op: K, ...tail: OpTail<K>): Promise<OpResult<K>> {
  return ctx.supervisor.call(worker, op, ...tail);
}

export function onAllWorkers<K extends OpName>(ctx: AdminContext, op: K, ...tail: OpTail<K>): Promise<OpResult<K>[]> {
  return ctx.supervisor.callAll(op, ...tail);
}

/**
 * The workers' answers of every node: this node's and, in a cluster, every other running node's
 * (asked in parallel, ASK_TIMEOUT_MS at most); the running nodes that did not answer in `missing`.
 */
export async function onAllNodes<K extends OpName>(ctx: AdminContext, op: K, args: OpArgs<K> & object = {} as OpArgs<K> & object): Promise<{ parts: { node: string; results: OpResult<K>[] }[]; missing: MissingNode[] }> {
  const ops = ctx.cluster?.adminOps;
  // Another node runs the same operation of the same table: its answers have the same type.
  const [local, remote] = await Promise.all([onAllWorkers(ctx, op, ...([args] as OpTail<K>)), ops ? ops.askAll<OpResult<K>>(op, args as Record<string, unknown>) : null]);
  return { parts: [{ node: ctx.config.nodeName, results: local }, ...(remote?.answers ?? [])], missing: remote?.missing ?? [] };
}

/** What a cluster-wide list adds to its answer when clustering is on: the running nodes whose
 * part is not in it (did not answer in time, or failed), each with the reason. */
export function clusterFields(ctx: AdminContext, missing: MissingNode[]): { nodesMissing?: MissingNode[] } {
  return ctx.cluster ? { nodesMissing: missing } : {};
}

/** Runs `op` on the worker that owns `clientId`'s session, on this node or (in a cluster) the
 * node that holds it: 404 when no node does. */
export async function onOwner<K extends OpName>(ctx: AdminContext, clientId: string, op: K, args: OpArgs<K>): Promise<OpResult<K>> {
  return (await onOwnerNode(ctx, clientId, op, args)).result;
}

/**
 * As onOwner, with the name of the node that ran it. A client of this node is asked first; in a
 * cluster, every other running node is asked next (the one holding the client id answers). 404
 * when no node holds it; 503 when none of the nodes that answered does and some did not answer.
 * An operation other nodes do not run for us (subscribing on a client's behalf) is 409 naming
 * the node that holds the client.
 */
export async function onOwnerNode<K extends OpName>(ctx: AdminContext, clientId: string, op: K, args: OpArgs<K>): Promise<{ node: string; result: OpResult<K> }> {
  const local = await callOwner(ctx.supervisor, clientId, op, args);
  if (local !== NOT_HELD) return { node: ctx.config.nodeName, result: local };
  const ops = ctx.cluster?.adminOps;
  if (!ops) throw notFound(`client ${clientId} not found`);
  const crosses = runsAcrossNodes(op);
  // Another node runs the same operation of the same table: its answer has the same type.
  const r = await ops.askOwner<OpResult<K>>(crosses ? op : 'clients.runtime', crosses ? { ...(args as object), clientId } : { clientId });
  if (r.node === null) {
    if (r.missing.length === 0) throw notFound(`client ${clientId} not found`);
    const names = r.missing.map((m) => `${m.node} (${m.reason})`).join(', ');
    throw new DomainError('UNAVAILABLE', `client ${clientId} not found on the nodes that answered; no answer from ${names}`, { details: { nodesMissing: r.missing } });
  }
  if (!crosses) throw new DomainError('ON_OTHER_NODE', `client ${clientId} is held by node ${r.node}: this operation runs on that node's admin API only`, { details: { node: r.node } });
  if ('refusal' in r) throw fromPlain(r.refusal);
  return { node: r.node, result: r.result };
}

/** A client id: a non-empty string (what MQTT allows, at most 65535 bytes). */
export const CLIENT_ID = Type.String({ minLength: 1, maxLength: 65535 });
export const TOPIC_NAME = Type.String({ minLength: 1, description: 'a topic name: no wildcards' });
export const TOPIC_FILTER = Type.String({ minLength: 1, description: 'a topic filter' });
export const QOS = Type.Integer({ minimum: 0, maximum: 2, default: 0 });

/** The MQTT 5 subscription options a subscribe route takes besides qos. */
export const SUBSCRIPTION_OPTIONS = {
  noLocal: Type.Optional(Type.Boolean({ description: 'MQTT 5 No Local: messages the client publishes are not sent back to it' })),
  retainAsPublished: Type.Optional(Type.Boolean({ description: 'MQTT 5 Retain As Published' })),
  retainHandling: Type.Optional(Type.Integer({ minimum: 0, maximum: 2, description: 'MQTT 5 Retain Handling: 0 send retained messages, 1 only for a new subscription, 2 never' })),
};

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function wellFormed(field: string, value: string): void {
  // A JSON string may hold a lone surrogate, which has no UTF-8 form [MQTT-1.5.4-1].
  if (LONE_SURROGATE.test(value)) throw invalid(field, 'is not valid UTF-8 (lone surrogate)');
}

// What the schemas cannot say of a topic (the routes' schemas have made it a non-empty string).

/** A topic name: no wildcards, valid UTF-8, no U+0000, at most limits.maxTopicLevels levels, and
 * (unless `allowReserved`) not a $ topic. */
export function topicName(ctx: AdminContext, topic: string, field = 'topic', allowReserved = false): string {
  wellFormed(field, topic);
  const problem = topicNameProblem(topic);
  if (problem) throw invalid(field, problem);
  if (!allowReserved && topic.startsWith('$')) throw invalid(field, 'topics starting with $ are reserved for the broker');
  levels(ctx, field, topic);
  return topic;
}

/** A topic filter (wildcards allowed, $share/<group>/<filter> and $queue/<filter> too). */
export function topicFilter(ctx: AdminContext, filter: string, field = 'topic'): string {
  wellFormed(field, filter);
  const problem = topicFilterProblem(filter);
  if (problem) throw invalid(field, problem);
  const shared = /^\$(share|queue)\//.exec(filter);
  if (shared) {
    const inner = sharedInner(filter);
    if (inner === undefined || inner === '') throw invalid(field, 'a shared subscription is $share/<group>/<filter>');
  }
  levels(ctx, field, filter);
  return filter;
}

/** The filter inside `$share/<group>/<filter>` (or `$queue/<filter>`); the filter itself otherwise. */
export function sharedInner(filter: string): string | undefined {
  if (filter.startsWith('$queue/')) return filter.slice('$queue/'.length);
  if (!filter.startsWith('$share/')) return filter;
  const rest = filter.slice('$share/'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  return rest.slice(slash + 1);
}

function levels(ctx: AdminContext, field: string, topic: string): void {
  const max = ctx.config.limits.maxTopicLevels;
  let n = 1;
  for (let i = topic.indexOf('/'); i !== -1 && n <= max; i = topic.indexOf('/', i + 1)) n++;
  if (n > max) throw invalid(field, `more than ${max} levels (limits.maxTopicLevels)`);
}

/** The v5 subscription options byte from `qos` and the optional noLocal, retainAsPublished and
 * retainHandling fields. */
export function subscriptionOptions(qos: number, o: { noLocal?: boolean; retainAsPublished?: boolean; retainHandling?: number }): number {
  return qos | (o.noLocal ? 4 : 0) | (o.retainAsPublished ? 8 : 0) | ((o.retainHandling ?? 0) << 4);
}
