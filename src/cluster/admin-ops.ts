// The admin API's questions to the other nodes (main thread): the connections, sessions and
// subscriptions of the whole cluster, and close/down of a client whatever node holds it. Each node
// answers requests on `spindle.ops.<node>` by running the same worker operation its own admin
// routes run (on every worker, or on the worker owning the client id), for the operations of an
// allow-list only (reads, and kicking a client or clearing its session's messages), their
// arguments checked; never an operation named by the network otherwise. The asking node asks every
// running node in parallel and waits ASK_TIMEOUT_MS at most: a node that does not answer in time,
// or fails, is reported by name (never silently left out). The web console's live picture asks
// each node for its counters the same way (`metrics`, summed on the node into one small answer).
import type { Msg, NatsConnection } from '@nats-io/transport-node';

import { callOwner, NOT_HELD, type OwnerHost } from '../broker/owner-call.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';
import { nodeTotals } from '../metrics/endpoint-totals.ts';
import type { WorkerMetricsSnapshot } from '../worker/ops/metrics.ts';
import { token } from './names.ts';
import type { OpName, OpTail, WorkerCallAll } from '../worker/ops/index.ts';

/** What the admin operations need of the supervisor. */
export interface AdminOpsHost extends OwnerHost {
  callAll: WorkerCallAll;
}

/** How long the asking node waits for each other node. */
export const ASK_TIMEOUT_MS = 5000;
const MAX_CLIENT_ID = 65535;
const MAX_TOPIC = 65535;
/** clients.list's `limit` (page × size of the admin API: at most 1e6 × 1000). */
const MAX_LIMIT = 1_000_000_000;

type Check = (args: Record<string, unknown>) => string | null;

interface OpSpec {
  /** 'all': every worker of the node answers (a list per worker); 'owner': the worker holding the
   * client id `args.clientId`. */
  scope: 'all' | 'owner';
  check: Check;
  /** Merges the workers' answers into one before they cross (smaller answers). */
  merge?: (results: unknown[], args: Record<string, unknown>) => unknown[];
}

const optionalString = (v: unknown, max: number) => v === undefined || (typeof v === 'string' && v.length <= max);
const int = (v: unknown, min: number, max: number) => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
const clientId: Check = (a) => (typeof a.clientId === 'string' && a.clientId !== '' && a.clientId.length <= MAX_CLIENT_ID ? null : 'clientId: expected a non-empty string');
const only = (a: Record<string, unknown>, fields: readonly string[]) => Object.keys(a).find((k) => !fields.includes(k));
function fields(allowed: readonly string[], ...checks: Check[]): Check {
  return (a) => {
    const extra = only(a, allowed);
    if (extra !== undefined) return `${extra}: not an argument of this operation`;
    for (const c of checks) {
      const problem = c(a);
      if (problem) return problem;
    }
    return null;
  };
}

interface ConnectionPage {
  total: number;
  items: { connectTime: string; clientId: string }[];
}

