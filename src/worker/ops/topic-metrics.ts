// Topic metrics and slow subscribers on one worker (src/features/topic-metrics and
// src/features/slow-subs ask them): this worker's counts per filter, a filter's reset, and the
// slow subscriber records.
import type { WorkerTopicCounts } from '../../features/topic-metrics/types.ts';
import type { Op } from './types.ts';

export const topicMetricOps = {
  'topicMetrics.read'(_args: undefined, env): WorkerTopicCounts {
    return env.topicMetrics.read();
  },

  'topicMetrics.reset'(args: { filter: string }, env): { reset: boolean } {
    return { reset: env.topicMetrics.reset(args.filter) };
  },

  'slowSubs.read'(_args: undefined, env) {
    return env.slowSubs.read();
  },

  'slowSubs.clear'(_args: undefined, env): { cleared: true } {
    env.slowSubs.clear();
    return { cleared: true };
  },
} satisfies Record<string, Op>;
