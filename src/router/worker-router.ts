// WorkerRouter: routing as seen from one thread. It matches a message in the shared native
// routing core, delivers to the sessions this thread owns, and collects deliveries for other
// workers into one batch per worker per tick. It also owns the retained-message side of a
// publish and the retained messages sent on subscribe. One per thread; state is that thread's.
// It sees the sessions only through RouterHost, by handle: the session layer is its caller.
import { Router, RetainedStore, DELIVERY_RAP, DELIVERY_SHARED, NO_PUBLISHER, TAP_WORKER, TopicError, native } from '../native/index.ts';
import { toRecord, records, retainedExpiresAt, setRecordExpiresAt, type Message } from '../broker/message.ts';
import { DeliveryBatch, readBatch } from './batch.ts';
import { RetainedChanges, type PostRetained } from './retained-changes.ts';
import type { Delivery, NodeScope, Routed } from './delivery.ts';

export type { Delivery, NodeScope, Routed } from './delivery.ts';

/** What the router needs from the thread that owns the sessions (the worker wires it). */
export interface RouterHost {
  readonly workerId: number;
  /** Delivers to the session `handle` if this thread owns it (connected or not); false when it
   * owns none by that handle. `frameCache` holds this message's frames by variant. */
  /** `from`: the worker that routed the delivery (this one, or the sender of a batch). */
  deliverLocal(handle: number, d: Delivery, frameCache: Map<string, Buffer>, from: number): boolean;
  /** Whether the session `handle` of this thread keeps its messages in the store; undefined when
   * this thread does not own it. */
  storedLocally(handle: number): boolean | undefined;
  /** Whether the publishing session may have a No Local subscription (its matches are then its
   * own and not remembered). True for sessions this thread does not own. */
  mayHaveNoLocal(handle: number): boolean;
  /** A session handle this thread no longer owns: where it went, if known. */
  movedTo(handle: number): number | undefined;
  /** A session handle this thread gave up to another node of a cluster lately: that node's
   * forward handle (a tap), if known. */
  forwardOf?(handle: number): number | undefined;
  sendBatch(worker: number, buffer: ArrayBuffer, length: number): void;
  dropped(reason: 'noSession'): void;
  /** The rule `rule` (subscribed under TAP_WORKER) matched `m`, published by the session
   * `publisher` of this thread (NO_PUBLISHER: the broker). Called while routing: it must not
   * route (a republish waits for the end of the routing). `share` is not 0 when `rule` was
   * picked as the member of a shared group (a cluster's node handle): the subscription id of
   * that membership, which names the group. A handle picked for several groups and matching
   * plain filters too is told once for each, one after the other for the same routing.
   * `publisherHash` is the publisher's client-id hash the routing picked members with. */
  tapMatched(tap: number, m: Message, publisher: number, share: number, publisherHash: number): void;
  /** Posts a tick's retained changes to the main thread (the cluster sends them to the other
   * nodes); absent where there is no main thread to post to. */
  postRetained?: PostRetained;
}

/** The retained-message limits (config `limits.maxRetainedMessages`, `maxRetainedPayloadSize`,
 * `retainedDefaultExpiry`, the last in ms); 0: none. */
export interface RetainedLimits {
  maxCount: number;
  maxPayload: number;
  defaultExpiryMs: number;
}

/** Why a retained PUBLISH is refused: past the count limit, or its payload past the size limit. */
export type RetainedRefusal = 'count' | 'size';

/** RetainedStore.admit's answers (1: a place is held; 0, free, needs nothing). */
const ADMIT_RESERVED = 1;
const ADMIT_REFUSED = 2;

/** Topics whose deliveries this thread remembers (see `match`); the map starts over when full. */
const MATCH_CACHE_MAX = 10_000;

