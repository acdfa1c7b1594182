// Bridge operations on one worker: the set of running bridges' handles (their local filters are
// routing-core entries; matches go to the main thread), replaced whole each time.
import type { Op } from './types.ts';

export const bridgeOps = {
  'bridges.set'(args: { handles: number[] }, env): void {
    env.bridges.set(args.handles);
  },
  /** The web console's message viewers' handles (their matches are posted like a bridge's). */
  'bridges.viewers'(args: { handles: number[] }, env): void {
    env.bridges.setViewers(args.handles);
  },
  /** The features' taps whose matches go to the main thread (node/taps.ts). */
  'taps.set'(args: { handles: number[] }, env): void {
    env.bridges.setTaps(args.handles);
  },
  /** Matches not forwarded because the message came in over the same bridge. */
  'bridges.counters'(_args: unknown, env): { loopsSkipped: number } {
    return { loopsSkipped: env.bridges.loopsSkipped };
  },
} satisfies Record<string, Op>;