/** The allow-list: the only worker operations another node may run here. */
const OPS: Partial<Record<OpName, OpSpec>> = {
  'clients.list': {
    scope: 'all',
    check: fields(['clientId', 'username', 'port', 'limit'], (a) => (optionalString(a.clientId, MAX_CLIENT_ID) && optionalString(a.username, MAX_CLIENT_ID) ? null : 'clientId, username: expected strings'),
      (a) => (a.port === undefined || int(a.port, 1, 65535) ? null : 'port: expected 1..65535'), (a) => (int(a.limit, 1, MAX_LIMIT) ? null : 'limit: expected a positive integer')),
    // The workers' first `limit` by connect time, merged into the node's first `limit`: the order
    // of /mqtt/connection (oldest first, then client id).
    merge(results, args) {
      const pages = results as ConnectionPage[];
      const items = pages.flatMap((p) => p.items).sort((a, c) => (a.connectTime < c.connectTime ? -1 : a.connectTime > c.connectTime ? 1 : a.clientId < c.clientId ? -1 : a.clientId > c.clientId ? 1 : 0));
      return [{ total: pages.reduce((n, p) => n + p.total, 0), items: items.slice(0, args.limit as number) }];
    },
  },
  'clients.topics': {
    scope: 'all',
    check: fields([]),
    // Filter counts summed over the workers.
    merge(results) {
      const counts = new Map<string, number>();
      for (const part of results as [string, number][][]) for (const [f, n] of part) counts.set(f, (counts.get(f) ?? 0) + n);
      return [[...counts]];
    },
  },
  'clients.subscribers': { scope: 'all', check: fields(['topic'], (a) => (typeof a.topic === 'string' && a.topic !== '' && a.topic.length <= MAX_TOPIC ? null : 'topic: expected a non-empty string')) },
  'clients.runtime': { scope: 'owner', check: fields(['clientId'], clientId) },
  'clients.check': { scope: 'owner', check: fields(['clientId'], clientId) },
  'clients.close': { scope: 'owner', check: fields(['clientId', 'mode'], clientId, (a) => (a.mode === 'close' || a.mode === 'down' ? null : 'mode: expected close or down')) },
  'clients.sessionMessages': { scope: 'owner', check: fields(['clientId', 'offset', 'limit'], clientId, (a) => (int(a.offset, 0, MAX_LIMIT) && int(a.limit, 1, 1000) ? null : 'offset, limit: expected integers')) },
  'clients.sessionClear': { scope: 'owner', check: fields(['clientId'], clientId) },
  // Topic metrics and slow subscribers answer for the cluster: each node's workers' counts and
  // records (src/features/topic-metrics, src/features/slow-subs); clearing the slow list too.
  'topicMetrics.read': { scope: 'all', check: fields([]) },
  'slowSubs.read': { scope: 'all', check: fields([]) },
  'slowSubs.clear': { scope: 'all', check: fields([]) },
  // The web console's per-node figures: the workers' counters, summed here into one small answer
  // ({t, connections, received, sent, dropped}; `t` this node's clock, for the rates the asking
  // node takes between two answers).
  metrics: {
    scope: 'all',
    check: fields([]),
    merge: (results) => [{ t: Date.now(), ...nodeTotals(results as WorkerMetricsSnapshot[]) }],
  },
};

/** Whether another node runs `op` for this one (the allow-list). */
export function runsAcrossNodes(op: string): boolean {
  return Object.hasOwn(OPS, op);
}

/** A worker's (or this part's) refusal as it crosses: the HTTP status the admin API answers. */
export interface OpRefusal {
  status: number;
  code: string;
  message: string;
  field?: string;
}

type Reply =
  | { ok: true; results: unknown[] }
  | { ok: true; held: false }
  | { ok: true; held: true; result: unknown }
  /** `held`: the refusal of the worker holding the client id (an owner operation), not of the request. */
  | { ok: false; refusal: OpRefusal; held?: boolean };

/** A running node whose answer is not in the result, and why (timeout, no responder, failed). */
export interface MissingNode {
  node: string;
  reason: string;
}

/** The answers of the other nodes to an operation run on every worker. */
export interface AllAnswers<T> {
  answers: { node: string; results: T[] }[];
  missing: MissingNode[];
}

/** Where a client id's operation ran: the node holding it answered (a result, or a refusal such as
 * "not connected"), or no node that answered holds it. */
export type OwnerAnswer<T> =
  | { node: string; result: T }
  | { node: string; refusal: OpRefusal }
  | { node: null; missing: MissingNode[] };

export interface AdminOpsCounters {
  /** Requests this node sent to another (one per node asked). */
  sent: number;
  /** Requests of other nodes this node answered. */
  served: number;
  /** Nodes that did not answer within ASK_TIMEOUT_MS. */
  timeouts: number;
  /** Nodes that answered with a failure, not at all (no responder, NATS away) or unreadably. */
  failures: number;
  /** Answers this node could not send: larger than a NATS message may be. */
  tooLarge: number;
  /** Requests refused here: an operation not in the allow-list, or bad arguments. */
  badRequests: number;
}

