// Script and extension operations on one worker: the per-processor counters for /script/runtime,
// /extension/runtime and the metrics.
import type { ProcessorCounters } from '../../features/scripts/types.ts';
import type { Op } from './types.ts';

export const scriptOps = {
  'scripts.runtime'(_args: unknown, env): Record<string, ProcessorCounters> {
    return env.processors.runtime();
  },
} satisfies Record<string, Op>;
