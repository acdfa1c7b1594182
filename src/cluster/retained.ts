// ClusterRetained: retained messages visible from every node (main thread; a part of the
// ClusterLink). It owns the versions of this node's retained messages as the cluster sees them,
// the tombstones of cleared ones, and the local changes waiting to be sent.
// - Out: the workers hand every retained set and clear to the main thread (one post per worker per
//   tick, RetainedChanges); the changes of a 50 ms window, one per topic (the last), go to every
//   other node in one NATS message on `spindle.ret.<node>` (cut under max_payload).
// - Versions: ms << 22 | a 22-bit tag of the node's name, kept in the record's store-id field of
//   the shared RetainedStore (after a restart, a record's store id from the Store stands for its
//   version: the time it was written there). A window's changes take one version, later than the
//   clock and than every version this node has seen (a hybrid logical clock): a change made after
//   seeing another is newer than it, whatever the clocks say.
// - In: an entry newer than what this node holds for the topic (its record or its tombstone)
//   replaces it in the RetainedStore and the Store; an older or equal one is dropped. Messages from
//   other nodes are never sent on (the worker does not retain what the cluster's inbound handle
//   publishes: this part applies it).
// - Catch-up: when a node comes up (or this one joins), each side asks the other for its whole
//   retained set (`spindle.ret.sync.<node>`, a request answered with frames to the asker's inbox,
//   the last one flagged) and merges it, newest wins. Tombstones are kept TOMBSTONE_MS (at most
//   MAX_TOMBSTONES) so that a clear made while a node was away is not undone by the merge.
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';

import { readRecord, recordReceivedAt, toRecord, type Message } from '../broker/message.ts';
import type { StoredMessage } from '../store/types.ts';
import { MAIN_THREAD, MessageIds } from '../store/message-id.ts';
import { token, untoken } from './names.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';
import { decodeRetained, encodeRetained, type RetainedEntry } from './retained-frames.ts';

const FLUSH_MS = 50;
/** A catch-up reply whose next frame does not come within this is given up (and retried). */
const SYNC_TIMEOUT_MS = 10_000;
const SYNC_ATTEMPTS = 3;
const SYNC_RETRY_MS = 2000;
/** How long a clear is remembered (a node away longer may bring the cleared message back). */
export const TOMBSTONE_MS = 24 * 3600_000;
/** Tombstones kept at most; past it the oldest go (counted in tombstonesDropped). */
export const MAX_TOMBSTONES = 100_000;
/** Records read from the RetainedStore per call while answering a catch-up. */
const LIST_PAGE = 1000;

/** One retained set or clear a worker made (router/retained-changes.ts, structurally). */
export interface LocalRetainedChange {
  topic: string;
  record: Uint8Array | null;
  at: number;
}

/** What this part needs of the supervisor. */
export interface RetainedHost {
  /** The process-wide RetainedStore. */
  readonly retained: {
    get(topic: string): Buffer | null;
    set(topic: string, record: Uint8Array): boolean;
    remove(topic: string): boolean;
    list(offset: number, limit: number): Buffer;
  };
  /** The main thread's Store handle (null with MEMORY). */
  readonly openedStore: { setRetained(topic: string, message: StoredMessage): Promise<void>; deleteRetained(topic: string): Promise<void> } | null;
  onRetainedChanges(fn: (items: LocalRetainedChange[]) => void): void;
  /** This node's slot in a shared store (message ids), known once the store is open. */
  readonly nodeSlot: number;
}

export interface RetainedCounters {
  /** Local sets and clears sent to the other nodes (after the per-window merge per topic). */
  sent: number;
  sentFrames: number;
  /** Entries received from other nodes (live and catch-up). */
  received: number;
  /** Received entries applied here (newer than what this node held). */
  applied: number;
  /** Received entries dropped: this node held a newer (or the same) version. */
  stale: number;
  /** Received entries dropped: already expired (MQTT 5 Message Expiry Interval). */
  expired: number;
  /** Entries larger than a NATS message may be: not sent. */
  tooLarge: number;
  badFrames: number;
  /** Catch-ups completed (this node merged another's retained set) and failed (timed out). */
  syncs: number;
  syncFailures: number;
  /** Catch-up requests this node answered. */
  syncsServed: number;
  /** Tombstones dropped before TOMBSTONE_MS because MAX_TOMBSTONES was reached. */
  tombstonesDropped: number;
  /** Writes of received entries to this node's Store that failed. */
  storeFailures: number;
  /** Tombstones held now. */
  tombstones: number;
}

