// WorkerBridges: the outbound half of the MQTT bridges inside one worker thread. A bridge's local
// filters are subscribed in the routing core under its handle (like a rule's, see
// Supervisor.setTap), so a PUBLISH routed on this thread finds it; the message is copied
// and posted to the main thread (which holds the bridge's connection to the remote broker) in one
// message per tick, never one per message. A message that came in over a bridge (its publisher is
// the bridge's handle) is not sent back out over it: no loops. The cluster's node handles are
// handled the same way (each is another node's interest), with one addition: a message leaves
// once per node even when it matched that node's plain filters and it was picked for one or more
// shared groups there; the output says which (`plain`, `shares`). The web console's message
// viewers (src/admin/console/message-viewers.ts) are handles here too, posted the same way.
import type { Message } from '../broker/message.ts';

/** One message for a bridge, as posted to the main thread. */
export interface BridgeOutput {
  handle: number;
  topic: string;
  /** A copy of exactly the payload (its buffer is transferred, not cloned). */
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** Absolute expiry in ms since the epoch; 0: never. */
  expiresAt: number;
  /** MQTT 5 properties as encoded in a PUBLISH (user properties, content type, response topic,
   * correlation data, payload format), in the same transferred buffer as the payload; null: none. */
  props: Uint8Array | null;
  /** It matched the handle's plain (non-shared) filters. Always true for a bridge. */
  plain: boolean;
  /** For a cluster's node handle: the shared groups (by the number the cluster gave each, the
   * membership's subscription id) the node was picked for; null: none. */
  shares: number[] | null;
  /** The publisher's client-id hash (the hash_clientid share strategy picks by it, here and on
   * the node a message crosses to). */
  publisherHash: number;
  /** For a cluster's node or forward handle at QoS 1/2: the message's identity across the
   * cluster (Message.origin, or this node's tag and the routing tick); else ''. */
  origin: string;
}

export interface WorkerBridgesHost {
  /** Posts a tick's outputs to the main thread, transferring the payload buffers; `ticket` (0:
   * none) names the tick's QoS 1/2 messages for other nodes, answered by `acked`; `skipped`,
   * [viewer handle, matches not copied] for the console's viewers over their bound. */
  postOutputs(items: BridgeOutput[], transfer: ArrayBuffer[], ticket: number, skipped: ViewerSkips | null): void;
}

/** [a console viewer's handle, how many of its matches this worker counted without copying]. */
export type ViewerSkips = [handle: number, count: number][];

/** Matches this worker copies for one console message viewer in a second; the rest are only
 * counted. The main thread sends a page at most 100 a second (src/admin/console/viewer-budget.ts),
 * so a viewer of a busy filter costs the worker at most this many copies a second, not one per
 * matching message. */
export const VIEWER_COPIES_PER_SECOND = 200;

/** How long a QoS 1/2 message for another node may wait for the cluster to accept it before its
 * publisher is told it failed (the main thread answers well before: its own timeouts are shorter). */
const ACK_TIMEOUT_MS = 60_000;

interface Ticket {
  id: number;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

export class WorkerBridges {
  private handles = new Set<number>();
  private viewers = new Set<number>();
  /** Taps of other main-thread features (node/taps.ts Taps.open): their matches take the same
   * per-tick post as a bridge's. */
  private taps = new Set<number>();
  /** Per viewer handle: the start of its current second and the matches copied in it. */
  private viewerWindows = new Map<number, { start: number; copied: number }>();
  /** Per viewer handle: matches over its bound since the last post, counted only. */
  private viewerSkipped = new Map<number, number>();
  /** The cluster's handles: one per remote node (its interest), and the handle messages from
   * other nodes are published with here. Such a message is never sent on to any node. */
  private clusterHandles = new Set<number>();
  private clusterInbound = -1;
  /** The cluster's forward handles, one per other node: the subscriptions of sessions that left
   * this node for that one, kept a while (src/cluster/forwards.ts). Their matches go to the main
   * thread like a node handle's, messages from other nodes included. */
  private forwardHandles = new Set<number>();
  private originTag = '';
  private outputs: BridgeOutput[] = [];
  private transfer: ArrayBuffer[] = [];
  private flushScheduled = false;
  /** The tick's QoS 1/2 messages for other nodes, whose acknowledgements wait for the cluster
   * (AckGates); then the ones posted and not yet answered. */
  private ticket: Ticket | null = null;
  private readonly waiting = new Map<number, Ticket>();
  private ticketSeq = 0;
  /** The last message given a ticket (take() answers it for that message). */
  private guarded: Message | null = null;
  /** The outputs of the routing in progress for node handles (by handle), so that a message
   * matched by a node's plain filters and picked for its groups leaves once. Routings are told
   * one after the other, each message with its own routing tick (`seq`). */
  private routing: Message | null = null;
  private routingSeq: number | undefined = undefined;
  private readonly routed = new Map<number, BridgeOutput>();
  /** Matches skipped because the message came in over the same bridge. */
  loopsSkipped = 0;

  constructor(private readonly host: WorkerBridgesHost) {}

  /** The handles of the running bridges (the main thread sends the whole set). */
  set(handles: readonly number[]): void {
    this.handles = new Set(handles);
  }

  /** The handles of the features' taps whose matches go to the main thread (the whole set). */
  setTaps(handles: readonly number[]): void {
    this.taps = new Set(handles);
  }

  /** The cluster's node handles and its inbound handle (the main thread sends the whole set). */
  setCluster(handles: readonly number[], inbound: number, forwards: readonly number[] = [], originTag = ''): void {
    this.clusterHandles = new Set(handles);
    this.clusterInbound = inbound;
    this.forwardHandles = new Set(forwards);
    this.originTag = originTag;
  }

