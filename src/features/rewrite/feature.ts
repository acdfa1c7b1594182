// The topic rewrite feature: the rules of the configuration (or stored through the admin API),
// sent to every worker, replicated across a cluster; its metrics and routes. The rewriting itself
// happens in the workers' PUBLISH, SUBSCRIBE, UNSUBSCRIBE and CONNECT (will) handlers, before the
// ACL (worker-rewrite.ts, rules.ts).
import type { Feature } from '../feature.ts';
import { registerRewriteMetrics } from './metrics.ts';
import { Rewrite, REWRITE_KIND } from './rewrite.ts';
import { rewriteRoutes } from './routes.ts';

export const rewrite: Feature<Rewrite> = {
  name: 'rewrite',
  async start(ctx) {
    const r = new Rewrite(ctx);
    await r.load();
    ctx.replicate(REWRITE_KIND, (id, doc) => r.applyStored(id, doc));
    registerRewriteMetrics(ctx.registry, r);
    return { api: r, routes: () => rewriteRoutes(r) };
  },
};
