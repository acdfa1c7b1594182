// The main thread's span exporter: takes the span records the workers post, holds them in one
// bounded queue (past otel.traces.queueSize they are dropped and counted), and sends them in
// batches over OTLP/HTTP (protobuf) with the official OpenTelemetry exporter, one request at a
// time: a full batch at once, the rest after otel.traces.delay. The OpenTelemetry
// packages load when the feature starts with tracing on (a dynamic import: never in a worker,
// never when tracing is off).
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';

import { lazyImport } from '../../lazy/lazy-import.ts';
import type { Logger } from '../../log/index.ts';
import { readSpans, type SpanPost, type SpanRecord } from './span-record.ts';

export interface ExporterConfig {
  endpoint: string;
  headers: Record<string, string>;
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMs: number;
  exportTimeoutMs: number;
}

/** What the exporter counts (read by the metrics when scraped). */
export interface ExporterCounters {
  exported: number;
  /** Spans dropped, by why: the main thread's queue was full, a worker's was, an export failed. */
  dropped: { queue_full: number; worker_queue_full: number; export_failed: number };
  /** Export requests that failed. */
  failedExports: number;
}

/** The resource's identity: who made the spans (the same resource as the metrics and logs of
 * src/features/otel). */
export interface ServiceIdentity {
  serviceName: string;
  version: string;
  nodeName: string;
  /** otel.resourceAttributes: they cannot replace the three above. */
  attributes: Record<string, string>;
}

const loadSdk = lazyImport('@opentelemetry/exporter-trace-otlp-proto', async () => {
  const [exporter, resources, core, semconv] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  return { OTLPTraceExporter: exporter.OTLPTraceExporter, resourceFromAttributes: resources.resourceFromAttributes, defaultResource: resources.defaultResource, TraceState: core.TraceState, semconv };
});

type Sdk = Awaited<ReturnType<typeof loadSdk>>;

interface Loaded {
  sdk: Sdk;
  exporter: InstanceType<Sdk['OTLPTraceExporter']>;
  resource: Resource;
}

/** Milliseconds since the epoch as OpenTelemetry's [seconds, nanoseconds]. */
export function hrTime(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}

export class SpanExporter {
  readonly counters: ExporterCounters = { exported: 0, dropped: { queue_full: 0, worker_queue_full: 0, export_failed: 0 }, failedExports: 0 };
  private queue: SpanRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private exporting: Promise<void> | null = null;
  private loaded: Promise<Loaded> | null = null;
  private failing = false;
  private closed = false;

  constructor(
    private readonly config: ExporterConfig,
    private readonly identity: ServiceIdentity,
    private readonly log: Logger,
  ) {}

  /** Spans waiting for export. */
  get queued(): number {
    return this.queue.length;
  }

  /** A worker's post (its spans of the last 25 ms at most). */
  take(post: SpanPost): void {
    this.counters.dropped.worker_queue_full += post.dropped;
    if (this.closed) return;
    const room = this.config.maxQueueSize - this.queue.length;
    const spans = post.spans.length === 0 ? [] : readSpans(post.spans);
    if (spans.length > room) {
      this.counters.dropped.queue_full += spans.length - room;
      for (let i = 0; i < room; i++) this.queue.push(spans[i]);
    } else {
      for (const s of spans) this.queue.push(s);
    }
    if (this.queue.length >= this.config.maxExportBatchSize) this.exportNow();
    else if (this.timer === null && this.queue.length > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.exportNow();
      }, this.config.scheduledDelayMs);
      this.timer.unref();
    }
  }

  /** Exports what waits now, one batch after the other (one request at a time). */
  private exportNow(): void {
    if (this.exporting !== null) return;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.queue.length === 0) return;
    this.exporting = this.exportAll().finally(() => {
      this.exporting = null;
      if (this.queue.length > 0 && !this.closed) this.take({ spans: [], dropped: 0 });
    });
  }

  private async exportAll(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.config.maxExportBatchSize);
      await this.send(batch);
      // Less than a batch left: it waits for the next scheduled export.
      if (this.queue.length < this.config.maxExportBatchSize && !this.closed) return;
    }
  }

  /** Loads the SDK now (at start), so that the first sampled messages do not wait for it; a
   * failure is logged here and counted with the spans of the first export. */
  async preload(): Promise<void> {
    try {
      await this.load();
    } catch (err) {
      this.log.error('OpenTelemetry trace exporter not loaded; spans will be dropped', { err });
    }
  }

  private load(): Promise<Loaded> {
    this.loaded ??= loadSdk().then((sdk) => {
      const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = sdk.semconv;
      const resource = sdk.defaultResource().merge(sdk.resourceFromAttributes({
        ...this.identity.attributes,
        [ATTR_SERVICE_NAME]: this.identity.serviceName,
        [ATTR_SERVICE_VERSION]: this.identity.version,
        'service.instance.id': this.identity.nodeName,
      }));
      const exporter = new sdk.OTLPTraceExporter({ url: this.config.endpoint, headers: this.config.headers, timeoutMillis: this.config.exportTimeoutMs });
      return { sdk, exporter, resource };
    });
    return this.loaded;
  }

  private async send(batch: SpanRecord[]): Promise<void> {
    let loaded: Loaded;
    try {
      loaded = await this.load();
    } catch (err) {
      this.failed(batch.length, err);
      return;
    }
    const spans = batch.map((r) => this.readable(r, loaded));
    const result = await new Promise<{ code: number; error?: Error }>((resolve) => loaded.exporter.export(spans, resolve));
    if (result.code === 0) {
      this.counters.exported += batch.length;
      if (this.failing) this.log.info('OpenTelemetry trace export works again', { endpoint: this.config.endpoint });
      this.failing = false;
    } else {
      this.failed(batch.length, result.error);
    }
  }

  private failed(spans: number, err: unknown): void {
    this.counters.failedExports++;
    this.counters.dropped.export_failed += spans;
    // Logged once per run of failures, not per request.
    if (!this.failing) this.log.warn('OpenTelemetry trace export failed; spans dropped until it works again', { endpoint: this.config.endpoint, spans, err });
    this.failing = true;
  }

  /** A span record as the SDK's exporter takes it. */
  private readable(r: SpanRecord, { sdk, resource }: Loaded): ReadableSpan {
    const traceState = r.tracestate === undefined ? undefined : new sdk.TraceState(r.tracestate);
    const context = { traceId: r.traceId, spanId: r.spanId, traceFlags: 1, traceState };
    return {
      name: r.name,
      kind: r.kind,
      spanContext: () => context,
      parentSpanContext: r.parentId === '' ? undefined : { traceId: r.traceId, spanId: r.parentId, traceFlags: 1, isRemote: r.remoteParent },
      startTime: hrTime(r.start),
      endTime: hrTime(r.end),
      duration: hrTime(Math.max(0, r.end - r.start)),
      status: r.error === undefined ? { code: 0 } : { code: 2, message: r.error },
      attributes: r.attributes,
      links: [],
      events: [],
      ended: true,
      resource,
      instrumentationScope: { name: 'spindle', version: this.identity.version },
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  }

  /** Exports what waits (at most `timeoutMs`), then stops. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const flush = (async () => {
      if (this.exporting !== null) await this.exporting;
      this.closed = true;
      while (this.queue.length > 0) await this.send(this.queue.splice(0, this.config.maxExportBatchSize));
      if (this.loaded !== null) await (await this.loaded).exporter.shutdown();
    })().catch((err: unknown) => this.log.warn('OpenTelemetry trace export on stop failed', { err }));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([flush, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    this.closed = true;
  }
}
