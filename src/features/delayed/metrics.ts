// Delayed publish's Prometheus metrics (main thread): read from the manager when scraped; the
// lateness histogram is observed as messages fire.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import type { DelayedManager } from './manager.ts';

export function registerDelayedMetrics(registry: Registry, m: DelayedManager): void {
  new Gauge({
    name: 'spindle_delayed_pending',
    help: 'Delayed messages held ($delayed/{seconds}/{topic}), in the whole store as this node knows it; bounded by delayed.maxMessages.',
    registers: [registry],
    collect() {
      this.set(m.pending);
    },
  });
  const counter = (name: string, help: string, read: () => number) => new Counter({
    name, help, registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
  counter('spindle_delayed_accepted_total', 'Delayed messages stored (and then acknowledged) on this node.', () => m.counters.accepted);
  counter('spindle_delayed_fired_total', 'Delayed messages published to their topic when due, by this node.', () => m.counters.fired);
  counter('spindle_delayed_cancelled_total', 'Delayed messages cancelled through the admin API on this node.', () => m.counters.cancelled);
  counter('spindle_delayed_expired_total', 'Delayed messages whose message expiry (counted from their receipt) passed before they were due: dropped at due time.', () => m.counters.expired);
  new Counter({
    name: 'spindle_delayed_refused_total',
    help: 'Delayed PUBLISHes refused on this node, by reason: invalid (malformed $delayed topic or a delay above delayed.maxInterval: v5 0x90), quota (delayed.maxMessages held: v5 0x97), store (not stored: v5 0x80). MQTT 3.1.1 QoS 1/2 ones are acknowledged and dropped, QoS 0 ones dropped.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(m.counters.refused)) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'spindle_delayed_denied_total',
    help: 'Delayed messages the publisher\'s ACL denied on its target topic, by when: receipt (refused, v5 0x87) or due (the ACL changed meanwhile: dropped).',
    labelNames: ['at'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ at: 'receipt' }, m.counters.denied.receipt);
      this.inc({ at: 'due' }, m.counters.denied.due);
    },
  });
  const lateness = new Histogram({
    name: 'spindle_delayed_lateness_seconds',
    help: 'How late delayed messages were published: the time their publish was done minus their due time.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  m.onFired = (s) => lateness.observe(Math.max(0, s));
}
