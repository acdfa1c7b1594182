// Delayed publish: the manager built from the configuration and the store, told of the workers'
// delayed messages; in a cluster on a shared SQL store, its cluster part and the run lease that
// makes one node fire; its metrics and admin routes.
import type { Feature } from '../feature.ts';
import { DelayedPart } from './cluster-part.ts';
import { DelayedManager } from './manager.ts';
import { registerDelayedMetrics } from './metrics.ts';
import { delayedRoutes } from './routes.ts';

export const delayed: Feature<DelayedManager> = {
  name: 'delayed',
  async start(ctx) {
    // The stores every node shares: one node fires (the lease), the others are told of changes.
    // Otherwise (MEMORY, LOCAL: a store per node) each node fires what it holds.
    const shared = ctx.store.kind === 'POSTGRESQL' || ctx.store.kind === 'MYSQL';
    const clustered = shared && ctx.leases !== null && ctx.cluster !== null;
    let part: DelayedPart | null = null;
    const m = new DelayedManager({
      nodeName: ctx.config.nodeName,
      log: ctx.log,
      store: ctx.store,
      config: ctx.config.delayed,
      leases: clustered ? ctx.leases : null,
      get part() {
        return part;
      },
      call: ctx.workers.call,
      running: ctx.workers.running,
      reply: ctx.workers.replyDelayed,
      publishBatch: (messages) => ctx.broker.publishBatch(messages),
      setWorkerState: (value) => ctx.setWorkerState('delayed', value),
    });
    if (clustered) {
      part = new DelayedPart({ applyRemote: (id, doc) => m.applyRemote(id, doc) });
      await ctx.cluster!.addPart(part);
    }
    ctx.workers.onDelayedAccepts((worker, post) => m.accepted(worker, post));
    await m.load();
    registerDelayedMetrics(ctx.registry, m);
    return { api: m, routes: () => delayedRoutes(m), close: () => m.close() };
  },
};
