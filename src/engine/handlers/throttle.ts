// Throttling: a connection over an inbound rate limit (its own or its endpoint's, see
// src/broker/rate-limiter.ts, or its tenant's licence rate) stops reading until the limit allows
// it again; every message already read is handled, so nothing is lost. The pause lives on the
// connection (Client.throttledUntil): one timer per pause, none per message. Also makes a
// connection's limiter at CONNECT, and again when its endpoint's limits change at run time.
import { limits, type RateLimit } from '../../broker/rate-limit.ts';
import { RateLimiter, type TotalBuckets } from '../../broker/rate-limiter.ts';
import type { Client, HandlerHost } from './client.ts';

/**
 * Pauses reading for `waitMs` (or longer, when a pause already runs past it), counting the
 * throttle of `kind` (THROTTLE.*) on the endpoint when reading was going on.
 */
export function throttle(host: HandlerHost, c: Client, kind: number, nowMs: number, waitMs: number): void {
  const until = nowMs + Math.max(1, waitMs);
  if (c.throttledUntil !== 0) {
    // Packets of a read already under way: the pause lasts until their debt is paid too.
    if (until > c.throttledUntil) c.throttledUntil = until;
    return;
  }
  c.throttledUntil = until;
  c.endpoint.stats.throttled[kind]++;
  c.pauseReading();
  setTimeout(endThrottle, until - nowMs, host, c);
}

function endThrottle(host: HandlerHost, c: Client): void {
  if (c.isClosed()) {
    c.throttledUntil = 0;
    return;
  }
  const now = Date.now();
  let until = c.throttledUntil;
  const limiter = c.limiter;
  if (limiter !== null) until = Math.max(until, now + limiter.waitMs(now));
  if (until > now) {
    c.throttledUntil = until;
    setTimeout(endThrottle, until - now, host, c);
    return;
  }
  c.throttledUntil = 0;
  // The publish pipeline may hold reading paused as well (its bound); it resumes it then.
  if (c.publishPending < host.config.limits.receiveMaximum) c.resumeReading();
}

/** The per-client limit of `c`: its own (the authenticator's), else its endpoint's. */
function ownLimit(c: Client): RateLimit | null {
  const own = c.identity.rateLimit ?? c.endpoint.config.rateLimit;
  return limits(own) ? own : null;
}

/** The limiter of a client that just authenticated (null: no limit applies to it). */
export function limiterFor(c: Client, totals: TotalBuckets, nowMs: number): RateLimiter | null {
  const own = ownLimit(c);
  if (own === null && !limits(c.endpoint.config.totalRateLimit)) return null;
  return new RateLimiter(own, nowMs, c.endpoint, totals);
}

/** The endpoint of `c` changed its limits at run time: the connection follows at once. */
export function rateLimitChanged(c: Client, totals: TotalBuckets): void {
  if (c.state !== 'connected') return;
  if (c.limiter === null) {
    c.limiter = limiterFor(c, totals, Date.now());
    return;
  }
  c.limiter.set(ownLimit(c));
  // A paused connection keeps its limiter until its pause ends (endThrottle reads it).
  if (!c.limiter.active && c.throttledUntil === 0) c.limiter = null;
}
