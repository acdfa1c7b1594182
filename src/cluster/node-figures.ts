// A node's own figures (any thread that asks; the main thread in practice): what its heartbeat
// tells the other nodes and what /api/cluster/nodes shows of it: version, start time, process
// CPU (percent of one core since the previous sample) and memory. Small, so a heartbeat a second
// can carry them.
import os from 'node:os';
import { performance } from 'node:perf_hooks';

import { VERSION } from '../install/root.ts';

export interface NodeFigures {
  version: string;
  /** When the process started, ms since the epoch. */
  startedAt: number;
  /** Process CPU time over wall time since the previous sample, percent of one core. */
  cpuPercent: number;
  cpus: number;
  /** Resident set size of the process (every thread), and the main thread's heap in use. */
  rssBytes: number;
  heapUsedBytes: number;
  totalMemoryBytes: number;
}

/** Samples this process's figures. CPU is measured between two samples at least MIN_WINDOW_MS
 * apart (a heartbeat a second, and the admin route, share one sampler); a sample sooner than that
 * repeats the previous figure (the first: the average since the process started). */
export class NodeFigureSampler {
  private last = { usage: process.cpuUsage(), at: performance.now() };
  private cpu: number | null = null;
  readonly startedAt = Math.round(performance.timeOrigin);

  sample(): NodeFigures {
    const usage = process.cpuUsage();
    const at = performance.now();
    const wall = (at - this.last.at) * 1000;
    if (wall >= MIN_WINDOW_MS * 1000) {
      const busy = usage.user + usage.system - (this.last.usage.user + this.last.usage.system);
      this.cpu = percent(busy, wall);
      this.last = { usage, at };
    }
    const mem = process.memoryUsage();
    return {
      version: VERSION,
      startedAt: this.startedAt,
      cpuPercent: this.cpu ?? percent(usage.user + usage.system, process.uptime() * 1e6),
      cpus: os.cpus().length,
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      totalMemoryBytes: os.totalmem(),
    };
  }
}

const MIN_WINDOW_MS = 500;

function percent(busyMicros: number, wallMicros: number): number {
  return Math.round((busyMicros / Math.max(1, wallMicros)) * 10_000) / 100;
}

/** Figures another node sent, checked field by field (a node of an older build sends none). */
export function figuresOf(v: unknown): NodeFigures | null {
  if (v === null || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const num = (k: string) => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? o[k] as number : null);
  const startedAt = num('startedAt');
  const cpuPercent = num('cpuPercent');
  const cpus = num('cpus');
  const rssBytes = num('rssBytes');
  const heapUsedBytes = num('heapUsedBytes');
  const totalMemoryBytes = num('totalMemoryBytes');
  if (typeof o.version !== 'string' || startedAt === null || cpuPercent === null || cpus === null || rssBytes === null || heapUsedBytes === null || totalMemoryBytes === null) return null;
  return { version: o.version.slice(0, 64), startedAt, cpuPercent, cpus, rssBytes, heapUsedBytes, totalMemoryBytes };
}
