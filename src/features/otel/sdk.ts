// Owns the OpenTelemetry SDK objects of this node's export (main thread): the resource, the
// metric export (a MeterProvider whose PeriodicExportingMetricReader asks PrometheusProducer for
// the node's series and posts them with the OTLP/HTTP protobuf exporter) and the log export (a
// LoggerProvider whose processor is the bounded LogQueue, posting with the OTLP/HTTP protobuf
// exporter). The feature loads this file, and the SDK with it, only when an export is on; a
// worker thread never does.
import { ExportResultCode } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { AggregationTemporality, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { LoggerProvider } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';

import type { LogLevel } from '../../log/index.ts';
import { PrometheusProducer, type PromSeries } from './metric-bridge.ts';
import { LogQueue, type LogQueueEvents } from './log-queue.ts';
import { lineRecord } from './log-records.ts';
import type { ExportOutcomes } from './export-outcomes.ts';

/** service.instance.id (incubating in the semantic conventions, so spelled here). */
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id';

/** The resource of everything this node exports: the SDK's telemetry.sdk.* attributes, the
 * operator's, then service.name, service.version and service.instance.id (the node's name). */
export function nodeResource(o: { serviceName: string; version: string; nodeName: string; attributes: Record<string, string> }): Resource {
  return defaultResource().merge(resourceFromAttributes({
    ...o.attributes,
    [ATTR_SERVICE_NAME]: o.serviceName,
    [ATTR_SERVICE_VERSION]: o.version,
    [ATTR_SERVICE_INSTANCE_ID]: o.nodeName,
  }));
}

export interface ExportTarget {
  endpoint: string;
  headers: Record<string, string>;
  /** Milliseconds a request may take. */
  timeout: number;
}

export interface Stoppable {
  /** Exports what is left, then stops the exporter. */
  close(): Promise<void>;
}

/** Passes each export on, telling `outcomes` how it went. */
class CountedMetricExporter implements PushMetricExporter {
  constructor(private readonly inner: OTLPMetricExporter, private readonly outcomes: ExportOutcomes) {}

  export(...[metrics, done]: Parameters<PushMetricExporter['export']>): void {
    this.inner.export(metrics, (result) => {
      if (result.code === ExportResultCode.SUCCESS) this.outcomes.succeeded();
      else this.outcomes.failed(result.error);
      done(result);
    });
  }

  selectAggregationTemporality(...args: Parameters<NonNullable<PushMetricExporter['selectAggregationTemporality']>>): AggregationTemporality {
    return this.inner.selectAggregationTemporality(...args);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/** Exports the node's series every `intervalMs` (and once more on close). */
export function startMetricsExport(o: {
  target: ExportTarget;
  intervalMs: number;
  resource: Resource;
  series: () => Promise<PromSeries[]>;
  /** When the counters started (ms since the epoch): the start of the cumulative sums. */
  startMs: number;
  outcomes: ExportOutcomes;
  onCollectFailure: (err: unknown) => void;
}): Stoppable {
  // The reader refuses a timeout longer than its interval: a request never outlives its turn.
  const timeout = Math.min(o.target.timeout, o.intervalMs);
  const exporter = new OTLPMetricExporter({ url: o.target.endpoint, headers: { ...o.target.headers }, timeoutMillis: timeout, temporalityPreference: AggregationTemporality.CUMULATIVE });
  const reader = new PeriodicExportingMetricReader({
    exporter: new CountedMetricExporter(exporter, o.outcomes),
    exportIntervalMillis: o.intervalMs,
    exportTimeoutMillis: timeout,
    metricProducers: [new PrometheusProducer(o.series, o.resource, o.startMs, o.onCollectFailure)],
  });
  const provider = new MeterProvider({ resource: o.resource, readers: [reader] });
  return { close: () => provider.shutdown() };
}

/** Exports the node's log lines at `level` and above, as records of the node's resource. */
export function startLogsExport(o: {
  target: ExportTarget;
  queueSize: number;
  level: LogLevel;
  nodeName: string;
  resource: Resource;
  events: LogQueueEvents;
}): Stoppable & { queued(): number; sink(line: string, thread: string): void } {
  const exporter = new OTLPLogExporter({ url: o.target.endpoint, headers: { ...o.target.headers }, timeoutMillis: o.target.timeout });
  const queue = new LogQueue(exporter, o.queueSize, o.events);
  const provider = new LoggerProvider({ resource: o.resource, processors: [queue] });
  const logger = provider.getLogger('spindle');
  return {
    queued: () => queue.size,
    sink(line, thread) {
      const r = lineRecord(line, thread, o.nodeName, o.level);
      if (r === null) return;
      if (queue.full) {
        o.events.dropped(1, 'queue_full');
        return;
      }
      logger.emit({ timestamp: r.timestamp, severityNumber: r.severityNumber, severityText: r.severityText, body: r.body, attributes: r.attributes });
    },
    close: () => provider.shutdown(),
  };
}
