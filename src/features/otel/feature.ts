// The OpenTelemetry export of metrics and logs (docs/features/opentelemetry.md): with
// otel.metrics.enabled, the series of /prometheus go over OTLP/HTTP protobuf every
// otel.metrics.interval seconds; with otel.logs.enabled, every log line of the node (main thread
// and workers) at otel.logs.level and above goes as an OTLP log record. The SDK (sdk.ts) loads
// only when one is on, on the main thread; the workers know nothing of it. First in the
// FEATURES list: its log sink sees the other features start, and it stops last, sending what
// is left.
import type { Feature } from '../feature.ts';
import { lazyImport } from '../../lazy/lazy-import.ts';
import { VERSION } from '../../install/root.ts';
import { OtelMetrics, type OtelSignal } from './metrics.ts';
import { ExportOutcomes } from './export-outcomes.ts';

const loadSdk = lazyImport('the OpenTelemetry SDK', () => import('./sdk.ts'));

/** What is exported (both false: nothing was loaded). */
export interface OtelExport {
  readonly metrics: boolean;
  readonly logs: boolean;
}

export const otel: Feature<OtelExport> = {
  name: 'otel',
  async start(ctx) {
    const c = ctx.config.otel;
    const signals: OtelSignal[] = [];
    if (c.metrics.enabled) signals.push('metrics');
    if (c.logs.enabled) signals.push('logs');
    if (signals.length === 0) return { api: { metrics: false, logs: false } };
    const sdk = await loadSdk();
    const resource = sdk.nodeResource({ serviceName: c.serviceName, version: VERSION, nodeName: ctx.broker.nodeName, attributes: c.resourceAttributes });
    let logQueue = () => 0;
    const metrics = new OtelMetrics(ctx.registry, signals, () => logQueue());
    const closers: (() => Promise<void> | void)[] = [];

    if (c.metrics.enabled) {
      const m = c.metrics;
      const exporting = sdk.startMetricsExport({
        target: { endpoint: m.endpoint, headers: m.headers, timeout: m.timeout },
        intervalMs: m.interval * 1000,
        resource,
        series: () => ctx.metrics.series(),
        // The counters count from the process's start.
        startMs: performance.timeOrigin,
        outcomes: new ExportOutcomes('metrics', m.endpoint, metrics, ctx.log),
        onCollectFailure: (err) => {
          metrics.collectFailures.inc();
          ctx.log.debug('metrics not collected for OTLP export', { err });
        },
      });
      closers.push(() => exporting.close());
      ctx.log.info('exporting metrics over OTLP', { endpoint: m.endpoint, interval: m.interval });
    }

    if (c.logs.enabled) {
      const l = c.logs;
      const outcomes = new ExportOutcomes('logs', l.endpoint, metrics, ctx.log);
      const exporting = sdk.startLogsExport({
        target: { endpoint: l.endpoint, headers: l.headers, timeout: l.timeout },
        queueSize: l.queueSize,
        level: l.level,
        nodeName: ctx.broker.nodeName,
        resource,
        events: {
          exported(records) {
            metrics.logRecordsExported.inc(records);
            outcomes.succeeded();
          },
          dropped(records, reason, err) {
            metrics.logRecordsDropped.inc({ reason }, records);
            if (reason === 'export_failed') outcomes.failed(err);
          },
        },
      });
      logQueue = exporting.queued;
      const detach = ctx.logLines(exporting.sink);
      closers.push(async () => {
        detach();
        await exporting.close();
      });
      ctx.log.info('exporting logs over OTLP', { endpoint: l.endpoint, level: l.level });
    }

    return {
      api: { metrics: c.metrics.enabled, logs: c.logs.enabled },
      async close() {
        for (const close of closers.reverse()) {
          try {
            await close();
          } catch (err) {
            ctx.log.warn('OTLP export did not stop cleanly', { err });
          }
        }
      },
    };
  },
};