export class WorkerRouter {
  private out = new Uint32Array(4096);
  /** Where the words of the last `match` are: `out`, or a remembered result. */
  private view: Uint32Array = this.out;
  /**
   * This thread's memory of match results by topic, in front of the native core: a native call
   * costs ~1 µs, mostly N-API argument handling, against ~50 ns for a Map lookup. Valid for one
   * generation of the subscription set: every subscribe, unsubscribe and session removal on any
   * worker bumps the shared generation, and the memory is dropped when it moved. Results with a
   * shared subscription (a member is picked per message) are never remembered, nor results for a
   * publisher that may have a No Local subscription (they depend on the publisher).
   */
  private readonly matchCache = new Map<string, Uint32Array>();
  private matchCacheGen = -1;
  private readonly generation: Int32Array;
  /** Routes to other workers whose delivery waits for a store write, with the order they were
   * made in; and what waits for those made before it (afterDeferred). */
  private readonly deferred = new Map<Routed[], number>();
  private deferredSeq = 0;
  private deferredWaiters: { mark: number; done: () => void }[] = [];
  /** The routing clock every worker shares: each routed message takes a tick (Message.seq), so
   * any two routings, and a routing and a session's attach, are ordered process-wide. */
  private readonly clock: Int32Array;
  private readonly batches = new Map<number, DeliveryBatch>();
  private flushScheduled = false;
  private readonly frameCache = new Map<string, Buffer>();
  /** With a cluster: the handle messages from other nodes are published with (their retained
   * side is the cluster's to apply, newest wins), and where this thread's retained changes go. */
  private clusterInbound = -1;
  private retainedChanges: RetainedChanges | null = null;
  /** Shared groups another node picked this one for, for a message of it, that had no member
   * here by the time it came (a race with the last member leaving): the message went to no one
   * of that group. */
  sharesMissed = 0;
  /** The sessions the last routing limited to some (NodeScope.only) reached. */
  readonly onlyReached = new Set<number>();
  private retainedLimits: RetainedLimits = { maxCount: 0, maxPayload: 0, defaultExpiryMs: 0 };
  /** Admitted messages for which the retained store holds a place (new topics under the count
   * limit) until they are retained (`retain`) or given up (`releaseRetained`). */
  private readonly retainedPlaces = new WeakSet<Message>();
  /** Whether a retained PUBLISH must pass `retainRefusal` (a count or size limit is set). */
  retainLimited = false;

  constructor(
    private readonly host: RouterHost,
    readonly router: InstanceType<typeof Router>,
    readonly retained: InstanceType<typeof RetainedStore>,
    /** Shared by every worker: Int32 0 is the subscription set's generation, Int32 1 the
     * routing clock (a 4-byte buffer has no clock: one is made for this router alone). */
    shared: SharedArrayBuffer = new SharedArrayBuffer(8),
  ) {
    this.generation = new Int32Array(shared, 0, 1);
    this.clock = shared.byteLength >= 8 ? new Int32Array(shared, 4, 1) : new Int32Array(new SharedArrayBuffer(4));
  }

  /** A tick of the shared routing clock (wraps at 2^31; compare with `ticksBefore`). */
  tick(): number {
    return Atomics.add(this.clock, 0, 1);
  }

  /** Routes a message: retained store, then every matching session. Returns how many sessions it
   * went to. `publisher` is the publishing session's handle (No Local), `publisherHash` the hash
   * of its client id (shared-subscription strategy). */
  publish(m: Message, publisher: number, publisherHash: number, scope?: NodeScope): number {
    m.seq = this.tick();
    if (m.retain) this.retain(m, publisher);
    return this.deliverMatched(m, this.match(m, publisher, publisherHash, scope), publisher, publisherHash);
  }

