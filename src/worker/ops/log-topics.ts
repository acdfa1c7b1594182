// Log topic operations on one worker: install (add or replace; `only` keeps just the given set,
// after a restart) and remove.
import type { LogTopicSpec } from '../../features/tracing/worker-log-topics.ts';
import type { Op } from './types.ts';

export const logTopicOps = {
  'logTopics.install'(args: { topics: LogTopicSpec[]; only?: boolean }, env): void {
    env.logTopics.install(args.topics, args.only ?? false);
  },
  'logTopics.remove'(args: { id: string }, env): boolean {
    return env.logTopics.remove(args.id);
  },
} satisfies Record<string, Op>;
