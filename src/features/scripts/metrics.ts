// The scripts' and extensions' Prometheus metrics, labelled by processor id and kind: the same
// counters /script/runtime and /extension/runtime answer, read from the workers once per scrape.
import { Counter, type Registry } from 'prom-client';

import type { ProcessorManager, ProcessorRuntime } from './manager.ts';
import { FAILURE_REASONS } from './types.ts';

export function registerProcessorMetrics(registry: Registry, processors: ProcessorManager): void {
  let pending: Promise<ProcessorRuntime[]> | null = null;
  let at = 0;
  const read = (): Promise<ProcessorRuntime[]> => {
    const now = Date.now();
    if (pending === null || now - at > 500) {
      at = now;
      pending = processors.allRuntimes();
    }
    return pending;
  };
  new Counter({
    name: 'spindle_script_messages_total',
    help: 'Messages scripts and extensions were given, by what they became: converted (changed or split), unchanged, dropped, failed.',
    labelNames: ['processor', 'kind', 'result'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await read()) {
        const labels = { processor: r.id, kind: r.kind };
        this.inc({ ...labels, result: 'converted' }, r.converted);
        this.inc({ ...labels, result: 'unchanged' }, r.unchanged);
        this.inc({ ...labels, result: 'dropped' }, r.dropped);
        this.inc({ ...labels, result: 'failed' }, FAILURE_REASONS.reduce((n, reason) => n + r.failed[reason], 0));
      }
    },
  });
  new Counter({
    name: 'spindle_script_failures_total',
    help: 'Messages a script or extension failed on, by reason: error (threw), timeout (past scripts.timeout), memory (past scripts.memoryLimit), invalid (an answer that is not a message, or a topic a client could not publish to). The message then passes or is dropped (scripts.onError).',
    labelNames: ['processor', 'kind', 'reason'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await read()) for (const reason of FAILURE_REASONS) this.inc({ processor: r.id, kind: r.kind, reason }, r.failed[reason]);
    },
  });
  new Counter({
    name: 'spindle_script_seconds_total',
    help: 'Time the pool threads spent in a script or extension.',
    labelNames: ['processor', 'kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await read()) this.inc({ processor: r.id, kind: r.kind }, r.micros / 1e6);
    },
  });
}
