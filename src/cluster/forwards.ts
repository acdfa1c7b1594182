// SessionForwards: the sessions that left this node for another one (a claim with Clean Start 0:
// a drain, a rebalance, any reconnect there), kept a while so that what still comes here for
// them follows them (main thread, a part of the ClusterLink).
// - Why: the other nodes send a session's messages to the node their interest says wants them.
//   Until they learn that the session's new node wants them (its interest, 50 ms batches plus a
//   NATS hop) they send them here, and frames already in this node's QoS stream, or routed here
//   just after the session left, would match no one: lost.
// - How: the worker giving the session up enters its plain filters under the new node's forward
//   handle in the routing core before the session leaves it (src/engine/session/node-handover.ts),
//   so every message routed here from then on that the session would have matched (from another
//   node, or published here) is matched by that handle; the worker copies it to this thread like
//   a node handle's match, and the link sends it through the QoS stream to the new node, marked
//   for this session only (FrameMessage.only; QoS 1/2 only: QoS 0 is at most once). Those
//   filters are also this node's interest meanwhile, so no node stops sending them before it
//   sends them to the new node too.
// - Copies: a message sent both here and to the new node, or routed here before the move and
//   there after it, reaches the session twice: the session keeps the identities of the cluster
//   messages it took (Session.firstCopy) and drops the second copy.
// - FORWARD_MS after a session left (with no release to that node in progress), and once this
//   node's QoS stream subject has nothing waiting, its filters are removed from the forward
//   handle. A drain waits for that (`idle`) before it says drained, so a node stopped after its
//   drain has forwarded what reached it.
// Owns the departed sessions by node and the reference counts of the forward handles' filters.
import { matchLevels, parseFilter, type FilterLevel } from '../auth/topic-filter.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';

/** How long the filters of a session that left stay under its new node's forward handle: far
 * longer than its new node's interest takes to reach every node, and than a frame sent here
 * before that takes to be routed here. */
export const FORWARD_MS = 3000;
const SWEEP_MS = 250;

interface Departed {
  /** Null while its release is in progress (its filters not known yet: every message is sent
   * for it then, and its new node matches it against the session's own subscriptions). */
  filters: { filter: string; levels: FilterLevel[] }[] | null;
  at: number;
  /** Once FORWARD_MS passed: the QoS stream's last sequence then; followed until this node
   * routed its subject's frames up to there. */
  mark?: number;
}

interface ToNode {
  handle: number;
  sessions: Map<string, Departed>;
  /** Filters under the forward handle, and how many departed sessions hold each. */
  refs: Map<string, number>;
  /** Releases to that node in progress (their workers may be entering filters). */
  releasing: number;
}

export interface ForwardsHost {
  setTapFilter(handle: number, filter: string, on: boolean): void;
}

export interface ForwardCounters {
  /** Sessions that left for another node and were followed; messages forwarded to them. */
  sessionsFollowed: number;
  messagesForwarded: number;
}

export class SessionForwards implements ClusterPart {
  readonly name = 'forwards';
  readonly counters: ForwardCounters = { sessionsFollowed: 0, messagesForwarded: 0 };
  private readonly nodes = new Map<string, ToNode>();
  private timer: NodeJS.Timeout | null = null;

  private sweeping = false;

  /** `handleOf(node)`: the forward handle of `node` (undefined: not a node known here); `stream`:
   * this node's QoS stream subject, whose frames stored before the others learnt where the
   * sessions went (delayed, e.g. by a consumer that stalled) are routed before a session is no
   * longer followed. */
  constructor(private readonly host: ForwardsHost, private readonly handleOf: (node: string) => number | undefined, private readonly stream: { lastSeq(): Promise<number>; routedUpTo(mark: number): Promise<boolean> } | null = null) {}

  start(_ctx: ClusterPartContext): void {
    this.timer = setInterval(() => void this.sweepWhenCaughtUp(), SWEEP_MS);
    this.timer.unref();
  }

