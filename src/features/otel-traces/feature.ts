// OpenTelemetry traces of a message's path (otel.traces.*): the workers sample PUBLISHes and
// record their spans (worker-otel-traces.ts, built by the worker from the configuration); this
// main-thread half takes what they post (every 25 ms at most) and exports it over OTLP/HTTP
// (exporter.ts). Off (the default), nothing is taken and the SDK is never loaded.
import { VERSION } from '../../install/root.ts';
import type { Feature } from '../feature.ts';
import { SpanExporter } from './exporter.ts';
import { registerOtelTraceMetrics } from './metrics.ts';

export interface OtelTraces {
  readonly enabled: boolean;
  /** The exporter's counters; null when tracing is off. */
  readonly exporter: SpanExporter | null;
}

export const otelTraces: Feature<OtelTraces> = {
  name: 'otel-traces',
  async start(ctx) {
    const c = ctx.config.otel.traces;
    const exporter = c.enabled
      ? new SpanExporter({
        endpoint: c.endpoint,
        headers: c.headers,
        maxQueueSize: c.queueSize,
        maxExportBatchSize: c.batchSize,
        scheduledDelayMs: c.delay,
        exportTimeoutMs: c.timeout,
      }, { serviceName: ctx.config.otel.serviceName, version: VERSION, nodeName: ctx.broker.nodeName, attributes: ctx.config.otel.resourceAttributes }, ctx.log)
      : null;
    registerOtelTraceMetrics(ctx.registry, exporter);
    if (exporter !== null) {
      await exporter.preload();
      ctx.workers.onOtelSpans((post) => exporter.take(post));
      ctx.log.info('OpenTelemetry traces on', { endpoint: c.endpoint, sampleRatio: c.sampleRatio, parentBased: c.parentBased });
    }
    return {
      api: { enabled: exporter !== null, exporter },
      close: () => exporter?.close(),
    };
  },
};
