// The main thread's span exporter: takes the span records the workers post, holds them in one
// bounded queue (past otel.traces.queueSize they are dropped and counted), and sends them in
// batches over OTLP/HTTP (protobuf), one request at a time: a full batch at once, the rest after
// otel.traces.delay. The request body is written by otlp-encode.ts, not by the SDK's exporter (it
// cost about 13 µs a span, see there); the resource is the SDK's, as for the metrics and logs
// (src/features/otel), loaded when the feature starts with tracing on (never in a worker, never
// when tracing is off).
import http from 'node:http';
import https from 'node:https';

import { lazyImport } from '../../lazy/lazy-import.ts';
import type { Logger } from '../../log/index.ts';
import type { SpanPost } from './span-record.ts';
import { OtlpTraceEncoder, type PendingSpans } from './otlp-encode.ts';

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

const loadResource = lazyImport('@opentelemetry/resources', async () => {
  const [resources, semconv] = await Promise.all([import('@opentelemetry/resources'), import('@opentelemetry/semantic-conventions')]);
  return { resourceFromAttributes: resources.resourceFromAttributes, defaultResource: resources.defaultResource, semconv };
});

interface Loaded {
  encoder: OtlpTraceEncoder;
}

/** The answer of one export request. */
interface Outcome {
  ok: boolean;
  error?: Error;
}

/** Milliseconds since the epoch as OpenTelemetry's [seconds, nanoseconds]. */
export function hrTime(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}

export class SpanExporter {
  readonly counters: ExporterCounters = { exported: 0, dropped: { queue_full: 0, worker_queue_full: 0, export_failed: 0 }, failedExports: 0 };
  /** Posts waiting for export, oldest first, and the spans in them. */
  private queue: PendingSpans[] = [];
  private queuedSpans = 0;
  private timer: NodeJS.Timeout | null = null;
  private exporting: Promise<void> | null = null;
  private loaded: Promise<Loaded> | null = null;
  private failing = false;
  private agent: http.Agent | null = null;
  private closed = false;

  constructor(
    private readonly config: ExporterConfig,
    private readonly identity: ServiceIdentity,
    private readonly log: Logger,
  ) {}

  /** Spans waiting for export. */
  get queued(): number {
    return this.queuedSpans;
  }

  /** A worker's post (its spans of the last 25 ms at most). Kept as it came: its spans are
   * encoded from its bytes when they leave (otlp-encode.ts). A post past the queue's room is
   * dropped whole and counted. */
  take(post: SpanPost): void {
    this.counters.dropped.worker_queue_full += post.dropped;
    if (this.closed) return;
    if (post.count > 0) {
      if (this.queuedSpans + post.count > this.config.maxQueueSize) {
        this.counters.dropped.queue_full += post.count;
      } else {
        const b = post.spans;
        this.queue.push({ bytes: Buffer.from(b.buffer, b.byteOffset, b.byteLength), at: 0, left: post.count });
        this.queuedSpans += post.count;
      }
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.queuedSpans >= this.config.maxExportBatchSize) this.exportNow();
    else if (this.timer === null && this.queuedSpans > 0) {
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
    if (this.queuedSpans === 0) return;
    this.exporting = this.exportAll().finally(() => {
      this.exporting = null;
      if (this.queuedSpans > 0 && !this.closed) this.schedule();
    });
  }

  private async exportAll(): Promise<void> {
    while (this.queuedSpans > 0) {
      await this.sendBatch();
      // Less than a batch left: it waits for the next scheduled export.
      if (this.queuedSpans < this.config.maxExportBatchSize && !this.closed) return;
    }
  }

  /** Encodes the next batch (at most maxExportBatchSize spans) off the queue and sends it. */
  private async sendBatch(): Promise<void> {
    let loaded: Loaded;
    try {
      loaded = await this.load();
    } catch (err) {
      const spans = this.queuedSpans;
      this.queue = [];
      this.queuedSpans = 0;
      this.failed(spans, err);
      return;
    }
    const { body, spans } = loaded.encoder.encodePosts(this.queue, this.config.maxExportBatchSize);
    while (this.queue.length > 0 && this.queue[0].left === 0) this.queue.shift();
    this.queuedSpans -= spans;
    await this.send(body, spans);
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
    this.loaded ??= loadResource().then((sdk) => {
      const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = sdk.semconv;
      const resource = sdk.defaultResource().merge(sdk.resourceFromAttributes({
        ...this.identity.attributes,
        [ATTR_SERVICE_NAME]: this.identity.serviceName,
        [ATTR_SERVICE_VERSION]: this.identity.version,
        'service.instance.id': this.identity.nodeName,
      }));
      const attributes: Record<string, string | number | boolean> = {};
      for (const [k, v] of Object.entries(resource.attributes)) {
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') attributes[k] = v;
      }
      return { encoder: new OtlpTraceEncoder({ resource: attributes, scopeName: 'spindle', scopeVersion: this.identity.version }) };
    });
    return this.loaded;
  }

  private async send(body: Buffer, spans: number): Promise<void> {
    const result = await this.post(body);
    if (result.ok) {
      this.counters.exported += spans;
      if (this.failing) this.log.info('OpenTelemetry trace export works again', { endpoint: this.config.endpoint });
      this.failing = false;
    } else {
      this.failed(spans, result.error);
    }
  }

  /** One OTLP/HTTP request (keep-alive): a 2xx answer is a success, anything else a failure. */
  private post(body: Buffer): Promise<Outcome> {
    const url = new URL(this.config.endpoint);
    const client = url.protocol === 'https:' ? https : http;
    this.agent ??= new client.Agent({ keepAlive: true, maxSockets: 1 });
    return new Promise((resolve) => {
      const req = client.request(url, {
        method: 'POST',
        agent: this.agent!,
        headers: { ...this.config.headers, 'content-type': 'application/x-protobuf', 'content-length': body.length },
        timeout: this.config.exportTimeoutMs,
      }, (res) => {
        res.resume();
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          resolve(code >= 200 && code < 300 ? { ok: true } : { ok: false, error: new Error(`the receiver answered ${code}`) });
        });
        res.on('error', (error) => resolve({ ok: false, error }));
      });
      req.on('timeout', () => req.destroy(new Error(`no answer in ${this.config.exportTimeoutMs} ms`)));
      req.on('error', (error) => resolve({ ok: false, error }));
      req.end(body);
    });
  }

  private failed(spans: number, err: unknown): void {
    this.counters.failedExports++;
    this.counters.dropped.export_failed += spans;
    // Logged once per run of failures, not per request.
    if (!this.failing) this.log.warn('OpenTelemetry trace export failed; spans dropped until it works again', { endpoint: this.config.endpoint, spans, err });
    this.failing = true;
  }

  /** Exports what waits (at most `timeoutMs`), then stops. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const flush = (async () => {
      if (this.exporting !== null) await this.exporting;
      this.closed = true;
      while (this.queuedSpans > 0) await this.sendBatch();
    })().catch((err: unknown) => this.log.warn('OpenTelemetry trace export on stop failed', { err }));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([flush, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    this.closed = true;
    this.agent?.destroy();
  }
}