  /** Sessions are no longer followed only once what was sent here before is routed. */
  private async sweepWhenCaughtUp(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const due = this.due(Date.now());
      if (due.length === 0) return;
      const unmarked = due.filter((d) => d.mark === undefined);
      if (unmarked.length > 0) {
        const last = (await this.stream?.lastSeq()) ?? 0;
        for (const d of unmarked) d.mark = last;
      }
      const marks = due.map((d) => d.mark ?? 0);
      const highest = Math.max(...marks);
      if (this.stream === null || (await this.stream.routedUpTo(highest))) this.sweep(Date.now(), highest);
    } finally {
      this.sweeping = false;
    }
  }

  private due(now: number): Departed[] {
    const out: Departed[] = [];
    for (const to of this.nodes.values()) {
      if (to.releasing > 0) continue;
      for (const d of to.sessions.values()) if (d.filters !== null && now - d.at >= FORWARD_MS) out.push(d);
    }
    return out;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** A release of sessions to `node` starts (`clientIds`: those to be resumed there): answers
   * the forward handle its workers enter the filters under (undefined: none), and the function
   * that ends it (after `departed`; a session not told departed by then is not followed). */
  begin(node: string, clientIds: readonly string[]): { handle: number | undefined; end(): void } {
    const handle = this.handleOf(node);
    if (handle === undefined) return { handle, end: () => undefined };
    const to = this.to(node, handle);
    to.releasing++;
    const at = Date.now();
    for (const id of clientIds) if (!to.sessions.has(id)) to.sessions.set(id, { filters: null, at });
    return {
      handle,
      end: () => {
        to.releasing--;
        for (const id of clientIds) if (to.sessions.get(id)?.filters === null) to.sessions.delete(id);
      },
    };
  }

  /** The session `clientId` left for `node` with these (forwarded) filters. */
  departed(node: string, clientId: string, filters: readonly string[]): void {
    const handle = this.handleOf(node);
    if (handle === undefined) return;
    const to = this.to(node, handle);
    const before = to.sessions.get(clientId);
    if (before?.filters) this.unref(to, before);
    to.sessions.set(clientId, { filters: filters.map((filter) => ({ filter, levels: parseFilter(filter) })), at: Date.now() });
    for (const f of filters) to.refs.set(f, (to.refs.get(f) ?? 0) + 1);
    this.counters.sessionsFollowed++;
  }

  /** The sessions that left for `node` lately that a message on `topic` is for. */
  targets(node: string, topic: string): string[] {
    const to = this.nodes.get(node);
    if (to === undefined || to.sessions.size === 0) return [];
    const levels = topic.split('/');
    const out: string[] = [];
    for (const [clientId, d] of to.sessions) if (d.filters === null || d.filters.some((f) => matchLevels(f.levels, levels))) out.push(clientId);
    if (out.length > 0) this.counters.messagesForwarded++;
    return out;
  }

  /** Whether no session is followed any more (every forward handle is empty). */
  idle(): boolean {
    for (const to of this.nodes.values()) if (to.sessions.size > 0 || to.releasing > 0 || to.refs.size > 0) return false;
    return true;
  }

  /** Sessions that left more than FORWARD_MS ago are no longer followed (called once this node
   * caught up with its QoS stream subject). */
  sweep(now: number, routedUpTo = Infinity): void {
    for (const to of this.nodes.values()) {
      if (to.releasing > 0) continue;
      for (const [clientId, d] of to.sessions) {
        if (now - d.at < FORWARD_MS || d.filters === null || d.mark === undefined || d.mark > routedUpTo) continue;
        to.sessions.delete(clientId);
        this.unref(to, d);
      }
    }
  }

  private to(node: string, handle: number): ToNode {
    let to = this.nodes.get(node);
    if (to === undefined || to.handle !== handle) this.nodes.set(node, (to = { handle, sessions: new Map(), refs: new Map(), releasing: 0 }));
    return to;
  }

  private unref(to: ToNode, d: Departed): void {
    for (const { filter } of d.filters ?? []) {
      const n = (to.refs.get(filter) ?? 1) - 1;
      if (n > 0) {
        to.refs.set(filter, n);
        continue;
      }
      to.refs.delete(filter);
      this.host.setTapFilter(to.handle, filter, false);
    }
  }
}
