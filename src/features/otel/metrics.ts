// Owns the Prometheus counters of the OpenTelemetry export (main thread): export requests and
// their failures per signal, the metric collections that failed, and the log records exported
// and dropped. Registered only when an export is on.
import { Counter, Gauge, type Registry } from 'prom-client';

export type OtelSignal = 'metrics' | 'logs';

export class OtelMetrics {
  readonly exports: Counter<'signal'>;
  readonly failures: Counter<'signal'>;
  readonly collectFailures: Counter;
  readonly logRecordsExported: Counter;
  readonly logRecordsDropped: Counter<'reason'>;

  constructor(registry: Registry, signals: readonly OtelSignal[], logQueue: () => number) {
    this.exports = new Counter({ name: 'spindle_otel_exports_total', help: 'OTLP export requests completed (succeeded or failed), by signal: metrics or logs.', labelNames: ['signal'], registers: [registry] });
    this.failures = new Counter({ name: 'spindle_otel_export_failures_total', help: 'OTLP export requests that failed (receiver unreachable, refusing, or past otel.<signal>.timeout), by signal.', labelNames: ['signal'], registers: [registry] });
    this.collectFailures = new Counter({ name: 'spindle_otel_metrics_collect_failures_total', help: 'Metric exports skipped because the metrics could not be collected (a worker did not answer).', registers: [registry] });
    this.logRecordsExported = new Counter({ name: 'spindle_otel_log_records_exported_total', help: 'Log records the OTLP receiver accepted.', registers: [registry] });
    this.logRecordsDropped = new Counter({ name: 'spindle_otel_log_records_dropped_total', help: 'Log records not exported, by reason: queue_full (otel.logs.queueSize records were waiting) or export_failed (their export request failed; not retried).', labelNames: ['reason'], registers: [registry] });
    new Gauge({ name: 'spindle_otel_log_queue_records', help: 'Log records waiting for export (at most otel.logs.queueSize).', registers: [registry], collect() { this.set(logQueue()); } });
    for (const signal of signals) {
      this.exports.inc({ signal }, 0);
      this.failures.inc({ signal }, 0);
    }
    if (signals.includes('logs')) for (const reason of ['queue_full', 'export_failed']) this.logRecordsDropped.inc({ reason }, 0);
  }
}
