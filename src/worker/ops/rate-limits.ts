// Rate-limit operations on one worker (src/features/rate-limits asks them): each endpoint's limits
// as this worker holds them, its throttles so far, and how many of its clients are limited here.
import type { RateLimit } from '../../broker/rate-limit.ts';
import type { Op } from './types.ts';

export interface EndpointRateLimits {
  id: string;
  port: number;
  rateLimit: RateLimit | null;
  totalRateLimit: RateLimit | null;
  /** Throttles by kind (THROTTLE_KINDS order). */
  throttled: number[];
  /** Connected clients of the endpoint here that a limit applies to, and those with their own. */
  limited: number;
  ownLimit: number;
  /** Connections here whose reading is paused by a rate limit now. */
  pausedNow: number;
}

export const rateLimitOps = {
  /** Throttles of every endpoint here, summed (the alert signal rate.throttled): no walk of the
   * connections. */
  'rateLimits.throttled'(_args: undefined, env): number {
    let n = 0;
    for (const ep of env.listeners.endpoints.values()) for (const t of ep.stats.throttled) n += t;
    return n;
  },

  'rateLimits.endpoints'(_args: undefined, env): EndpointRateLimits[] {
    const out = new Map<string, EndpointRateLimits>();
    for (const ep of env.listeners.endpoints.values()) {
      out.set(ep.config.id, {
        id: ep.config.id, port: ep.config.port, rateLimit: ep.config.rateLimit ?? null, totalRateLimit: ep.config.totalRateLimit ?? null,
        throttled: [...ep.stats.throttled], limited: 0, ownLimit: 0, pausedNow: 0,
      });
    }
    for (const conn of env.connections) {
      const row = out.get(conn.endpoint.config.id);
      if (!row || conn.state !== 'connected') continue;
      if (conn.limiter !== null) row.limited++;
      if (conn.identity.rateLimit !== undefined) row.ownLimit++;
      if (conn.throttledUntil !== 0) row.pausedNow++;
    }
    return [...out.values()];
  },
} satisfies Record<string, Op>;
