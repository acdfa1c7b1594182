// WorkerOverload: overload protection's half on a worker thread (owned by it). Every
// marks.sampleMs it measures the worker's event-loop delay (perf_hooks monitorEventLoopDelay,
// the 99th percentile since the last sample), its V8 heap used and the process's RSS. Past a
// high-water mark the worker is overloaded: its CONNECT handler refuses new clients with 0x89
// Server busy (3 on MQTT 3.1.1) through `flag`, and with shedQos0 the outbox drops QoS 0
// deliveries to slow clients (`shedding`); once every measure is back below its low-water mark
// it accepts again (hysteresis). Connected clients are served throughout.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

import type { OverloadMarks, OverloadReason, WorkerOverloadStatus } from './types.ts';

const MB = 1024 * 1024;

export class WorkerOverload {
  /** Read by the CONNECT handler (HandlerHost.overload). */
  readonly flag = { refusing: false, refused: 0 };
  /** Read by the outbox (Shedding). */
  readonly shedding = { on: false, shed: 0 };
  private marks: OverloadMarks;
  private readonly delay: IntervalHistogram;
  private timer: NodeJS.Timeout | null = null;
  private reasons: OverloadReason[] = [];
  private since = new Date().toISOString();
  private episodes = 0;
  private lagMs = 0;
  private heapUsed = 0;
  private rss = 0;

  constructor(readonly worker: number, marks: OverloadMarks, private readonly onChange: (overloaded: boolean, status: WorkerOverloadStatus) => void = () => {}) {
    this.marks = marks;
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.apply(marks);
  }

  /** New marks (the configuration, or PUT /api/overload/marks through the worker state). */
  setMarks(marks: OverloadMarks): void {
    this.marks = marks;
    this.apply(marks);
  }

  private apply(marks: OverloadMarks): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (!marks.enabled) {
      this.delay.disable();
      this.enter(false, []);
      return;
    }
    this.delay.enable();
    this.timer = setInterval(() => this.sample(), marks.sampleMs);
    this.timer.unref();
    // With marks that no longer hold the current measures, the state follows at the next sample.
    this.shedding.on = this.flag.refusing && marks.shedQos0;
  }

  /** Measures and moves between normal and overloaded (also called by tests). */
  sample(): void {
    const m = this.marks;
    this.lagMs = this.delay.count > 0 ? this.delay.percentile(99) / 1e6 : 0;
    this.delay.reset();
    this.heapUsed = getHeapStatistics().used_heap_size;
    this.rss = process.memoryUsage.rss();
    const heapMB = this.heapUsed / MB;
    const rssMB = this.rss / MB;
    if (!this.flag.refusing) {
      const over: OverloadReason[] = [];
      if (this.lagMs > m.lagHighMs) over.push('lag');
      if (m.heapHighMB > 0 && heapMB > m.heapHighMB) over.push('heap');
      if (m.rssHighMB > 0 && rssMB > m.rssHighMB) over.push('rss');
      if (over.length > 0) this.enter(true, over);
    } else {
      const stillLag = this.lagMs > m.lagLowMs;
      const stillHeap = m.heapHighMB > 0 && heapMB > m.heapLowMB;
      const stillRss = m.rssHighMB > 0 && rssMB > m.rssLowMB;
      if (!stillLag && !stillHeap && !stillRss) this.enter(false, []);
    }
  }

  private enter(overloaded: boolean, reasons: OverloadReason[]): void {
    const was = this.flag.refusing;
    this.flag.refusing = overloaded;
    this.shedding.on = overloaded && this.marks.shedQos0;
    this.reasons = reasons;
    if (was === overloaded) return;
    this.since = new Date().toISOString();
    if (overloaded) this.episodes++;
    this.onChange(overloaded, this.status());
  }

  status(): WorkerOverloadStatus {
    return {
      worker: this.worker,
      state: this.flag.refusing ? 'overloaded' : 'normal',
      reasons: [...this.reasons],
      since: this.since,
      lagMs: Math.round(this.lagMs * 10) / 10,
      heapUsedBytes: this.heapUsed || getHeapStatistics().used_heap_size,
      rssBytes: this.rss || process.memoryUsage.rss(),
      refused: this.flag.refused,
      shed: this.shedding.shed,
      episodes: this.episodes,
    };
  }

  /**
   * Testing only (overload.debugBusy): for `totalMs`, blocks the event loop `blockMs` at a time
   * with a short break between blocks, so the worker lags while its clients are still served.
   */
  busy(totalMs: number, blockMs: number): void {
    const end = Date.now() + totalMs;
    const step = (): void => {
      const start = Date.now();
      if (start >= end) return;
      while (Date.now() - start < blockMs) { /* busy: the lag under test */ }
      setTimeout(step, 20);
    };
    setTimeout(step, 0);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.delay.disable();
  }
}
