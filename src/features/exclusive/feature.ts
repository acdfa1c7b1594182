// The exclusive subscriptions feature: the node's table of `$exclusive/{filter}` places (shared by
// every worker, which take and free places themselves: table.ts, worker-exclusive.ts), its
// metrics, and the admin route listing the holders.
import { Counter, Gauge } from 'prom-client';

import type { Feature } from '../feature.ts';
import { ExclusiveTable } from './table.ts';
import { exclusiveRoutes } from './routes.ts';
import type { Exclusive } from './types.ts';

export const exclusive: Feature<Exclusive> = {
  name: 'exclusive',
  async start(ctx) {
    const enabled = ctx.config.mqtt.exclusiveSubscription;
    const table = new ExclusiveTable();
    const counters = new SharedArrayBuffer(4 * 4);
    const c = new Uint32Array(counters);
    ctx.setWorkerState('exclusive', { enabled, table: table.buffer, counters });
    const api: Exclusive = { enabled, size: () => table.size() };
    new Gauge({ name: 'spindle_exclusive_subscriptions', help: 'Exclusive subscriptions ($exclusive/{filter}) held now on this node.', registers: [ctx.registry], collect() { this.set(table.size()); } });
    const total = (name: string, help: string, slot: number) => new Counter({ name, help, registers: [ctx.registry], collect() { this.reset(); this.inc(Atomics.load(c, slot)); } });
    total('spindle_exclusive_taken_total', 'Exclusive subscriptions granted (a place taken).', 0);
    total('spindle_exclusive_freed_total', 'Exclusive subscription places freed (unsubscribed, or the session ended).', 3);
    new Counter({
      name: 'spindle_exclusive_refused_total',
      help: 'SUBSCRIBEs to $exclusive/{filter} refused (0x97 Quota exceeded; MQTT 3.1.1: 0x80): busy (another client holds it), full (the node\'s table of 65536 places is full).',
      labelNames: ['reason'],
      registers: [ctx.registry],
      collect() {
        this.reset();
        this.inc({ reason: 'busy' }, Atomics.load(c, 1));
        this.inc({ reason: 'full' }, Atomics.load(c, 2));
      },
    });
    return { api, routes: () => exclusiveRoutes(ctx.workers, api) };
  },
};