export class ClusterAdminOps implements ClusterPart {
  readonly name = 'adminOps';
  private ctx: ClusterPartContext | null = null;
  readonly counters: AdminOpsCounters = { sent: 0, served: 0, timeouts: 0, failures: 0, tooLarge: 0, badRequests: 0 };

  constructor(private readonly host: AdminOpsHost) {}

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    ctx.nc.subscribe(`spindle.ops.${token(ctx.nodeName)}`, { callback: (err, m) => {
      if (!err) void this.onRequest(ctx.nc, m);
    } });
  }

  /** The other running nodes' answers to `op` run on every worker (the workers' lists, merged
   * per node for some operations). */
  async askAll<T>(op: string, args: Record<string, unknown>): Promise<AllAnswers<T>> {
    const out: AllAnswers<T> = { answers: [], missing: [] };
    await Promise.all(this.peers().map(async (node) => {
      const r = await this.ask(node, op, args);
      if ('reason' in r) out.missing.push({ node, reason: r.reason });
      else if (!r.ok) {
        this.counters.failures++;
        out.missing.push({ node, reason: `failed: ${r.refusal.message}` });
      } else if ('results' in r && Array.isArray(r.results)) out.answers.push({ node, results: r.results as T[] });
      else {
        this.counters.failures++;
        out.missing.push({ node, reason: 'failed: an answer that does not parse' });
      }
    }));
    out.answers.sort((a, c) => (a.node < c.node ? -1 : 1));
    out.missing.sort((a, c) => (a.node < c.node ? -1 : 1));
    return out;
  }

  /** The other running nodes, by name. */
  runningNodes(): string[] {
    return this.peers();
  }

  /** `op` run on every worker of one other node: its results (merged for some operations), or
   * why there are none (as askAll's `missing`). */
  async askNode<T>(node: string, op: string, args: Record<string, unknown>): Promise<{ results: T[] } | { reason: string }> {
    const r = await this.ask(node, op, args);
    if ('reason' in r) return { reason: r.reason };
    if (!r.ok) {
      this.counters.failures++;
      return { reason: `failed: ${r.refusal.message}` };
    }
    if ('results' in r && Array.isArray(r.results)) return { results: r.results as T[] };
    this.counters.failures++;
    return { reason: 'failed: an answer that does not parse' };
  }

  /** `op` run on the node holding `args.clientId`: every other running node is asked; the answer
   * comes as soon as the node holding it has answered (a client id is held by one node), or once
   * every node has answered or timed out. */
  askOwner<T>(op: string, args: Record<string, unknown> & { clientId: string }): Promise<OwnerAnswer<T>> {
    const peers = this.peers();
    const missing: MissingNode[] = [];
    let refused: OwnerAnswer<T> | null = null;
    return new Promise((resolve) => {
      let waiting = peers.length;
      const settle = () => {
        if (--waiting > 0) return;
        missing.sort((a, c) => (a.node < c.node ? -1 : 1));
        // A refusal of the node holding it (e.g. not connected) when no node did it.
        resolve(refused ?? { node: null, missing });
      };
      if (waiting === 0) {
        resolve({ node: null, missing });
        return;
      }
      for (const node of peers) {
        void this.ask(node, op, args).then((r) => {
          if ('reason' in r) missing.push({ node, reason: r.reason });
          else if (!r.ok && r.held === true) refused ??= { node, refusal: r.refusal };
          else if (!r.ok) {
            this.counters.failures++;
            missing.push({ node, reason: `failed: ${r.refusal.message}` });
          }
          else if ('held' in r && r.held) resolve({ node, result: r.result as T });
          settle();
        });
      }
    });
  }

  private peers(): string[] {
    return this.ctx === null ? [] : this.ctx.runningPeers().sort();
  }

  private async ask(node: string, op: string, args: unknown): Promise<Reply | { reason: string }> {
    const ctx = this.ctx!;
    if (!ctx.natsUp()) {
      this.counters.failures++;
      return { reason: 'no connection to NATS' };
    }
    this.counters.sent++;
    let m: Msg;
    try {
      m = await ctx.nc.request(`spindle.ops.${token(node)}`, JSON.stringify({ op, args }), { timeout: ASK_TIMEOUT_MS });
    } catch (err) {
      const e = err as Error & { isNoResponders?: () => boolean };
      if (e.name === 'TimeoutError') {
        this.counters.timeouts++;
        ctx.log.warn('cluster: a node did not answer an admin query in time', { node, op, timeoutMs: ASK_TIMEOUT_MS });
        return { reason: `no answer within ${ASK_TIMEOUT_MS} ms` };
      }
      this.counters.failures++;
      const reason = e.isNoResponders?.() ? 'no responder (the node is stopping, or does not answer admin queries)' : `failed: ${e.message}`;
      ctx.log.warn('cluster: an admin query to a node failed', { node, op, reason });
      return { reason };
    }
    try {
      const r = m.json<Reply>();
      if (typeof r !== 'object' || r === null || typeof r.ok !== 'boolean') throw new Error('not an answer');
      return r;
    } catch {
      this.counters.failures++;
      return { reason: 'failed: an answer that does not parse' };
    }
  }

  /** Another node's question: checked against the allow-list, run here, answered. */
  private async onRequest(nc: NatsConnection, m: Msg): Promise<void> {
    const reply = await this.run(m);
    let data = JSON.stringify(reply);
    const max = (nc.info?.max_payload ?? 1_048_576) - 1024;
    if (Buffer.byteLength(data) > max) {
      this.counters.tooLarge++;
      this.ctx!.log.warn('cluster: an answer to an admin query was larger than a NATS message may be; refused', { max });
      data = JSON.stringify({ ok: false, refusal: { status: 413, code: 'TOO_LARGE', message: `the answer is larger than a NATS message may be (${max} bytes): ask for a smaller page` } } satisfies Reply);
    }
    try {
      m.respond(data);
    } catch (err) {
      this.ctx!.log.warn('cluster: an answer to an admin query could not be sent', { err });
    }
  }

  private async run(m: Msg): Promise<Reply> {
    let op: OpName;
    let spec: OpSpec;
    let args: Record<string, unknown>;
    try {
      const req = m.json<{ op: unknown; args: unknown }>();
      if (typeof req?.op !== 'string' || !Object.hasOwn(OPS, req.op)) throw new Error(`op: not an operation other nodes may run (${String(req?.op).slice(0, 100)})`);
      if (typeof req.args !== 'object' || req.args === null || Array.isArray(req.args)) throw new Error('args: expected an object');
      op = req.op as OpName;
      spec = OPS[op]!;
      args = req.args as Record<string, unknown>;
      const problem = spec.check(args);
      if (problem) throw new Error(problem);
    } catch (err) {
      this.counters.badRequests++;
      this.ctx!.log.warn('cluster: an admin query from another node was refused', { err });
      return { ok: false, refusal: { status: 400, code: 'INVALID_PARAMETER', message: (err as Error).message } };
    }
    this.counters.served++;
    // The arguments passed the operation's check above: they are what its implementation takes.
    const tail = [args] as OpTail<OpName>;
    try {
      if (spec.scope === 'all') {
        const results: unknown[] = await this.host.callAll(op, ...tail);
        return { ok: true, results: spec.merge ? spec.merge(results, args) : results };
      }
      const result: unknown = await callOwner(this.host, args.clientId as string, op, args as never);
      return result === NOT_HELD ? { ok: true, held: false } : { ok: true, held: true, result };
    } catch (err) {
      const e = err as { status?: unknown; code?: unknown; message?: unknown; field?: unknown };
      const status = typeof e.status === 'number' ? e.status : 500;
      if (status >= 500) this.ctx!.log.warn('cluster: an admin query from another node failed here', { op, err });
      const refusal = { status, code: typeof e.code === 'string' ? e.code : 'INTERNAL_ERROR', message: String(e.message), ...(typeof e.field === 'string' ? { field: e.field } : {}) };
      return { ok: false, refusal, held: spec.scope === 'owner' };
    }
  }
}
