// Samplers of the main thread's own load, for /api/system/resources: process CPU time and the
// event-loop utilization, each measured since its previous sample. One of each per route module.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** Rounds to two decimals, as the resource figures are shown. */
export function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Process CPU time over wall time since the previous sample, in percent of one core. */
export class CpuSampler {
  private last = { usage: process.cpuUsage(), at: performance.now() };

  sample(): number {
    const usage = process.cpuUsage();
    const at = performance.now();
    let busy = usage.user + usage.system - (this.last.usage.user + this.last.usage.system);
    let wall = (at - this.last.at) * 1000;
    if (wall < 100_000) {
      // Too short a window to mean anything: the average since the process started.
      busy = usage.user + usage.system;
      wall = process.uptime() * 1e6;
    }
    this.last = { usage, at };
    return round2((busy / Math.max(1, wall)) * 100);
  }
}

/** The main thread's event-loop utilization (0..1) since the previous sample. */
export class EluSampler {
  private last: EventLoopUtilization | undefined;

  sample(): number {
    const now = performance.eventLoopUtilization();
    const elu = this.last ? performance.eventLoopUtilization(now, this.last) : now;
    this.last = now;
    return Math.round(elu.utilization * 1000) / 1000;
  }
}
