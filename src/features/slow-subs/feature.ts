// The slow subscribers feature (EMQX's slow_subs): the clients whose QoS 1/2 deliveries take the
// longest to be acknowledged (or queued the longest), per client id and topic, over a sliding
// window. Settings from the configuration (slowSubs.*) or the admin API (stored, replicated), sent
// to every worker; the timing happens in the workers' outbox (worker-slow-subs.ts).
import type { Feature } from '../feature.ts';
import { registerSlowSubsMetrics } from './metrics.ts';
import { SlowSubs, SLOW_SUBS_KIND } from './slow-subs.ts';
import { slowSubsRoutes } from './routes.ts';

export const slowSubs: Feature<SlowSubs> = {
  name: 'slow-subs',
  async start(ctx) {
    const s = new SlowSubs(ctx);
    await s.load();
    ctx.replicate(SLOW_SUBS_KIND, (id, doc) => s.applyStored(id, doc));
    registerSlowSubsMetrics(ctx.registry, s);
    return { api: s, routes: () => slowSubsRoutes(s) };
  },
};
