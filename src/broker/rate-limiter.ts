// RateLimiter: the token buckets of one connection's inbound rate limit (src/broker/rate-limit.ts),
// owned by the connection (made at CONNECT only when a limit applies, so a connection without one
// pays a single null check per PUBLISH). Milli-tokens in plain numbers (exact integers: a bucket
// refills `rate` milli-tokens per millisecond), no allocation per message. A message is always
// taken, even past the limit: its bucket goes into debt, and the connection stops reading until
// the debt is paid (waitMs), so nothing is lost and the average rate holds.
import { limits, THROTTLE, type RateLimit } from './rate-limit.ts';

/** The listener's total buckets, shared by every worker (src/broker/shared-rate-buckets.ts). */
export interface TotalBuckets {
  take(slot: number, limit: RateLimit, bytes: number, nowMs: number): number;
  waitMs(slot: number, limit: RateLimit, nowMs: number): number;
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
  /** Reading is paused for this limiter (the throttle's timer runs). */
  paused = false;

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
   * Takes one PUBLISH of `bytes` (the whole packet). Answers THROTTLE.none while every bucket
   * holds enough, else the kind of the first one now in debt (THROTTLE.messages, .bytes,
   * .totalMessages, .totalBytes).
   */
  take(bytes: number, nowMs: number): number {
    this.refill(nowMs);
    let over: number = THROTTLE.none;
    if (this.mRate !== 0) {
      this.mTokens -= 1000;
      if (this.mTokens < 0) over = THROTTLE.messages;
    }
    if (this.bRate !== 0) {
      this.bTokens -= bytes * 1000;
      if (this.bTokens < 0 && over === THROTTLE.none) over = THROTTLE.bytes;
    }
    const total = this.endpoint.config.totalRateLimit;
    if (total !== undefined) {
      const t = this.totals.take(this.endpoint.slot, total, bytes, nowMs);
      if (over === THROTTLE.none) over = t;
    }
    return over;
  }

  /** Milliseconds until no bucket of this connection (nor its listener's total) is in debt. */
  waitMs(nowMs: number): number {
    this.refill(nowMs);
    let wait = 0;
    if (this.mTokens < 0) wait = Math.ceil(-this.mTokens / this.mRate);
    if (this.bTokens < 0) wait = Math.max(wait, Math.ceil(-this.bTokens / this.bRate));
    const total = this.endpoint.config.totalRateLimit;
    if (total !== undefined) wait = Math.max(wait, this.totals.waitMs(this.endpoint.slot, total, nowMs));
    return wait;
  }
}
