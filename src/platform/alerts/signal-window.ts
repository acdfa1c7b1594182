// SignalWindow (main thread): the recent values of each watched series (one per rule and target:
// the broker, an organization or an application), kept for that series' window and no longer,
// and what the rules compute over them: rate and increase for counters (a reset, a value below
// the one before, counts as a restart from zero), avg, max, min and last for gauges.
//
// Memory is bounded per series: samples fall in at most `maxBuckets` buckets spanning the window
// (a bucket keeps count, sum, min, max, first and last value, and the counter increase inside
// it), so a 24 h window read every second costs the same as one read every two minutes; buckets
// older than the window are dropped at every append, and a series nobody appended to for a whole
// window is dropped by prune().
import type { Aggregation } from './types.ts';

export const DEFAULT_MAX_BUCKETS = 600;

interface Bucket {
  /** Time of its first and last sample (ms). */
  start: number;
  end: number;
  first: number;
  last: number;
  min: number;
  max: number;
  sum: number;
  count: number;
  /** Counter increase between the samples inside this bucket. */
  increase: number;
}

interface Series {
  windowMs: number;
  widthMs: number;
  buckets: Bucket[];
}

/** How much a counter went up from `before` to `after`: after a reset, the new value itself. */
export function counterIncrease(before: number, after: number): number {
  return after >= before ? after - before : after;
}

export class SignalWindow {
  private readonly series = new Map<string, Series>();
  private readonly maxBuckets: number;

  constructor(options: { maxBuckets?: number } = {}) {
    this.maxBuckets = Math.max(1, options.maxBuckets ?? DEFAULT_MAX_BUCKETS);
  }

  /** Adds a value of series `key` (kept `windowMs`) read at `time`. A value not newer than the
   * series' last one is ignored (time never goes back within a series). A series appended with
   * another window than before starts over (its rule changed what it measures). */
  append(key: string, windowMs: number, time: number, value: number): void {
    if (!Number.isFinite(value) || !Number.isFinite(time)) return;
    let s = this.series.get(key);
    if (s === undefined || s.windowMs !== windowMs) {
      s = { windowMs, widthMs: Math.max(1, Math.ceil(windowMs / this.maxBuckets)), buckets: [] };
      this.series.set(key, s);
    }
    const b = s.buckets.at(-1);
    if (b !== undefined && time <= b.end) return;
    if (b !== undefined && time - b.start < s.widthMs) {
      b.increase += counterIncrease(b.last, value);
      b.end = time;
      b.last = value;
      if (value < b.min) b.min = value;
      if (value > b.max) b.max = value;
      b.sum += value;
      b.count++;
    } else {
      s.buckets.push({ start: time, end: time, first: value, last: value, min: value, max: value, sum: value, count: 1, increase: 0 });
    }
    const cutoff = time - windowMs;
    let old = 0;
    while (old < s.buckets.length && s.buckets[old].start < cutoff) old++;
    if (old > 0) s.buckets.splice(0, old);
  }

  /**
   * `aggregation` of series `key` over the window ending at `time`; undefined while there are too
   * few samples: rate and increase need two (at different times), the others one.
   */
  aggregate(key: string, aggregation: Aggregation, time: number): number | undefined {
    const s = this.series.get(key);
    if (s === undefined) return undefined;
    const cutoff = time - s.windowMs;
    let i = 0;
    while (i < s.buckets.length && s.buckets[i].start < cutoff) i++;
    const inWindow = s.buckets.slice(i);
    if (inWindow.length === 0) return undefined;
    switch (aggregation) {
      case 'last':
        return inWindow.at(-1)!.last;
      case 'max':
        return inWindow.reduce((m, b) => Math.max(m, b.max), -Infinity);
      case 'min':
        return inWindow.reduce((m, b) => Math.min(m, b.min), Infinity);
      case 'avg': {
        let sum = 0;
        let count = 0;
        for (const b of inWindow) {
          sum += b.sum;
          count += b.count;
        }
        return sum / count;
      }
      case 'increase':
      case 'rate': {
        const first = inWindow[0];
        const last = inWindow.at(-1)!;
        if (last.end <= first.start) return undefined;
        let increase = 0;
        for (let j = 0; j < inWindow.length; j++) {
          increase += inWindow[j].increase;
          if (j > 0) increase += counterIncrease(inWindow[j - 1].last, inWindow[j].first);
        }
        return aggregation === 'increase' ? increase : increase / ((last.end - first.start) / 1000);
      }
    }
  }

  /** Forgets one series. */
  drop(key: string): void {
    this.series.delete(key);
  }

  /** Forgets every series whose key starts with `prefix` (a deleted or changed rule's). */
  dropPrefix(prefix: string): void {
    for (const key of this.series.keys()) if (key.startsWith(prefix)) this.series.delete(key);
  }

  /** Forgets series with no sample in their window ending at `time` (an organization gone). */
  prune(time: number): void {
    for (const [key, s] of this.series) {
      const last = s.buckets.at(-1);
      if (last === undefined || last.end < time - s.windowMs) this.series.delete(key);
    }
  }

  /** Series kept, and buckets over all of them (for tests and metrics). */
  get size(): { series: number; buckets: number } {
    let buckets = 0;
    for (const s of this.series.values()) buckets += s.buckets.length;
    return { series: this.series.size, buckets };
  }
}
