// The drain feature: built at start with or without the admin API (a drain on SIGTERM needs no
// HTTP), its cluster part added to the link, its metrics registered; the admin API serves its
// routes.
import type { Feature } from '../feature.ts';
import { Drain } from './drain.ts';
import { registerDrainMetrics } from './metrics.ts';
import { drainRoutes } from './routes.ts';

export const drain: Feature<Drain> = {
  name: 'drain',
  async start(ctx) {
    const d = new Drain({
      config: ctx.config,
      log: ctx.log,
      workers: ctx.workers,
      setDraining: (on) => ctx.setWorkerState('draining', on),
      mqttPort: () => ctx.broker.endpoints().find((e) => e.protocol === 'mqtt')?.port,
    }, ctx.cluster);
    if (d.part) await ctx.cluster!.addPart(d.part);
    registerDrainMetrics(ctx.registry, d);
    return { api: d, routes: () => drainRoutes(d), close: () => d.close() };
  },
};
