// Delayed publish on one worker (src/features/delayed asks it): the publishers' ACL checked again
// at due time, with this worker's authorizers (static rules, ACL file, policies, client database).
import type { DelayedPublisher } from '../../features/delayed/types.ts';
import type { Op } from './types.ts';

export const delayedOps = {
  /** For each message due: may its publisher, as it was, still publish to its topic? */
  'delayed.authorize'(args: { items: { publisher: DelayedPublisher; topic: string }[] }, env): Promise<boolean[]> {
    return env.delayed.authorize(args.items);
  },
} satisfies Record<string, Op>;
