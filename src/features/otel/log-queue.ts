// Owns the queue of log records waiting for OTLP export (main thread): bounded (a record past
// the bound is dropped and counted, never blocking the logger), sent in batches of at most
// BATCH_SIZE, one request at a time, EXPORT_DELAY_MS after the first record waits (at once when a
// batch is full). A batch whose export fails is dropped and counted, not retried: the log lines
// are also on stdout and in the log store. On shutdown what waits is sent, unless a request fails
// then. The SDK's LogRecordProcessor: LoggerProvider hands it each record.
import { ExportResultCode } from '@opentelemetry/core';
import type { LogRecordExporter, LogRecordProcessor, ReadableLogRecord, SdkLogRecord } from '@opentelemetry/sdk-logs';

/** Records per export request at most. */
export const BATCH_SIZE = 512;
/** How long the first waiting record waits for others before a request goes. */
export const EXPORT_DELAY_MS = 1000;

export interface LogQueueEvents {
  exported(records: number): void;
  /** `records` were dropped: the queue was full, or their export failed (`err`). */
  dropped(records: number, reason: 'queue_full' | 'export_failed', err?: unknown): void;
}

export class LogQueue implements LogRecordProcessor {
  private queue: ReadableLogRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The request on its way (one at a time). */
  private sending: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly exporter: LogRecordExporter, private readonly limit: number, private readonly events: LogQueueEvents) {}

  /** Records waiting (not yet in a request). */
  get size(): number {
    return this.queue.length;
  }

  /** Whether another record would be dropped: the caller may skip building it. */
  get full(): boolean {
    return this.queue.length >= this.limit;
  }

  onEmit(record: SdkLogRecord): void {
    if (this.closed) return;
    if (this.queue.length >= this.limit) {
      this.events.dropped(1, 'queue_full');
      return;
    }
    this.queue.push(record);
    if (this.queue.length >= BATCH_SIZE) this.sendNext();
    else this.timer ??= setTimeout(() => {
      this.timer = null;
      this.sendNext();
    }, EXPORT_DELAY_MS).unref();
  }

  /** Sends one batch unless one is on its way; the next follows when it is done. */
  private sendNext(): void {
    if (this.sending !== null || this.queue.length === 0) return;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.queue.splice(0, BATCH_SIZE);
    this.sending = new Promise<boolean>((resolve) => {
      this.exporter.export(batch, (result) => {
        if (result.code === ExportResultCode.SUCCESS) this.events.exported(batch.length);
        else this.events.dropped(batch.length, 'export_failed', result.error);
        resolve(result.code === ExportResultCode.SUCCESS);
      });
    }).then((sent) => {
      this.sending = null;
      if (!sent && this.closed && this.queue.length > 0) {
        // Stopping, and the receiver failed: the rest would fail too, each after its timeout.
        const left = this.queue.length;
        this.queue = [];
        this.events.dropped(left, 'export_failed');
        return;
      }
      if (this.queue.length >= BATCH_SIZE || (this.closed && this.queue.length > 0)) this.sendNext();
      else if (this.queue.length > 0) this.timer ??= setTimeout(() => {
        this.timer = null;
        this.sendNext();
      }, EXPORT_DELAY_MS).unref();
    });
  }

  /** Sends every record waiting now; resolves once their requests are done. */
  async forceFlush(): Promise<void> {
    while (this.sending !== null || this.queue.length > 0) {
      if (this.sending === null) this.sendNext();
      await this.sending;
    }
  }

  /** Takes no more records, sends those waiting (all dropped once a request fails: the stop
   * waits for the request on its way and one more at most), and shuts the exporter down. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.forceFlush();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.exporter.shutdown();
  }
}
