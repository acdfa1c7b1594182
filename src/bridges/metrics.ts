// The MQTT bridges' Prometheus metrics (main thread), with a `bridge` label: read from the
// manager's runtimes when scraped, the same numbers /bridge/runtime answers.
import { Counter, Gauge, type Registry } from 'prom-client';

import { DROP_REASONS } from './counters.ts';
import type { BridgeManager } from './manager.ts';

export function registerBridgeMetrics(registry: Registry, bridges: BridgeManager): void {
  new Counter({
    name: 'spindle_bridge_messages_total',
    help: 'Messages that crossed an MQTT bridge: direction "in" (remote -> local, published here) or "out" (local -> remote, taken by the remote; acknowledged for QoS 1/2).',
    labelNames: ['bridge', 'direction'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of bridges.runtime()) {
        this.inc({ bridge: r.name, direction: 'in' }, r.messagesIn);
        this.inc({ bridge: r.name, direction: 'out' }, r.messagesOut);
      }
    },
  });
  new Counter({
    name: 'spindle_bridge_dropped_total',
    help: 'Messages an MQTT bridge dropped, by reason: queue_full (outbound queue at queueLimit: the oldest went), unmapped (no mapping takes the topic), topic (the mapped topic is invalid or a $ topic), expired (MQTT 5 expiry while waiting), stopped (waiting when the bridge stopped), refused (the remote refused it with a reason code).',
    labelNames: ['bridge', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of bridges.runtime()) for (const reason of DROP_REASONS) this.inc({ bridge: r.name, reason }, r.dropped[reason]);
    },
  });
  new Gauge({
    name: 'spindle_bridge_queued',
    help: 'Outbound messages of an MQTT bridge waiting for the remote, or sent and not yet acknowledged.',
    labelNames: ['bridge'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of bridges.runtime()) this.set({ bridge: r.name }, r.queued);
    },
  });
  new Gauge({
    name: 'spindle_bridge_connected',
    help: '1 while an MQTT bridge is connected to its remote broker, else 0.',
    labelNames: ['bridge'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of bridges.runtime()) this.set({ bridge: r.name }, r.state === 'connected' ? 1 : 0);
    },
  });
}
