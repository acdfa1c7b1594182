// RateLimiter: the token buckets of one connection's inbound rate limit (src/broker/rate-limit.ts),
// owned by the connection (made at CONNECT only when a limit applies, so a connection without one
// pays a single null check per PUBLISH). Milli-tokens in plain numbers (exact integers: a bucket
// refills `rate` milli-tokens per millisecond), no allocation per message. A PUBLISH the buckets
// cannot take now is not taken: admit answers how long to wait, and the connection holds it (and
// what follows) that long, reading paused, then asks again; nothing is lost. A packet larger than
// a burst is taken from a full bucket, which then owes the rest.
import { limits, THROTTLE, type RateLimit } from './rate-limit.ts';

/**
 * Ms until a bucket of `tokens` milli-tokens, refilling `rate` per ms up to `cap`, can pay `cost`
 * (0: now). A cost above the cap is paid from a full bucket, which then owes the rest.
 */
export function bucketWait(tokens: number, cost: number, cap: number, rate: number): number {
  if (tokens >= cost || tokens >= cap) return 0;
  return Math.ceil((Math.min(cost, cap) - tokens) / rate);
}

/** The listener's total buckets, shared by every worker (src/broker/shared-rate-buckets.ts). */
export interface TotalBuckets {
  /** 0: taken; else ms to wait (nothing taken), the kind in `lastKind`. */
  admit(slot: number, limit: RateLimit, bytes: number, nowMs: number): number;
  readonly lastKind: number;
}

/** Where a connection's endpoint keeps its total limit (read per message: it changes at run time). */
export interface RateLimitedEndpoint {
  readonly slot: number;
  readonly config: { readonly totalRateLimit?: RateLimit };
}

export class RateLimiter {
  private mRate = 0;
  private mCap = 0;
  private mTokens = 0;
  private bRate = 0;
  private bCap = 0;
  private bTokens = 0;
  private at: number;
  /** The kind (THROTTLE.*) of the last wait admit answered. */
  lastKind: number = THROTTLE.none;

  constructor(
    limit: RateLimit | null,
    nowMs: number,
    private readonly endpoint: RateLimitedEndpoint,
    private readonly totals: TotalBuckets,
  ) {
    this.at = nowMs;
    this.set(limit);
    this.mTokens = this.mCap;
    this.bTokens = this.bCap;
  }

  /** The per-client limit changes (the endpoint's default changed at run time): what is in the
   * buckets stays, within the new bursts. */
  set(limit: RateLimit | null): void {
    const m = limit?.messagesPerSecond ?? 0;
    const b = limit?.bytesPerSecond ?? 0;
    this.mRate = m;
    this.mCap = m === 0 ? 0 : (limit!.messagesBurst ?? m) * 1000;
    this.bRate = b;
    this.bCap = b === 0 ? 0 : (limit!.bytesBurst ?? b) * 1000;
    if (this.mTokens > this.mCap) this.mTokens = this.mCap;
    if (this.bTokens > this.bCap) this.bTokens = this.bCap;
  }

  /** Whether any limit applies to this connection now (its own, or its listener's total). */
  get active(): boolean {
    return this.mRate !== 0 || this.bRate !== 0 || limits(this.endpoint.config.totalRateLimit);
  }

  private refill(nowMs: number): void {
    const elapsed = nowMs - this.at;
    if (elapsed <= 0) return;
    this.at = nowMs;
    if (this.mRate !== 0) this.mTokens = Math.min(this.mCap, this.mTokens + elapsed * this.mRate);
    if (this.bRate !== 0) this.bTokens = Math.min(this.bCap, this.bTokens + elapsed * this.bRate);
  }

  /**
   * Takes one PUBLISH of `bytes` (the whole packet) when every bucket (the client's, its
   * listener's total) holds enough, answering 0; else takes nothing and answers the ms until
   * they will (the kind in lastKind).
   */
  admit(bytes: number, nowMs: number): number {
    this.refill(nowMs);
    const bCost = bytes * 1000;
    let wait = 0;
    if (this.mRate !== 0) {
      wait = bucketWait(this.mTokens, 1000, this.mCap, this.mRate);
      if (wait > 0) this.lastKind = THROTTLE.messages;
    }
    if (this.bRate !== 0) {
      const w = bucketWait(this.bTokens, bCost, this.bCap, this.bRate);
      if (w > wait) {
        wait = w;
        this.lastKind = THROTTLE.bytes;
      }
    }
    if (wait > 0) return wait;
    const total = this.endpoint.config.totalRateLimit;
    if (total !== undefined) {
      const w = this.totals.admit(this.endpoint.slot, total, bytes, nowMs);
      if (w > 0) {
        this.lastKind = this.totals.lastKind;
        return w;
      }
    }
    if (this.mRate !== 0) this.mTokens -= 1000;
    if (this.bRate !== 0) this.bTokens -= bCost;
    return 0;
  }
}
