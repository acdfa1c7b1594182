// RateLimits: the inbound rate limits in force on this node, read from the workers (main thread).
// The limits themselves are fields of the endpoints (rateLimit, totalRateLimit: stored,
// replicated and changed at run time with the endpoints, src/broker/endpoints.ts) and of the
// clients' authentication answers (AuthResult.rateLimit); the throttling happens on the workers
// (src/engine/handlers/throttle.ts). This sums what every worker reports.
import { THROTTLE_KINDS, type RateLimit, type ThrottleKind } from '../../broker/rate-limit.ts';
import type { FeatureWorkers } from '../feature.ts';

export interface EndpointRateLimitStatus {
  id: string;
  port: number;
  rateLimit: RateLimit | null;
  totalRateLimit: RateLimit | null;
  /** Throttles since the workers started, by kind. */
  throttled: Record<ThrottleKind, number>;
  /** Connected clients a limit applies to; of them, those with their own (an authenticator's). */
  limitedClients: number;
  ownLimitClients: number;
  /** Clients whose reading is paused now. */
  pausedNow: number;
}

export class RateLimits {
  constructor(private readonly workers: FeatureWorkers) {}

  async endpoints(): Promise<EndpointRateLimitStatus[]> {
    const out = new Map<string, EndpointRateLimitStatus>();
    for (const list of await this.workers.callAll('rateLimits.endpoints')) {
      for (const e of list) {
        let row = out.get(e.id);
        if (!row) {
          row = {
            id: e.id, port: e.port, rateLimit: e.rateLimit, totalRateLimit: e.totalRateLimit,
            throttled: Object.fromEntries(THROTTLE_KINDS.map((k) => [k, 0])) as Record<ThrottleKind, number>,
            limitedClients: 0, ownLimitClients: 0, pausedNow: 0,
          };
          out.set(e.id, row);
        }
        THROTTLE_KINDS.forEach((k, i) => (row!.throttled[k] += e.throttled[i] ?? 0));
        row.limitedClients += e.limited;
        row.ownLimitClients += e.ownLimit;
        row.pausedNow += e.pausedNow;
      }
    }
    return [...out.values()].sort((a, b) => a.port - b.port);
  }
}
