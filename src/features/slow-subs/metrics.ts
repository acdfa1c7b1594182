// Slow subscribers in Prometheus: the latencies recorded and the records pushed out, read from the
// workers when scraped, and the settings in force.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { SlowSubs } from './slow-subs.ts';

export function registerSlowSubsMetrics(registry: Registry, s: SlowSubs): void {
  new Counter({
    name: 'spindle_slow_subs_recorded_total',
    help: 'QoS 1/2 deliveries whose latency (slowSubs.statsType) was at or above slowSubs.threshold while slow subscribers were enabled.',
    registers: [registry],
    async collect() {
      const c = await s.counters();
      this.reset();
      this.inc(c.recorded);
    },
  });
  new Counter({
    name: 'spindle_slow_subs_evicted_total',
    help: 'Slow subscriber records pushed out of a worker\'s full top list (slowSubs.topK) by a slower one.',
    registers: [registry],
    async collect() {
      const c = await s.counters();
      this.reset();
      this.inc(c.evicted);
    },
  });
  new Gauge({
    name: 'spindle_slow_subs_max_latency_seconds',
    help: 'The largest latency in the slow subscriber top list (0 when empty or disabled).',
    registers: [registry],
    async collect() {
      const top = await s.list();
      this.set(top.length > 0 ? top[0].latency / 1000 : 0);
    },
  });
  new Gauge({
    name: 'spindle_slow_subs_entries',
    help: 'Records in the slow subscriber top list (at most slowSubs.topK).',
    registers: [registry],
    async collect() {
      this.set((await s.list()).length);
    },
  });
}
