// The built-in client database (issue 27, the dynamic-security model): clients with passwords and
// roles of ordered ACL rules, managed at run time, stored and replicated across a cluster, held by
// every worker (its copy decides CONNECTs and ACL questions without leaving the worker). Runs with
// or without the admin API, which serves its routes.
import type { Feature } from '../feature.ts';
import { ClientDbManager, KINDS } from './manager.ts';
import { registerClientDbMetrics } from './metrics.ts';
import { clientDbRoutes } from './routes.ts';

export const clientDb: Feature<ClientDbManager> = {
  name: 'client-db',
  async start(ctx) {
    const db = new ClientDbManager(ctx.store, ctx.workers, ctx.log, ctx.config.auth.scram.iterations);
    await db.load();
    ctx.replicate(KINDS.client, (id, doc) => db.applyClient(id, doc));
    ctx.replicate(KINDS.role, (id, doc) => db.applyRole(id, doc));
    ctx.replicate(KINDS.settings, (id, doc) => db.applySettings(id, doc));
    ctx.replicate(KINDS.kick, (id, doc) => db.applyKick(id, doc));
    registerClientDbMetrics(ctx.registry, db, ctx.workers);
    return { api: db, routes: () => clientDbRoutes(db), close: () => db.close() };
  },
};
