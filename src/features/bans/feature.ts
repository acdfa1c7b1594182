// The ban list and flapping detection (issue 27, EMQX's banned API and flapping_detect): bans by
// client id, username, address or CIDR block, stored and replicated across a cluster, installed
// on every worker and checked per CONNECT before authentication; and client ids that reconnect
// too often, banned for a while. Runs with or without the admin API, which serves its routes.
import type { Feature } from '../feature.ts';
import { BAN_KIND, BanList } from './ban-list.ts';
import { FlappingDetector } from './flapping.ts';
import { createFlappingTable } from './flapping-table.ts';
import { banRoutes } from './routes.ts';
import { createBanCounters } from './worker-bans.ts';

export const bans: Feature<BanList> = {
  name: 'bans',
  async start(ctx) {
    const { banned, flapping } = ctx.config;
    const counters = createBanCounters();
    const list = new BanList(ctx.store, ctx.workers, ctx.log, ctx.registry, { maxEntries: banned.maxEntries, sweepSeconds: banned.sweepInterval }, counters);
    await list.load();
    ctx.replicate(BAN_KIND, (id, doc) => list.applyStored(id, doc));
    const limits = { maxCount: flapping.maxCount, windowSeconds: flapping.window };
    const table = flapping.enable ? createFlappingTable() : null;
    ctx.setWorkerState('bans', { counters, flapping: table ? { limits, table } : null });
    const detector = table ? new FlappingDetector(table, { ...limits, banSeconds: flapping.banTime }, list, ctx.workers, ctx.log, ctx.registry) : null;
    return {
      api: list,
      routes: () => banRoutes(list),
      close() {
        detector?.close();
        list.close();
      },
    };
  },
};