  /**
   * A QoS 1/2 publish on a broker with a store: matches once; when no QoS 1/2 delivery goes to a
   * session whose messages are kept (`kept(handle)`), delivers at once and answers the count, as
   * `publish`; otherwise delivers nothing and answers the deliveries for `deliverRouted`, after
   * the message is stored. (Most QoS 1 traffic goes to clean sessions and so skips the store.)
   */
  publishOrRoute(m: Message, publisher: number, publisherHash: number, kept: (handle: number) => boolean): number | Routed[] {
    m.seq = this.tick();
    const words = this.match(m, publisher, publisherHash);
    const out = this.view;
    for (let i = 0; i < words; i += 3 + out[i + 2]) {
      if (((out[i + 1] >>> 16) & 3) === 0) continue;
      // A session of this thread says so itself (its `stored` mirrors the registry's persistent
      // flag, set together in Persistence.sessionConnected); others are asked of the registry.
      if (this.host.storedLocally(out[i]) ?? kept(out[i])) return this.routedFrom(m, words, publisher, publisherHash);
    }
    if (m.retain) this.retain(m, publisher);
    return this.deliverMatched(m, words, publisher, publisherHash);
  }

  /** Delivers the `words` of deliveries `match` left in `this.view`; answers how many sessions
   * it went to (rules are not sessions: they are told, not counted). */
  private deliverMatched(m: Message, words: number, publisher: number, publisherHash: number): number {
    const out = this.view;
    let count = 0;
    this.frameCache.clear();
    for (let i = 0; i < words; count++) {
      const session = out[i];
      const word = out[i + 1];
      const worker = word & 0xffff;
      if (worker === TAP_WORKER) {
        this.host.tapMatched(session, m, publisher, shareOf(out, i), publisherHash);
        i += 3 + out[i + 2];
        count--;
        continue;
      }
      const subQos = (word >>> 16) & 3;
      const n = out[i + 2];
      const ids = n ? Array.from(out.subarray(i + 3, i + 3 + n)) : null;
      i += 3 + n;
      // [MQTT-3.8.4-8] the lower of the message's and the subscription's QoS;
      // [MQTT-3.3.1-12/13] RETAIN is kept only with Retain As Published.
      const qos = (m.qos < subQos ? m.qos : subQos) as 0 | 1 | 2;
      const retain = (word & DELIVERY_RAP) !== 0 && m.retain;
      if (worker === this.host.workerId) {
        this.deliver(session, { message: m, qos, retain, subscriptionIds: ids }, this.host.workerId);
      } else {
        this.batchFor(worker).add(m, session, qos, retain, ids);
      }
    }
    return count;
  }

  /** Matches; the deliveries are in `this.view` (returns the words written). */
  private match(m: Message, publisher: number, publisherHash: number, scope?: NodeScope): number {
    if (scope !== undefined) return this.matchScoped(m, publisher, publisherHash, scope);
    const gen = Atomics.load(this.generation, 0);
    if (gen !== this.matchCacheGen) {
      this.matchCache.clear();
      this.matchCacheGen = gen;
    }
    const cacheable = publisher === NO_PUBLISHER || !this.host.mayHaveNoLocal(publisher);
    if (cacheable) {
      const hit = this.matchCache.get(m.topic);
      if (hit !== undefined) {
        this.view = hit;
        return hit.length;
      }
    }
    let words = this.router.matchBytes(m.topicBytes, 0, m.topicBytes.length, publisher, publisherHash, this.out);
    if (words < 0) {
      this.out = new Uint32Array(-words * 2);
      words = this.router.matchBytes(m.topicBytes, 0, m.topicBytes.length, publisher, publisherHash, this.out);
    }
    this.view = this.out;
    // Remembered only if the subscription set did not change while matching.
    if (cacheable && Atomics.load(this.generation, 0) === gen && !hasShared(this.out, words)) {
      if (this.matchCache.size >= MATCH_CACHE_MAX) this.matchCache.clear();
      this.matchCache.set(m.topic, this.out.slice(0, words));
    }
    return words;
  }

