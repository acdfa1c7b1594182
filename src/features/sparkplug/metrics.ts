// The Sparkplug B state's Prometheus metrics (main thread), read from the state when scraped.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { SparkplugState } from './state.ts';
import type { SparkplugStoreCounters } from './store.ts';

export function registerSparkplugMetrics(registry: Registry, state: SparkplugState, kept: SparkplugStoreCounters): void {
  new Gauge({
    name: 'spindle_sparkplug_edge_nodes',
    help: 'Sparkplug B edge nodes kept, by state: online (last NBIRTH not followed by its NDEATH) or offline.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const c = state.counts();
      this.set({ state: 'online' }, c.online);
      this.set({ state: 'offline' }, c.offline);
    },
  });
  new Gauge({
    name: 'spindle_sparkplug_devices',
    help: 'Sparkplug B devices kept, by state: online (last DBIRTH not followed by a DDEATH or its edge node\'s NDEATH) or offline.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const c = state.counts();
      this.set({ state: 'online' }, c.devicesOnline);
      this.set({ state: 'offline' }, c.devicesOffline);
    },
  });
  new Counter({
    name: 'spindle_sparkplug_births_total',
    help: 'Sparkplug B births seen, by kind: node (NBIRTH) or device (DBIRTH).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ kind: 'node' }, state.counters.births.node);
      this.inc({ kind: 'device' }, state.counters.births.device);
    },
  });
  new Counter({
    name: 'spindle_sparkplug_deaths_total',
    help: 'Sparkplug B deaths seen, by kind: node (NDEATH, usually the edge node\'s will), device (DDEATH), or stale (an NDEATH whose bdSeq is not the current NBIRTH\'s: ignored).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ kind: 'node' }, state.counters.deaths.node);
      this.inc({ kind: 'device' }, state.counters.deaths.device);
      this.inc({ kind: 'stale' }, state.counters.staleDeaths);
    },
  });
  new Counter({
    name: 'spindle_sparkplug_decode_errors_total',
    help: 'Messages under spBv1.0/ the Sparkplug B state could not read: a birth, death or data payload that is not a Sparkplug B protobuf, or a STATE payload that is not JSON. The message is delivered as usual.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(state.counters.decodeErrors);
    },
  });
  new Counter({
    name: 'spindle_sparkplug_dropped_total',
    help: 'Sparkplug B edge nodes, devices and hosts not kept because their bound was reached (sparkplug.maxEdgeNodes, sparkplug.maxDevicesPerNode), by what: edge_node, device, host.',
    labelNames: ['what'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ what: 'edge_node' }, state.counters.dropped.edgeNodes);
      this.inc({ what: 'device' }, state.counters.dropped.devices);
      this.inc({ what: 'host' }, state.counters.dropped.hosts);
    },
  });
  new Counter({
    name: 'spindle_sparkplug_store_writes_total',
    help: 'Sparkplug B edge-node and host documents written to the store (after a birth, death or STATE; replicated across a cluster), by result: ok, failed (logged; kept in memory).',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: 'ok' }, kept.written);
      this.inc({ result: 'failed' }, kept.failed);
    },
  });
}
