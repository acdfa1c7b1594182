// Overload protection's Prometheus metrics (main thread): read from the workers when scraped.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Overload } from './overload.ts';
import type { WorkerOverloadStatus } from './types.ts';

export function registerOverloadMetrics(registry: Registry, overload: Overload): void {
  // One read of the workers per scrape, shared by the metrics below.
  let pending: Promise<WorkerOverloadStatus[]> | null = null;
  const read = (): Promise<WorkerOverloadStatus[]> => {
    pending ??= overload.status().then((s) => s.workers).finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  new Gauge({
    name: 'spindle_overload_state',
    help: 'Overload protection state of a worker thread: 0 normal, 1 overloaded (refusing new connections with CONNACK 0x89 Server busy / 3 Server unavailable until its measures are below the low-water marks).',
    labelNames: ['worker'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const w of await read()) this.set({ worker: String(w.worker) }, w.state === 'overloaded' ? 1 : 0);
    },
  });
  new Counter({
    name: 'spindle_overload_refused_total',
    help: 'CONNECTs refused because their worker was overloaded (CONNACK 0x89 Server busy; MQTT 3.1.1: 3 Server unavailable).',
    registers: [registry],
    async collect() {
      this.reset();
      this.inc((await read()).reduce((n, w) => n + w.refused, 0));
    },
  });
  new Counter({
    name: 'spindle_overload_shed_total',
    help: 'QoS 0 deliveries to slow clients (over 64 KB waiting) dropped while their worker was overloaded (overload.shedQos0).',
    registers: [registry],
    async collect() {
      this.reset();
      this.inc((await read()).reduce((n, w) => n + w.shed, 0));
    },
  });
  new Counter({
    name: 'spindle_overload_episodes_total',
    help: 'Times a worker thread became overloaded.',
    registers: [registry],
    async collect() {
      this.reset();
      this.inc((await read()).reduce((n, w) => n + w.episodes, 0));
    },
  });
  new Gauge({
    name: 'spindle_overload_lag_seconds',
    help: 'Event-loop delay of a worker thread as overload protection last measured it (99th percentile over overload.sampleMs; 0 while overload protection is off).',
    labelNames: ['worker'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const w of await read()) this.set({ worker: String(w.worker) }, w.lagMs / 1000);
    },
  });
}
