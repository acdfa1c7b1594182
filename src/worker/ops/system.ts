// System operations on one worker: its own V8 heap and how busy its event loop has been since
// the previous ask (for /api/system/resources). Reads only; nothing here touches connections.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

import type { Op } from './types.ts';

export interface WorkerResources {
  heapUsed: number;
  heapTotal: number;
  heapLimit: number;
  external: number;
  /** Share of time the event loop was busy, 0..1, since the previous call (or the thread's start). */
  eventLoopUtilization: number;
  connections: number;
}

// The previous sample of this thread (each worker has its own module instance).
let lastElu: EventLoopUtilization | undefined;

export const systemOps = {
  'system.resources'(_args: unknown, env): WorkerResources {
    const heap = getHeapStatistics();
    const now = performance.eventLoopUtilization();
    const elu = lastElu ? performance.eventLoopUtilization(now, lastElu) : now;
    lastElu = now;
    return {
      heapUsed: heap.used_heap_size,
      heapTotal: heap.total_heap_size,
      heapLimit: heap.heap_size_limit,
      external: heap.external_memory,
      eventLoopUtilization: Math.round(elu.utilization * 1000) / 1000,
      connections: env.connections.size,
    };
  },
} satisfies Record<string, Op>;
