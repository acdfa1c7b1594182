// Per-endpoint counters every worker thread shares, so an endpoint's limits hold across all of
// them: connections and sessions in use, and accepts in the current second. An Int32Array over a
// SharedArrayBuffer the supervisor creates; updated with Atomics only. Slots are never reused
// within a process (a session outliving its endpoint cannot release into another's slot). After
// the counters, the same buffer holds each endpoint's total rate-limit buckets
// (shared-rate-buckets.ts).
import { SharedRateBuckets, sharedRateBucketsBytes } from './shared-rate-buckets.ts';

export const MAX_ENDPOINT_SLOTS = 4096;
const FIELDS = 4;
const CONNECTIONS = 0;
const SESSIONS = 1;
const RATE_SECOND = 2;
const RATE_COUNT = 3;

const COUNTERS_BYTES = MAX_ENDPOINT_SLOTS * FIELDS * 4;

export function createCounters(): SharedArrayBuffer {
  return new SharedArrayBuffer(COUNTERS_BYTES + sharedRateBucketsBytes(MAX_ENDPOINT_SLOTS));
}

export class EndpointCounters {
  private readonly a: Int32Array;
  /** Each endpoint's totalRateLimit buckets, shared by every worker. */
  readonly totals: SharedRateBuckets;

  constructor(buffer: SharedArrayBuffer) {
    this.a = new Int32Array(buffer, 0, COUNTERS_BYTES / 4);
    this.totals = new SharedRateBuckets(buffer, COUNTERS_BYTES, MAX_ENDPOINT_SLOTS);
  }

  /** Takes a connection in `slot` unless `max` are in use. */
  tryConnection(slot: number, max: number | undefined): boolean {
    return this.tryTake(slot * FIELDS + CONNECTIONS, max);
  }

  releaseConnection(slot: number): void {
    Atomics.sub(this.a, slot * FIELDS + CONNECTIONS, 1);
  }

  connections(slot: number): number {
    return Atomics.load(this.a, slot * FIELDS + CONNECTIONS);
  }

  /** Takes a session in `slot` unless `max` exist. */
  trySession(slot: number, max: number | undefined): boolean {
    return this.tryTake(slot * FIELDS + SESSIONS, max);
  }

  releaseSession(slot: number): void {
    Atomics.sub(this.a, slot * FIELDS + SESSIONS, 1);
  }

  sessions(slot: number): number {
    return Atomics.load(this.a, slot * FIELDS + SESSIONS);
  }

  /** Counts an accept against `perSecond` (a fixed one-second window); false when over. */
  allowAccept(slot: number, perSecond: number | undefined, nowMs: number): boolean {
    if (perSecond === undefined) return true;
    const second = Math.floor(nowMs / 1000) | 0;
    const s = slot * FIELDS + RATE_SECOND;
    const seen = Atomics.load(this.a, s);
    // The first accept of a new second restarts the count (whichever thread wins the swap).
    if (seen !== second && Atomics.compareExchange(this.a, s, seen, second) === seen) Atomics.store(this.a, slot * FIELDS + RATE_COUNT, 0);
    return Atomics.add(this.a, slot * FIELDS + RATE_COUNT, 1) < perSecond;
  }

  private tryTake(i: number, max: number | undefined): boolean {
    const now = Atomics.add(this.a, i, 1);
    if (max !== undefined && now >= max) {
      Atomics.sub(this.a, i, 1);
      return false;
    }
    return true;
  }
}
