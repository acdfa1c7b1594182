// Exclusive subscription operations on one worker (src/features/exclusive asks them): the
// places its sessions hold.
import type { Op } from './types.ts';

export const exclusiveOps = {
  'exclusive.holders'(_args: undefined, env): { clientId: string; filter: string; connected: boolean }[] {
    const out: { clientId: string; filter: string; connected: boolean }[] = [];
    if (!env.exclusive.enabled) return out;
    for (const [clientId, session] of env.sessions.byClientId) {
      for (const filter of session.subscriptions.keys()) if (env.exclusive.holds(filter, clientId)) out.push({ clientId, filter, connected: session.connection !== null });
    }
    return out;
  },
} satisfies Record<string, Op>;
