// Throttling: a connection over an inbound rate limit stops reading until the limit allows it
// again; nothing is lost. Two ways:
// - the client's limiter (its own limit or its endpoint's, and the endpoint's total on this node;
//   src/broker/rate-limiter.ts): a PUBLISH the buckets cannot take now is handled once they can
//   (`throttled` answers the handler's promise, so the connection holds that packet and those
//   after it, reading paused, for the wait; no promise or timer while under the limit);
// - the tenant's licence rate (a fixed window per second, counted across workers): the message is
//   taken, and reading pauses until the next second (`pauseUntil`).
// Also makes a connection's limiter at CONNECT, and again when its endpoint's limits change.
import { limits, type RateLimit } from '../../broker/rate-limit.ts';
import { RateLimiter, type TotalBuckets } from '../../broker/rate-limiter.ts';
import type { Client, HandlerHost, HandlerResult } from './client.ts';

/** Handles the PUBLISH of `src`/`d` at `o` `waitMs` from now (its descriptor copied: the table is
 * reused), through `handle`, which asks the limiter again. Counted as a throttle. */
export function throttled(
  c: Client,
  kind: number,
  waitMs: number,
  src: Buffer,
  d: Uint32Array,
  o: number,
  slots: number,
  handle: (c: Client, src: Buffer, d: Uint32Array, o: number) => HandlerResult,
): Promise<void> {
  c.endpoint.stats.throttled[kind]++;
  const desc = d.slice(o, o + slots);
  return new Promise<void>((resolve) => setTimeout(resolve, waitMs)).then(() => (c.isClosed() ? undefined : handle(c, src, desc, 0)));
}

/** Pauses reading until `until` (epoch ms; later when a pause already runs past it), counting
 * the throttle of `kind` when reading was going on. */
export function pauseUntil(host: HandlerHost, c: Client, kind: number, nowMs: number, until: number): void {
  if (c.throttledUntil !== 0) {
    if (until > c.throttledUntil) c.throttledUntil = until;
    return;
  }
  c.throttledUntil = until;
  c.endpoint.stats.throttled[kind]++;
  c.pauseReading();
  setTimeout(endPause, Math.max(1, until - nowMs), host, c);
}

function endPause(host: HandlerHost, c: Client): void {
  const now = Date.now();
  if (!c.isClosed() && c.throttledUntil > now) {
    setTimeout(endPause, c.throttledUntil - now, host, c);
    return;
  }
  c.throttledUntil = 0;
  if (c.isClosed()) return;
  // The publish pipeline (its bound) or a rule stage (its backlog, reading.ts) may hold reading
  // paused as well; each resumes it when it lets go, if nothing else holds it then.
  if (c.publishPending < host.config.limits.receiveMaximum && !c.heldByRules) c.resumeReading();
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
  if (!c.limiter.active) c.limiter = null;
}

