// OpenTelemetry traces' Prometheus metrics (main thread): read from the exporter when scraped.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { SpanExporter } from './exporter.ts';

export function registerOtelTraceMetrics(registry: Registry, exporter: SpanExporter | null): void {
  const counters = exporter?.counters;
  new Counter({
    name: 'spindle_otel_traces_spans_exported_total',
    help: 'Spans of sampled messages exported over OTLP (otel.traces.*) and accepted by the receiver.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counters?.exported ?? 0);
    },
  });
  new Counter({
    name: 'spindle_otel_traces_spans_dropped_total',
    help: 'Spans not exported, by reason: queue_full (otel.traces.queueSize waiting on the main thread), worker_queue_full (as many made by one worker between two of its posts, 25 ms), export_failed (the receiver refused or did not answer within otel.traces.timeout).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(counters?.dropped ?? { queue_full: 0, worker_queue_full: 0, export_failed: 0 })) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'spindle_otel_traces_export_failures_total',
    help: 'OTLP trace export requests that failed (their spans are counted in spindle_otel_traces_spans_dropped_total{reason="export_failed"}).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counters?.failedExports ?? 0);
    },
  });
  new Gauge({
    name: 'spindle_otel_traces_queued_spans',
    help: 'Spans waiting for export on the main thread (at most otel.traces.queueSize).',
    registers: [registry],
    collect() {
      this.set(exporter?.queued ?? 0);
    },
  });
}
