// The Sparkplug B feature: with sparkplug.enabled, a tap of the spBv1.0/ births, deaths, data and
// STATE messages (a batch per tick from every worker) feeds the state on the main thread; its
// metrics are registered and the admin API serves it. The births, deaths and STATEs are kept in
// the store and replicated across a cluster (store.ts). spb_decode() in rules (src/rules/sql) uses
// the decoder of this folder on the workers and needs none of this.
import type { Feature } from '../feature.ts';
import { registerSparkplugMetrics } from './metrics.ts';
import { sparkplugRoutes } from './routes.ts';
import { SparkplugState } from './state.ts';
import { STATE_FILTERS } from './topic.ts';
import { SparkplugStore } from './store.ts';

export const sparkplug: Feature<SparkplugState | null> = {
  name: 'sparkplug',
  async start(ctx) {
    const cfg = ctx.config.sparkplug;
    if (!cfg.enabled) return { api: null, routes: () => sparkplugRoutes(null) };
    const state = new SparkplugState({ maxEdgeNodes: cfg.maxEdgeNodes, maxDevicesPerNode: cfg.maxDevicesPerNode });
    const kept = new SparkplugStore(ctx, state);
    await kept.open();
    registerSparkplugMetrics(ctx.registry, state, kept.counters);
    const tap = await ctx.tap(STATE_FILTERS, (matches) => state.apply(matches));
    return {
      api: state,
      routes: () => sparkplugRoutes(state),
      close: async () => {
        await tap.close();
        await kept.close();
      },
    };
  },
};
