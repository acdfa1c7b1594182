// SharedRateBuckets: the total inbound rate limit of each listener (an endpoint's
// totalRateLimit) on this node, one pair of token buckets per endpoint slot that every worker
// thread takes from. Over a SharedArrayBuffer the supervisor creates (with the endpoint counters):
// per slot a lock word and three doubles (message and byte milli-tokens, the last refill's time).
// A bucket is read and changed under its slot's lock (Atomics.compareExchange to take it,
// Atomics.store to give it back, which order the plain reads and writes between them): a few
// arithmetic operations, so a worker that finds it taken spins briefly, then waits 50 µs at a time.
//
// Why shared and not a share per worker: clients are spread over the workers by the kernel
// (SO_REUSEPORT), rarely evenly; a fixed share would throttle a listener whose busy clients
// happen to sit on one worker at a fraction of its limit while the others idle.
import { THROTTLE, type RateLimit } from './rate-limit.ts';
import { bucketWait } from './rate-limiter.ts';

/** Bytes of the region: a lock (Int32, padded to 8) and 3 doubles per slot. */
export function sharedRateBucketsBytes(slots: number): number {
  return slots * 8 + slots * 3 * 8;
}

const M = 0;
const B = 1;
const AT = 2;

export class SharedRateBuckets {
  private readonly locks: Int32Array;
  private readonly state: Float64Array;

  /** `byteOffset` must be a multiple of 8. */
  constructor(buffer: SharedArrayBuffer, byteOffset: number, private readonly slots: number) {
    this.locks = new Int32Array(buffer, byteOffset, slots * 2);
    this.state = new Float64Array(buffer, byteOffset + slots * 8, slots * 3);
  }

  private lock(slot: number): void {
    const i = slot * 2;
    for (let spins = 0; Atomics.compareExchange(this.locks, i, 0, 1) !== 0; spins++) {
      if (spins > 64) Atomics.wait(this.locks, i, 1, 0.05);
    }
  }

  private unlock(slot: number): void {
    Atomics.store(this.locks, slot * 2, 0);
  }

  /** Refills slot `s` to `nowMs` (under its lock). */
  private refill(s: number, limit: RateLimit, nowMs: number): void {
    const st = this.state;
    const elapsed = nowMs - st[s + AT];
    if (elapsed <= 0) return;
    st[s + AT] = nowMs;
    const m = limit.messagesPerSecond;
    if (m !== undefined) st[s + M] = Math.min((limit.messagesBurst ?? m) * 1000, st[s + M] + elapsed * m);
    const b = limit.bytesPerSecond;
    if (b !== undefined) st[s + B] = Math.min((limit.bytesBurst ?? b) * 1000, st[s + B] + elapsed * b);
  }

  /** The kind (THROTTLE.totalMessages or .totalBytes) of the last wait admit answered (this
   * thread's). */
  lastKind: number = THROTTLE.none;

  /** Takes one PUBLISH of `bytes` from the listener's total when both buckets hold enough,
   * answering 0; else takes nothing and answers the ms until they will. */
  admit(slot: number, limit: RateLimit, bytes: number, nowMs: number): number {
    if (slot < 0 || slot >= this.slots) return 0;
    const s = slot * 3;
    const st = this.state;
    const bCost = bytes * 1000;
    let wait = 0;
    this.lock(slot);
    this.refill(s, limit, nowMs);
    const m = limit.messagesPerSecond;
    if (m !== undefined) {
      wait = bucketWait(st[s + M], 1000, (limit.messagesBurst ?? m) * 1000, m);
      if (wait > 0) this.lastKind = THROTTLE.totalMessages;
    }
    const b = limit.bytesPerSecond;
    if (b !== undefined) {
      const w = bucketWait(st[s + B], bCost, (limit.bytesBurst ?? b) * 1000, b);
      if (w > wait) {
        wait = w;
        this.lastKind = THROTTLE.totalBytes;
      }
    }
    if (wait === 0) {
      if (m !== undefined) st[s + M] -= 1000;
      if (b !== undefined) st[s + B] -= bCost;
    }
    this.unlock(slot);
    return wait;
  }
}
