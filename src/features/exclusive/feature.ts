// The exclusive subscriptions feature: the node's table of `$exclusive/{filter}` places (shared by
// every worker, which take and free places themselves: table.ts, worker-exclusive.ts), the places
// of persistent sessions kept in the store across a restart (places.ts), in a cluster the
// decision across the nodes (cluster.ts), its metrics, and the admin route listing the holders.
// Alone, a SUBSCRIBE to an exclusive filter is one compare-and-swap on its worker; in a cluster
// the worker also waits for the cluster's answer (one JetStream KV create) before its SUBACK.
import { Counter, Gauge } from 'prom-client';

import type { Feature } from '../feature.ts';
import { ExclusiveTable } from './table.ts';
import { exclusiveRoutes } from './routes.ts';
import { ExclusivePlaces } from './places.ts';
import { ExclusiveCluster } from './cluster.ts';
import type { Exclusive } from './types.ts';

export const exclusive: Feature<Exclusive> = {
  name: 'exclusive',
  async start(ctx) {
    const enabled = ctx.config.mqtt.exclusiveSubscription;
    const table = new ExclusiveTable();
    const counters = new SharedArrayBuffer(5 * 4);
    const c = new Uint32Array(counters);
    const places = new ExclusivePlaces(ctx);
    let cluster: ExclusiveCluster | null = null;
    if (enabled) {
      await places.open();
      ctx.workers.onExclusiveNotes((worker, notes) => places.onNotes(worker, notes));
      if (ctx.cluster !== null) {
        const link = ctx.cluster;
        cluster = new ExclusiveCluster({
          restored: () => places.restored(),
          holds: (filter, clientId) => table.holds(filter, clientId),
          adopt: (node, holds) => places.adopt(node, holds),
          drop: async (hold) => {
            await ctx.workers.callAll('exclusive.drop', hold);
            places.forget(hold);
          },
          adoptionSettled: () => link.adoptionSettled(),
        }, ctx.log);
        places.cluster = cluster;
        await link.addPart(cluster);
      }
    }
    ctx.setWorkerState('exclusive', { enabled, cluster: cluster !== null, table: table.buffer, counters });
    const api: Exclusive = { enabled, size: () => table.size() };
    new Gauge({ name: 'spindle_exclusive_subscriptions', help: 'Exclusive subscriptions ($exclusive/{filter}) held now on this node.', registers: [ctx.registry], collect() { this.set(table.size()); } });
    const total = (name: string, help: string, slot: number) => new Counter({ name, help, registers: [ctx.registry], collect() { this.reset(); this.inc(Atomics.load(c, slot)); } });
    total('spindle_exclusive_taken_total', 'Exclusive subscriptions granted (a place taken).', 0);
    total('spindle_exclusive_freed_total', 'Exclusive subscription places freed (unsubscribed, or the session ended).', 3);
    new Counter({
      name: 'spindle_exclusive_refused_total',
      help: 'SUBSCRIBEs to $exclusive/{filter} refused (0x97 Quota exceeded; MQTT 3.1.1: 0x80): busy (another client holds it, on this node or another of the cluster), full (the node\'s table of 65536 places is full), cluster (the cluster could not be asked: NATS away).',
      labelNames: ['reason'],
      registers: [ctx.registry],
      collect() {
        this.reset();
        this.inc({ reason: 'busy' }, Atomics.load(c, 1));
        this.inc({ reason: 'full' }, Atomics.load(c, 2));
        this.inc({ reason: 'cluster' }, Atomics.load(c, 4));
      },
    });
    new Counter({
      name: 'spindle_exclusive_kept_total',
      help: 'Exclusive subscription places of persistent sessions: kept (written to the store, to hold them across a restart), restored (taken again by a session restored from the store), lost (taken by another client of the cluster while this node was away: the restored subscription was removed).',
      labelNames: ['what'],
      registers: [ctx.registry],
      collect() {
        this.reset();
        this.inc({ what: 'kept' }, places.counters.kept);
        this.inc({ what: 'restored' }, places.counters.restored);
        this.inc({ what: 'lost' }, cluster?.counters.lost ?? 0);
      },
    });
    if (cluster !== null) {
      const cl = cluster;
      new Counter({
        name: 'spindle_exclusive_cluster_places_total',
        help: 'Exclusive subscription places of nodes that went down, settled by this node: adopted (their session is here now), freed.',
        labelNames: ['what'],
        registers: [ctx.registry],
        collect() {
          this.reset();
          this.inc({ what: 'adopted' }, cl.counters.adopted);
          this.inc({ what: 'freed' }, cl.counters.freedOfGone);
        },
      });
    }
    return { api, routes: () => exclusiveRoutes(ctx.workers, api), close: () => places.close() };
  },
};