  /** A message from another node: only what its scope names (never remembered: a shared group's
   * member is picked per message, and a plain-only match is one message in many). The named
   * groups that got no delivery are counted in `sharesMissed`. */
  private matchScoped(m: Message, publisher: number, publisherHash: number, scope: NodeScope): number {
    const shares = scope.shares as string[];
    let words = this.router.matchScoped(m.topicBytes, 0, m.topicBytes.length, publisher, publisherHash, scope.plain, shares, TAP_WORKER, this.out);
    if (words < 0) {
      this.out = new Uint32Array(-words * 2);
      words = this.router.matchScoped(m.topicBytes, 0, m.topicBytes.length, publisher, publisherHash, scope.plain, shares, TAP_WORKER, this.out);
    }
    this.view = this.out;
    if (scope.only) words = this.keepOnly(words, scope.only);
    if (shares.length > 0) {
      let reached = 0;
      for (let i = 0; i < words; i += 3 + this.out[i + 2]) if (this.out[i + 1] & DELIVERY_SHARED) reached++;
      this.sharesMissed += shares.length - reached;
    }
    return words;
  }

  /** Keeps, of the `words` in `this.out`, the deliveries to the sessions `only` names (never a
   * tap: such a message was routed to the taps where it was first routed); answers the words
   * left. */
  private keepOnly(words: number, only: ReadonlySet<number>): number {
    const out = this.out;
    this.onlyReached.clear();
    let w = 0;
    for (let i = 0; i < words;) {
      const n = 3 + out[i + 2];
      if ((out[i + 1] & 0xffff) !== TAP_WORKER && only.has(out[i])) {
        this.onlyReached.add(out[i]);
        if (w !== i) out.copyWithin(w, i, i + n);
        w += n;
      }
      i += n;
    }
    return w;
  }

  /** Subscribes `filter` for the tap `handle` (a routing-core entry with no session: its matches
   * go to the tapMatched of the worker that routes them). */
  tap(handle: number, filter: string): void {
    try {
      native(() => this.router.subscribe(filter, handle, TAP_WORKER, 0, null));
    } finally {
      this.changed();
    }
  }

  /** The subscription set changed (here): every worker's remembered matches are stale. */
  private changed(): void {
    Atomics.add(this.generation, 0, 1);
  }

  /**
   * The first half of a publish that must be stored before it is delivered: the deliveries the
   * message will have, without delivering it. `deliverRouted` does the rest.
   */
  route(m: Message, publisher: number, publisherHash: number, scope?: NodeScope): Routed[] {
    m.seq = this.tick();
    return this.routedFrom(m, this.match(m, publisher, publisherHash, scope), publisher, publisherHash);
  }

  /** The deliveries of `words` for `deliverRouted`; rules see the message now, as it is routed. */
  private routedFrom(m: Message, words: number, publisher: number, publisherHash: number): Routed[] {
    const out = this.view;
    const routed: Routed[] = [];
    let elsewhere = false;
    for (let i = 0; i < words;) {
      const word = out[i + 1];
      const n = out[i + 2];
      if ((word & 0xffff) === TAP_WORKER) {
        this.host.tapMatched(out[i], m, publisher, shareOf(out, i), publisherHash);
        i += 3 + n;
        continue;
      }
      const subQos = (word >>> 16) & 3;
      routed.push({
        handle: out[i],
        worker: word & 0xffff,
        qos: (m.qos < subQos ? m.qos : subQos) as 0 | 1 | 2,
        retain: (word & DELIVERY_RAP) !== 0 && m.retain,
        subscriptionIds: n ? Array.from(out.subarray(i + 3, i + 3 + n)) : null,
      });
      if ((word & 0xffff) !== this.host.workerId) elsewhere = true;
      i += 3 + n;
    }
    if (elsewhere) this.deferred.set(routed, ++this.deferredSeq);
    return routed;
  }

  /** A routed message that will not be delivered (its store write failed). */
  discardRouted(routed: readonly Routed[]): void {
    this.settleDeferred(routed);
  }

  /**
   * Calls `done` once every message routed here before now to another worker, whose delivery
   * waits for a store write, is delivered (its batch then leaves at the next flush) or discarded.
   * A session moving between workers waits for this (see src/engine/session/fences.ts).
   */
  afterDeferred(done: () => void): void {
    if (this.deferred.size === 0) {
      done();
      return;
    }
    this.deferredWaiters.push({ mark: this.deferredSeq, done });
  }

