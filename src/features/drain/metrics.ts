// The drain's Prometheus metrics (main thread): read from the Drain when scraped.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Drain } from './drain.ts';
import type { DrainState } from './types.ts';

const STATE_VALUE: Record<DrainState, number> = { idle: 0, draining: 1, drained: 2, rebalancing: 3 };

export function registerDrainMetrics(registry: Registry, drain: Drain): void {
  new Counter({
    name: 'spindle_drain_moved_total',
    help: 'Clients moved away from this node (MQTT 5: DISCONNECT 0x9C Use another server, or 0x8B without a server to name; MQTT 3.1.1: closed), by reason: drain (POST /api/cluster/drain), stop (a drain on SIGTERM, drain.onStop), rebalance.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(drain.counters.moved)) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'spindle_drain_handovers_total',
    help: 'Persistent sessions of moved clients, by outcome: claimed (the node the client reconnected to took the session) or timeout (not claimed within drain.handoverTimeout: the session stays on this node).',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ outcome: 'claimed' }, drain.counters.handoverClaimed);
      this.inc({ outcome: 'timeout' }, drain.counters.handoverTimeouts);
    },
  });
  new Gauge({
    name: 'spindle_drain_state',
    help: 'This node\'s drain state: 0 idle (accepting), 1 draining (not accepting, moving clients away), 2 drained (not accepting, every client moved), 3 rebalancing (accepting, moving its excess away).',
    registers: [registry],
    collect() {
      this.set(STATE_VALUE[drain.status().state]);
    },
  });
  new Gauge({
    name: 'spindle_drain_remaining',
    help: 'Clients this node\'s drain or rebalance still has to move (0 when none runs).',
    registers: [registry],
    collect() {
      const s = drain.status();
      this.set(s.state === 'draining' || s.state === 'rebalancing' ? s.remaining : 0);
    },
  });
}
