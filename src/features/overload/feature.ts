// The overload feature: its marks loaded from the store (over the configuration's) and sent to
// every worker, replicated across a cluster, its metrics registered; the admin API serves its
// routes. The measuring and refusing happen on the workers (worker-overload.ts).
import type { Feature } from '../feature.ts';
import { registerOverloadMetrics } from './metrics.ts';
import { Overload, OVERLOAD_KIND } from './overload.ts';
import { overloadRoutes } from './routes.ts';

export const overload: Feature<Overload> = {
  name: 'overload',
  async start(ctx) {
    const o = new Overload(ctx);
    await o.load();
    ctx.replicate(OVERLOAD_KIND, (id, doc) => o.applyStored(id, doc));
    registerOverloadMetrics(ctx.registry, o);
    return { api: o, routes: () => overloadRoutes(o) };
  },
};
