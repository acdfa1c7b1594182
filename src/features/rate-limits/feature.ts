// The rate-limits feature: what the admin API and the console show of the inbound rate limits.
// The limits live on the endpoints (stored and replicated with them) and on the clients'
// authentication answers; the workers throttle (src/engine/handlers/throttle.ts) and count
// (spindle_rate_limit_throttled_total, summed with the other endpoint metrics).
import type { Feature } from '../feature.ts';
import { RateLimits } from './rate-limits.ts';
import { rateLimitRoutes } from './routes.ts';

export const rateLimits: Feature<RateLimits> = {
  name: 'rate-limits',
  async start(ctx) {
    const limits = new RateLimits(ctx.workers);
    return { api: limits, routes: () => rateLimitRoutes(limits) };
  },
};
