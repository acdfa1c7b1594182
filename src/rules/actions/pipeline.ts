// Owns the delivery of one rule action's outputs to its source (main thread; one pipeline per rule
// and action): a bounded queue (queueLimit outputs, counting the batch being written; past it new
// outputs are dropped and counted), one consumer that writes batches of up to maxBatch, and the
// retry policy: a transient failure (or a source that is missing or down) retries the same batch
// with backoff (100 ms doubling to 1 s) while new outputs queue up; a refused batch is counted
// failed and the next one goes. push() never throws and never waits. Delivery is at least once:
// a write that timed out may have landed and is written again.
import type { Logger } from '../../log/index.ts';
import { Backoff } from '../../sources/backoff.ts';
import { SourceError, type AnySource } from '../../sources/types.ts';
import { PartialWriteError, type CompiledAction, type Output } from './types.ts';

export interface ActionStats {
  /** Outputs written. */
  success: number;
  /** Outputs refused by the source (non-transient errors). */
  failed: number;
  /** Outputs dropped: queue full, or still queued when close() gave up. */
  dropped: number;
  /** Outputs waiting now, the batch being written included. */
  queued: number;
  /** Write attempts repeated after a transient failure. */
  retries: number;
  /** Writes that completed (each carries up to maxBatch outputs). */
  batches: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

export interface PipelineOptions {
  ruleId: string;
  /** The action's position in the rule. */
  index: number;
  action: CompiledAction;
  sources: { get(id: string): AnySource | undefined };
  /** Most outputs held (default 10 000). */
  queueLimit?: number;
  log: Logger;
  /** Called when the counters changed (after a batch, a drop, a close). */
  onStats?: (stats: ActionStats) => void;
  /** Retry delays; default 100 ms doubling to 1 s (a target back is written to within about a second). */
  backoff?: Backoff;
}

/** A refused output is logged at most this often (with the count since the last line). */
const FAILURE_LOG_INTERVAL_MS = 10_000;
/** The consumed head of the queue is cut off once this long. */
const COMPACT_AT = 4096;

export class ActionPipeline {
  private readonly queue: Output[] = [];
  private head = 0;
  private inBatch = 0;
  private readonly limit: number;
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private running = false;
  private closing = false;
  private gaveUp = false;
  private retrying = false;
  private wake: (() => void) | null = null;
  private drained: (() => void) | null = null;
  private lastFailureLog = 0;
  private failuresSinceLog = 0;
  private counters = { success: 0, failed: 0, dropped: 0, retries: 0, batches: 0 };
  private lastError: string | null = null;
  private lastErrorAt: string | null = null;

  constructor(private readonly options: PipelineOptions) {
    this.limit = options.queueLimit ?? 10_000;
    this.backoff = options.backoff ?? new Backoff(100, 1000);
    this.log = options.log.child({ rule: options.ruleId, action: options.index, source: options.action.sourceId });
  }

  push(outputs: readonly Output[]): void {
    if (outputs.length === 0) return;
    if (this.closing) {
      this.drop(outputs.length);
      return;
    }
    const room = Math.max(0, this.limit - this.queued());
    const n = Math.min(room, outputs.length);
    for (let i = 0; i < n; i++) this.queue.push(outputs[i]);
    if (n < outputs.length) this.drop(outputs.length - n);
    if (!this.running && n > 0) void this.run();
  }

  stats(): ActionStats {
    return { ...this.counters, queued: this.queued(), lastError: this.lastError, lastErrorAt: this.lastErrorAt };
  }

  /** Stops accepting outputs and writes what is queued until `drainMs` passes; what is left then is dropped. */
  async close(drainMs = 5000): Promise<void> {
    this.closing = true;
    if (!this.running) return;
    let timer: NodeJS.Timeout | undefined;
    const drained = new Promise<void>((resolve) => (this.drained = resolve));
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)));
    await Promise.race([drained, deadline]);
    clearTimeout(timer);
    if (!this.running) return;
    this.gaveUp = true;
    this.drop(this.queue.length - this.head);
    this.queue.length = 0;
    this.head = 0;
    if (this.wake) {
      // Waiting to retry a batch: it is dropped now (a write in flight is counted when it lands).
      this.drop(this.inBatch);
      this.inBatch = 0;
      this.wake();
    }
  }

  private queued(): number {
    return this.queue.length - this.head + this.inBatch;
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > this.head && !this.gaveUp) {
        const batch = this.take(this.options.action.maxBatch);
        this.inBatch = batch.length;
        await this.deliver(batch);
        this.inBatch = 0;
      }
    } finally {
      this.inBatch = 0;
      this.running = false;
      this.drained?.();
    }
  }

  private take(n: number): Output[] {
    const batch = this.queue.slice(this.head, this.head + n);
    this.head += batch.length;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AT) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    return batch;
  }

  /** Writes one batch until it is written, refused, or close() gives up on it. */
  private async deliver(batch: Output[]): Promise<void> {
    let pending: readonly Output[] = batch;
    for (;;) {
      const source = this.options.sources.get(this.options.action.sourceId);
      let error: unknown;
      if (source === undefined) {
        error = new SourceError(`source ${this.options.action.sourceId} does not exist`, 'other', true);
      } else {
        try {
          await this.options.action.write(source, pending);
          this.written(pending.length);
          return;
        } catch (err) {
          error = err;
        }
      }
      if (error instanceof PartialWriteError) {
        this.written(pending.length - error.refused - error.retry.length);
        if (error.refused > 0) this.refused(error.refused, error.refusedError);
        if (error.retry.length === 0) return;
        pending = error.retry;
        error = error.retryError;
      } else if (!this.retryable(error, source)) {
        this.refused(pending.length, error);
        return;
      }
      if (this.gaveUp) {
        // The write was in flight when close() gave up: no more retries.
        this.drop(pending.length);
        return;
      }
      this.counters.retries++;
      this.noteError(error);
      if (!this.retrying) {
        this.retrying = true;
        this.log.warn('action write failed, retrying with backoff', { error: messageOf(error), outputs: pending.length });
      }
      this.notify();
      await this.sleep(this.backoff.next());
      if (this.gaveUp) return; // close() counted this batch as dropped when it woke us
    }
  }

  /** Transient errors, and any error while the source is missing or down (auth refused, unreachable). */
  private retryable(error: unknown, source: AnySource | undefined): boolean {
    if (error instanceof SourceError && error.transient) return true;
    return source === undefined || source.health().state === 'down';
  }

  private written(n: number): void {
    if (n === 0) return;
    this.counters.success += n;
    this.counters.batches++;
    this.backoff.reset();
    if (this.retrying) {
      this.retrying = false;
      this.log.info('action writes again');
    }
    this.notify();
  }

  private refused(n: number, error: unknown): void {
    this.counters.failed += n;
    this.noteError(error);
    this.failuresSinceLog += n;
    const now = Date.now();
    if (now - this.lastFailureLog >= FAILURE_LOG_INTERVAL_MS) {
      this.log.warn('action outputs refused by the source', { error: messageOf(error), outputs: this.failuresSinceLog });
      this.lastFailureLog = now;
      this.failuresSinceLog = 0;
    }
    this.notify();
  }

  private drop(n: number): void {
    if (n <= 0) return;
    this.counters.dropped += n;
    this.notify();
  }

  private noteError(error: unknown): void {
    this.lastError = messageOf(error);
    this.lastErrorAt = new Date().toISOString();
  }

  private notify(): void {
    this.options.onStats?.(this.stats());
  }

  /** Waits `ms`, or less when close() gives up. */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