  private settleDeferred(routed: readonly Routed[]): void {
    if (!this.deferred.delete(routed as Routed[]) || this.deferredWaiters.length === 0) return;
    // The map keeps the order routes were made in: its first entry is the oldest still waiting.
    const oldest = this.deferred.values().next();
    const min = oldest.done ? Infinity : oldest.value;
    const ready = this.deferredWaiters.filter((w) => w.mark < min);
    if (ready.length === 0) return;
    this.deferredWaiters = this.deferredWaiters.filter((w) => w.mark >= min);
    for (const w of ready) w.done();
  }

  /** The second half: retained update and delivery of a routed message. */
  deliverRouted(m: Message, routed: readonly Routed[], publisher = NO_PUBLISHER): void {
    if (m.retain) this.retain(m, publisher);
    this.frameCache.clear();
    for (const r of routed) {
      if (r.worker === this.host.workerId) this.deliver(r.handle, { message: m, qos: r.qos, retain: r.retain, subscriptionIds: r.subscriptionIds }, this.host.workerId);
      else this.batchFor(r.worker).add(m, r.handle, r.qos, r.retain, r.subscriptionIds);
    }
    this.settleDeferred(routed);
  }

  private deliver(handle: number, d: Delivery, from: number): void {
    if (this.host.deliverLocal(handle, d, this.frameCache, from)) return;
    const to = this.host.movedTo(handle);
    if (to !== undefined && to !== this.host.workerId) {
      this.batchFor(to).add(d.message, handle, d.qos, d.retain, d.subscriptionIds);
      return;
    }
    // Routed before the session left for another node, arriving after: it follows the session.
    const forward = d.qos > 0 ? this.host.forwardOf?.(handle) : undefined;
    if (forward !== undefined) this.host.tapMatched(forward, d.message, NO_PUBLISHER, 0, 0);
    else this.host.dropped('noSession');
  }

  /** Deliveries worker `from` batched for this one. */
  receiveBatch(buffer: ArrayBuffer, length: number, from: number): void {
    this.frameCache.clear();
    let last: Message | null = null;
    readBatch(buffer, length, (message, session, qos, retain, ids) => {
      if (message !== last) {
        this.frameCache.clear();
        last = message;
      }
      this.deliver(session, { message, qos, retain, subscriptionIds: ids }, from);
    });
  }

  subscribe(filter: string, session: number, options: number, subscriptionId: number): boolean {
    try {
      return native(() => this.router.subscribe(filter, session, this.host.workerId, options, subscriptionId));
    } finally {
      this.changed();
    }
  }

  unsubscribe(filter: string, session: number): boolean {
    const existed = this.router.unsubscribe(filter, session);
    this.changed();
    return existed;
  }

  removeSession(session: number): number {
    const removed = this.router.removeSession(session);
    this.changed();
    return removed;
  }

  /** [MQTT-3.3.1-5 .. MQTT-3.3.1-7] store, replace, or (empty payload) clear the retained message.
   * With a cluster, the change is also handed to it; a message from another node is not retained
   * here (the cluster applies its retained side, newest wins, and never sends it on). */
  retain(m: Message, publisher = NO_PUBLISHER): void {
    if (publisher === this.clusterInbound) return;
    if (m.payload.length === 0) {
      this.retained.remove(m.topic);
      this.retainedChanges?.add(m.topic, null, m.receivedAt);
    } else {
      const record = toRecord(m);
      const defaultExpiry = this.retainedLimits.defaultExpiryMs;
      // Only the retained copy gets the default expiry (the one delivered now is as published).
      if (m.expiresAt === 0 && defaultExpiry !== 0) setRecordExpiresAt(record, 0, retainedExpiresAt(m, defaultExpiry));
      if (this.retainLimited && this.retainedPlaces.delete(m)) this.retained.setReserved(m.topic, record);
      else this.retained.set(m.topic, record);
      this.retainedChanges?.add(m.topic, record, m.receivedAt);
    }
  }