export class ClusterRetained implements ClusterPart {
  readonly name = 'retained';
  readonly counters: RetainedCounters = { sent: 0, sentFrames: 0, received: 0, applied: 0, stale: 0, expired: 0, tooLarge: 0, badFrames: 0, syncs: 0, syncFailures: 0, syncsServed: 0, tombstonesDropped: 0, storeFailures: 0, tombstones: 0 };
  private ctx: ClusterPartContext | null = null;
  private readonly subs: Subscription[] = [];
  /** Local changes of the current window, the last per topic (null: cleared). */
  private pending = new Map<string, Uint8Array | null>();
  private flushTimer: NodeJS.Timeout | null = null;
  /** Cleared topics: the clear's version and until when it is kept; oldest first. */
  private readonly tombstones = new Map<string, { version: bigint; until: number }>();
  /** The latest version time (ms) issued or seen: the next local one is later. */
  private clock = 0;
  private readonly tag: bigint;
  private readonly syncing = new Set<string>();
  /** Catch-up replies being waited for (given up on close). */
  private readonly waiting = new Set<(ok: boolean) => void>();
  private closed = false;
  private ids: MessageIds | null = null;

  constructor(private readonly host: RetainedHost, nodeName: string) {
    this.tag = BigInt(nodeTag(nodeName));
    host.onRetainedChanges((items) => this.onLocal(items));
  }

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    const nc = ctx.nc;
    this.subs.push(
      nc.subscribe('spindle.ret.*', { callback: (err, m) => {
        if (!err) this.onFrame(m);
      } }),
      nc.subscribe(`spindle.ret.sync.${token(ctx.nodeName)}`, { callback: (err, m) => {
        if (!err) this.onSyncRequest(m);
      } }),
    );
    if (this.pending.size > 0) this.scheduleFlush();
    // This node joins: catch up from every node already running (the others ask it back).
    for (const peer of ctx.runningPeers()) void this.catchUp(peer);
  }

  peerUp(node: string): void {
    if (this.ctx) void this.catchUp(node);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.ctx && this.pending.size > 0) this.flush();
    for (const done of [...this.waiting]) done(false);
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
  }

  /** Retained sets and clears the workers made: sent with the next window. */
  private onLocal(items: LocalRetainedChange[]): void {
    for (const item of items) {
      this.pending.delete(item.topic); // the window keeps the order of its last changes
      this.pending.set(item.topic, item.record);
    }
    if (this.ctx) this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== null || this.closed) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.flush();
    }, FLUSH_MS);
  }

  /**
   * The window's local changes get one version, later than any seen, and go to every node. The
   * local RetainedStore is written again with that version, so it holds exactly what was sent
   * (a change from another node applied meanwhile loses to the local one here and everywhere).
   */
  private flush(): void {
    const nc = this.ctx?.nc;
    if (!nc || this.pending.size === 0) return;
    const at = Math.max(Date.now(), this.clock + 1);
    this.clock = at;
    const version = (BigInt(at) << 22n) | this.tag;
    const entries: RetainedEntry[] = [];
    const now = Date.now();
    for (const [topic, record] of this.pending) {
      if (record === null) {
        this.host.retained.remove(topic);
        this.tombstone(topic, version, now);
        entries.push({ topic, version, message: null });
        continue;
      }
      const buf = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
      const m = readRecord(buf, 0, recordReceivedAt(buf, 0)).message;
      m.storeId = version;
      this.host.retained.set(topic, toRecord(m));
      this.tombstones.delete(topic);
      entries.push({ topic, version, message: { qos: m.qos, expiresAt: m.expiresAt, props: m.props, payload: m.payload } });
    }
    this.pending = new Map();
    this.counters.tombstones = this.tombstones.size;
    const { frames, tooLarge } = encodeRetained(entries, maxFrame(nc));
    const subject = `spindle.ret.${token(this.ctx!.nodeName)}`;
    for (const f of frames) nc.publish(subject, f);
    this.counters.sentFrames += frames.length;
    this.counters.sent += entries.length - tooLarge;
    this.tooLarge(tooLarge);
  }

  private onFrame(m: Msg): void {
    const node = untoken(m.subject.slice('spindle.ret.'.length));
    if (node === this.ctx?.nodeName) return;
    this.merge(m.data, node);
  }

  /** Applies a frame's entries, newest wins; answers whether it was the last of a catch-up. */
  private merge(data: Uint8Array, node: string): boolean {
    let frame: { last: boolean; entries: RetainedEntry[] };
    try {
      frame = decodeRetained(data);
    } catch (err) {
      this.counters.badFrames++;
      this.ctx?.log.warn('cluster: a retained frame that does not parse was dropped', { node, err });
      return false;
    }
    const now = Date.now();
    for (const e of frame.entries) this.apply(e, now);
    this.counters.tombstones = this.tombstones.size;
    return frame.last;
  }

  private apply(e: RetainedEntry, now: number): void {
    this.counters.received++;
    if (!validTopic(e.topic)) {
      this.counters.badFrames++;
      return;
    }
    const at = Number(e.version >> 22n);
    if (at > this.clock) this.clock = at;
    // A local change not yet sent will be sent with a later version: it wins here and there.
    if (this.pending.has(e.topic) || e.version <= this.versionOf(e.topic)) {
      this.counters.stale++;
      return;
    }
    const store = this.host.openedStore;
    if (e.message === null) {
      this.host.retained.remove(e.topic);
      this.tombstone(e.topic, e.version, now);
      this.counters.applied++;
      if (store) store.deleteRetained(e.topic).catch((err: unknown) => this.storeFailed(e.topic, err));
      return;
    }
    const msg = e.message;
    if (msg.expiresAt !== 0 && msg.expiresAt <= now) {
      this.counters.expired++;
      return;
    }
    const payload = Buffer.from(msg.payload);
    const props = msg.props ? Buffer.from(msg.props) : null;
    const topicBytes = Buffer.from(e.topic, 'utf8');
    const m: Message = { topic: e.topic, topicBytes, payload, qos: msg.qos, retain: true, props, expiresAt: msg.expiresAt, receivedAt: at, storeId: e.version, seq: undefined };
    this.host.retained.set(e.topic, toRecord(m));
    this.tombstones.delete(e.topic);
    this.counters.applied++;
    // A store id of this node's own (versions are shared by a window's topics, ids are unique); a
    // restart reads the time of this write back as the version, a little later than the origin's.
    if (store) store.setRetained(e.topic, { id: this.nextStoreId(), topic: e.topic, payload, qos: msg.qos, retain: true, properties: props, expiresAt: msg.expiresAt }).catch((err: unknown) => this.storeFailed(e.topic, err));
  }

  /** A store-wide unique id as the workers make them (store/message-id.ts), as the main thread. */
  private nextStoreId(): bigint {
    this.ids ??= new MessageIds(this.host.nodeSlot, MAIN_THREAD);
    return this.ids.next();
  }

  private storeFailed(topic: string, err: unknown): void {
    this.counters.storeFailures++;
    this.ctx?.log.warn('cluster: a retained message from another node was not written to the store', { topic, err });
  }

  /** What this node holds for a topic: its record's version or its tombstone's (0: nothing). */
  private versionOf(topic: string): bigint {
    const rec = this.host.retained.get(topic);
    const v = rec ? recordVersion(rec) : 0n;
    const t = this.tombstones.get(topic)?.version ?? 0n;
    return v > t ? v : t;
  }

  private tombstone(topic: string, version: bigint, now: number): void {
    this.tombstones.delete(topic);
    this.tombstones.set(topic, { version, until: now + TOMBSTONE_MS });
    // Oldest first: expired ones leave, then the oldest past the bound (counted).
    for (const [t, v] of this.tombstones) {
      if (v.until > now && this.tombstones.size <= MAX_TOMBSTONES) break;
      if (v.until > now) this.counters.tombstonesDropped++;
      this.tombstones.delete(t);
    }
  }

  /** Another node asks for this node's whole retained set: frames to its inbox, the last flagged. */
  private onSyncRequest(m: Msg): void {
    const nc = this.ctx?.nc;
    if (!nc || !m.reply) return;
    // Local changes not yet sent first, so the answer has their versions.
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    this.flush();
    const now = Date.now();
    const entries: RetainedEntry[] = [];
    for (let offset = 0; ; offset += LIST_PAGE) {
      const page = this.host.retained.list(offset, LIST_PAGE);
      if (page.length === 0) break;
      for (let at = 0; at < page.length;) {
        const len = page.readUInt32LE(at);
        const rec = page.subarray(at + 4, at + 4 + len);
        at += 4 + len;
        const r = readRecord(rec, 0).message;
        if (r.topic.startsWith('$SYS') || (r.expiresAt !== 0 && r.expiresAt <= now)) continue;
        entries.push({ topic: r.topic, version: recordVersion(rec), message: { qos: r.qos, expiresAt: r.expiresAt, props: r.props, payload: r.payload } });
      }
    }
    for (const [topic, t] of this.tombstones) if (t.until > now) entries.push({ topic, version: t.version, message: null });
    const { frames, tooLarge } = encodeRetained(entries, maxFrame(nc), true);
    for (const f of frames) nc.publish(m.reply, f);
    this.counters.syncsServed++;
    this.tooLarge(tooLarge);
  }

  /** Asks `node` for its retained set and merges it; retried a few times while it runs. */
  private async catchUp(node: string): Promise<void> {
    if (this.syncing.has(node)) return;
    this.syncing.add(node);
    try {
      for (let attempt = 1; attempt <= SYNC_ATTEMPTS && !this.closed; attempt++) {
        if (await this.requestSync(node)) {
          this.counters.syncs++;
          return;
        }
        if (this.closed) return;
        this.counters.syncFailures++;
        this.ctx?.log.warn('cluster: retained catch-up timed out', { node, attempt });
        await new Promise((r) => setTimeout(r, SYNC_RETRY_MS).unref());
        if (!this.ctx?.runningPeers().includes(node)) return;
      }
    } finally {
      this.syncing.delete(node);
    }
  }

  private requestSync(node: string): Promise<boolean> {
    const nc: NatsConnection | undefined = this.ctx?.nc;
    if (!nc || this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const inbox = createInbox();
      let timer: NodeJS.Timeout;
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.waiting.delete(done);
        sub.unsubscribe();
        resolve(ok);
      };
      this.waiting.add(done);
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => done(false), SYNC_TIMEOUT_MS);
      };
      const sub = nc.subscribe(inbox, { callback: (err, m) => {
        if (err) return done(false);
        // NATS's "no responders" (a status message, no data): the peer is not listening yet
        // (just starting); tried again like a timeout, but at once.
        if (m.data.length === 0) return done(false);
        arm();
        if (this.merge(m.data, node)) done(true);
      } });
      arm();
      nc.publish(`spindle.ret.sync.${token(node)}`, new Uint8Array(0), { reply: inbox });
    });
  }

  private tooLarge(n: number): void {
    if (n === 0) return;
    this.counters.tooLarge += n;
    this.ctx?.log.warn('cluster: retained messages larger than NATS max_payload were not sent to the other nodes', { count: n });
  }
}

/** A record's version: its store-id field (ms << 22 | ...) or, without one, its receipt second. */
export function recordVersion(rec: Buffer): bigint {
  const id = rec.readBigUInt64LE(24);
  return id !== 0n ? id : BigInt(rec.readUInt32LE(12) * 1000) << 22n;
}

/** 22 bits of a node's name (FNV-1a): the low bits of its versions, the tie-break between nodes. */
export function nodeTag(name: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(name, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h & 0x3fffff;
}

function validTopic(topic: string): boolean {
  return topic.length > 0 && !topic.startsWith('$SYS') && !/[+#\u0000]/.test(topic);
}

function maxFrame(nc: NatsConnection): number {
  return (nc.info?.max_payload ?? 1_048_576) - 1024;
}
