// WorkerSlowSubs: slow subscribers' half on a worker thread (the engine's AckMeter). Disabled,
// `on` is false and the outbox asks nothing (every in-flight entry keeps the time it was sent
// anyway: one number). Enabled, each acknowledgement costs a subtraction and a comparison with the
// threshold; only a latency at or above it touches the records: at most topK, keyed by client id
// and topic, each the largest latency of its key within the window.
import type { AckMeter } from '../../engine/session/meters.ts';
import type { SlowSubRecord, SlowSubsWorkerState, StatsType, WorkerSlowSubs as WorkerAnswer } from './types.ts';

export class WorkerSlowSubs implements AckMeter {
  on = false;
  private threshold = 0;
  private topK = 0;
  private windowMs = 0;
  private type: StatsType = 'whole';
  private readonly records = new Map<string, SlowSubRecord>();
  private recorded = 0;
  private evicted = 0;

  setState(s: SlowSubsWorkerState): void {
    this.on = s.enable;
    this.threshold = s.threshold;
    this.topK = s.topK;
    this.windowMs = s.window * 1000;
    if (this.type !== s.statsType) this.records.clear();
    this.type = s.statsType;
    if (!s.enable) this.records.clear();
    this.prune(Date.now());
    while (this.records.size > this.topK) this.records.delete(this.fastest()!.key);
  }

  acked(clientId: string, topic: string, receivedAt: number, sentAt: number, now: number): void {
    const type = this.type;
    const latency = type === 'whole' ? now - receivedAt : type === 'response' ? now - sentAt : sentAt - receivedAt;
    if (latency < this.threshold) return;
    this.recorded++;
    const key = `${clientId}\u0000${topic}`;
    const known = this.records.get(key);
    if (known !== undefined) {
      if (latency > known.latency || now - known.lastUpdate > this.windowMs) known.latency = latency;
      known.lastUpdate = now;
      return;
    }
    if (this.records.size >= this.topK) {
      this.prune(now);
      if (this.records.size >= this.topK) {
        const least = this.fastest()!;
        if (least.record.latency >= latency) return;
        this.records.delete(least.key);
        this.evicted++;
      }
    }
    this.records.set(key, { clientId, topic, latency, lastUpdate: now });
  }

  /** The records within the window, and the counters. */
  read(): WorkerAnswer {
    this.prune(Date.now());
    return { records: [...this.records.values()].map((r) => ({ ...r })), recorded: this.recorded, evicted: this.evicted };
  }

  clear(): void {
    this.records.clear();
  }

  private prune(now: number): void {
    for (const [k, r] of this.records) if (now - r.lastUpdate > this.windowMs) this.records.delete(k);
  }

  /** The record with the smallest latency (the first out of a full list). */
  private fastest(): { key: string; record: SlowSubRecord } | undefined {
    let best: { key: string; record: SlowSubRecord } | undefined;
    for (const [key, record] of this.records) if (best === undefined || record.latency < best.record.latency) best = { key, record };
    return best;
  }
}
