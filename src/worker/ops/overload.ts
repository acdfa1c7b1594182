// Overload operations on one worker (src/features/overload asks them): its state and measures,
// and, for tests only (overload.debugBusy), making it lag.
import type { WorkerOverloadStatus } from '../../features/overload/types.ts';
import type { Op } from './types.ts';
import { OpError } from './types.ts';

export const overloadOps = {
  'overload.status'(_args: undefined, env): WorkerOverloadStatus {
    return env.overload.status();
  },

  /** Blocks the worker's event loop `blockMs` at a time for `totalMs` (overload.debugBusy only). */
  'overload.busy'(args: { totalMs: number; blockMs: number }, env): { started: true } {
    if (!env.config.overload.debugBusy) throw new OpError('FORBIDDEN', 'overload.debugBusy is off: this switch is for tests only', 'overload.debugBusy');
    env.overload.busy(args.totalMs, args.blockMs);
    return { started: true };
  },
} satisfies Record<string, Op>;