  /** Whether `publisher` is the cluster's inbound handle: the message was published on another
   * node, whose rules, log topics and bridges have taken it already. */
  fromOtherNode(publisher: number): boolean {
    return publisher === this.clusterInbound && publisher !== -1;
  }

  /** The handles of the web console's message viewers (the main thread sends the whole set):
   * their matches take the same per-tick post as a bridge's. */
  setViewers(handles: readonly number[]): void {
    this.viewers = new Set(handles);
    for (const h of this.viewerWindows.keys()) if (!this.viewers.has(h)) this.viewerWindows.delete(h);
  }

  /** Whether a match for viewer `handle` is copied (within VIEWER_COPIES_PER_SECOND), or only
   * counted. */
  private viewerCopies(handle: number): boolean {
    const now = Date.now();
    let w = this.viewerWindows.get(handle);
    if (w === undefined || now - w.start >= 1000) {
      w = { start: now, copied: 0 };
      this.viewerWindows.set(handle, w);
    }
    if (w.copied < VIEWER_COPIES_PER_SECOND) {
      w.copied++;
      return true;
    }
    this.viewerSkipped.set(handle, (this.viewerSkipped.get(handle) ?? 0) + 1);
    return false;
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  has(handle: number): boolean {
    return this.handles.has(handle) || this.clusterHandles.has(handle) || this.forwardHandles.has(handle) || this.viewers.has(handle) || this.taps.has(handle);
  }

  /** RouterHost.tapMatched for a bridge's or a node's handle: `m` matched its local filters
   * (`share` 0), or the node was picked as the member of the shared group numbered `share`. */
  matched(handle: number, m: Message, publisher: number, share = 0, publisherHash = 0): void {
    if (publisher === handle || (publisher === this.clusterInbound && this.clusterHandles.has(handle))) {
      this.loopsSkipped++;
      return;
    }
    if (this.viewers.has(handle) && !this.viewerCopies(handle)) {
      this.scheduleFlush();
      return;
    }
    const node = this.clusterHandles.has(handle) || this.forwardHandles.has(handle);
    if (node) {
      if (this.routing !== m || this.routingSeq !== m.seq) {
        this.routing = m;
        this.routingSeq = m.seq;
        this.routed.clear();
      }
      const earlier = this.routed.get(handle);
      if (earlier !== undefined) {
        if (share === 0) earlier.plain = true;
        else (earlier.shares ??= []).push(share);
        return;
      }
    }
    // The payload may be a view into a larger buffer (a delivery batch): copy just its bytes (and
    // the properties' after them, in the same buffer), so only they cross to the main thread.
    const pl = m.payload.length;
    const buf = new ArrayBuffer(pl + (m.props?.length ?? 0));
    const payload = new Uint8Array(buf, 0, pl);
    payload.set(m.payload);
    let props: Uint8Array | null = null;
    if (m.props !== null && m.props.length > 0) {
      props = new Uint8Array(buf, pl, m.props.length);
      props.set(m.props);
    }
    const origin = !node || m.qos === 0 ? '' : m.origin ?? (m.seq === undefined ? '' : this.originTag + m.seq);
    const out: BridgeOutput = { handle, topic: m.topic, payload, qos: m.qos, retain: m.retain, expiresAt: m.expiresAt, props, plain: share === 0, shares: share === 0 ? null : [share], publisherHash, origin };
    if (node) this.routed.set(handle, out);
    this.outputs.push(out);
    this.transfer.push(buf);
    if (m.qos > 0 && node) {
      this.ticket ??= newTicket(++this.ticketSeq);
      this.guarded = m;
    }
    this.scheduleFlush();
  }

  /** AckGates.take: the cluster's acceptance of `m`, when `m` (just routed) went to another node
   * at QoS 1/2. */
  take(m: Message): Promise<void> | undefined {
    if (this.guarded !== m) return undefined;
    this.guarded = null;
    return this.ticket!.promise;
  }

  /** The main thread's answer for a ticket: the cluster accepted its messages, or could not. */
  acked(id: number, ok: boolean, reason = 'another node of the cluster did not accept the message'): void {
    const t = this.waiting.get(id);
    if (!t) return;
    this.waiting.delete(id);
    clearTimeout(t.timer);
    if (ok) t.resolve();
    else t.reject(new Error(reason));
  }

  /** Messages not answered: the cluster went away (their publishers are not acknowledged). */
  failWaiting(reason: string): void {
    for (const id of [...this.waiting.keys()]) this.acked(id, false, reason);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    this.guarded = null;
    this.routing = null;
    this.routed.clear();
    if (this.outputs.length === 0 && this.viewerSkipped.size === 0) return;
    let skipped: ViewerSkips | null = null;
    if (this.viewerSkipped.size > 0) {
      skipped = [...this.viewerSkipped];
      this.viewerSkipped.clear();
    }
    const items = this.outputs;
    const transfer = this.transfer;
    const ticket = this.ticket;
    this.outputs = [];
    this.transfer = [];
    this.ticket = null;
    if (ticket !== null) {
      this.waiting.set(ticket.id, ticket);
      ticket.timer = setTimeout(() => this.acked(ticket.id, false, 'the cluster did not answer in time'), ACK_TIMEOUT_MS).unref();
    }
    this.host.postOutputs(items, transfer, ticket?.id ?? 0, skipped);
  };
}

function newTicket(id: number): Ticket {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Messages nobody acknowledges (wills, the admin API's) hold tickets too: never unhandled.
  promise.catch(() => undefined);
  return { id, promise, resolve, reject };
}