  setRetainedLimits(limits: RetainedLimits): void {
    this.retainedLimits = { ...limits };
    this.retainLimited = limits.maxCount !== 0 || limits.maxPayload !== 0;
  }

  /**
   * Whether a retained message may be taken (null) or why not, checked when its PUBLISH is
   * accepted, before it is routed. A clear (empty payload) never is refused, nor a replace by the
   * count. A new topic under the count gets a place held in the shared store until `retain`
   * stores it (with a store, once written) or `releaseRetained` gives it up: admissions on every
   * worker, and those waiting for their store write, count together (docs/features/
   * retained-limits.md).
   */
  retainRefusal(m: Message): RetainedRefusal | null {
    if (m.payload.length === 0) return null;
    const l = this.retainedLimits;
    if (l.maxPayload !== 0 && m.payload.length > l.maxPayload) return 'size';
    if (l.maxCount !== 0) {
      const admission = this.retained.admit(m.topic, l.maxCount);
      if (admission === ADMIT_REFUSED) return 'count';
      if (admission === ADMIT_RESERVED) this.retainedPlaces.add(m);
    }
    return null;
  }

  /** An admitted message that will not be retained after all (its store write failed): the
   * place held for it is given back. */
  releaseRetained(m: Message): void {
    if (this.retainedPlaces.delete(m)) this.retained.release();
  }

  /** The cluster is on: `inbound` is the handle messages from other nodes are published with. */
  setCluster(inbound: number): void {
    this.clusterInbound = inbound;
    if (this.retainedChanges === null && this.host.postRetained) this.retainedChanges = new RetainedChanges(this.host.postRetained);
  }

  /** Whether `publisher` is the cluster's inbound handle (a message another node sent). */
  fromCluster(publisher: number): boolean {
    return publisher === this.clusterInbound;
  }

  /** Sends the retained messages a new subscription of the session `handle` (of this thread)
   * matches, RETAIN set [MQTT-3.3.1-9]. */
  sendRetained(handle: number, filter: string, subQos: 0 | 1 | 2, subscriptionId: number): void {
    let buf: Buffer;
    try {
      buf = native(() => this.retained.match(filter));
    } catch (err) {
      if (err instanceof TopicError) return;
      throw err;
    }
    const ids = subscriptionId ? [subscriptionId] : null;
    for (const m of records(buf)) {
      this.frameCache.clear(); // frames are cached per message
      const qos = (m.qos < subQos ? m.qos : subQos) as 0 | 1 | 2;
      this.host.deliverLocal(handle, { message: m, qos, retain: true, subscriptionIds: ids }, this.frameCache, this.host.workerId);
    }
  }

  private batchFor(worker: number): DeliveryBatch {
    let b = this.batches.get(worker);
    if (!b) this.batches.set(worker, (b = new DeliveryBatch()));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    return b;
  }

  /** Once per tick (or at once, before a control message that must follow them): each worker's
   * deliveries leave in one transferred buffer. */
  readonly flush = (): void => {
    this.flushScheduled = false;
    for (const [worker, batch] of this.batches) {
      if (batch.length === 0) continue;
      const { buffer, length } = batch.take();
      this.host.sendBatch(worker, buffer, length);
    }
  };
}

/** The share a TAP_WORKER delivery at `i` was picked for: its subscription id (a cluster's node
 * handle is subscribed to each group with the group's number as id); 0 for a plain match. */
function shareOf(out: Uint32Array, i: number): number {
  return (out[i + 1] & DELIVERY_SHARED) !== 0 && out[i + 2] > 0 ? out[i + 3] : 0;
}

function hasShared(out: Uint32Array, words: number): boolean {
  for (let i = 0; i < words; i += 3 + out[i + 2]) if (out[i + 1] & DELIVERY_SHARED) return true;
  return false;
}
