// The ban list on one worker (src/features/bans asks these): bans added (kicking the clients
// connected here that they name), removed, cleared, loaded whole at the worker's start; and the
// client ids this worker found flapping.
import { RC } from '../../protocol/reason-codes.ts';
import type { BanAs, BanSpec } from '../../features/bans/types.ts';
import type { Connection } from '../../engine/connection/connection.ts';
import { connectionOf, type Op } from './types.ts';

export const banOps = {
  /** Replaces every ban (the worker starts). */
  'bans.load'(args: { bans: BanSpec[] }, env): void {
    env.bans.load(args.bans);
  },

  /** Adds bans and kicks the connected clients they name: DISCONNECT 0x98 Administrative action
   * with the Reason String "banned" (v5; 0x8A Banned is a CONNACK code only, not one a DISCONNECT
   * may carry: MQTT 5.0 section 3.14.2.1, and clients refuse the packet), a close (3.1.1).
   * Answers how many were kicked. */
  'bans.add'(args: { bans: BanSpec[] }, env): number {
    const named = env.bans.add(args.bans, candidates(args.bans, env.sessions.byClientId, env.connections));
    for (const c of named) c.disconnectWith(RC.ADMINISTRATIVE_ACTION, 'kicked', 'banned');
    return named.length;
  },

  'bans.remove'(args: { bans: { as: BanAs; who: string }[] }, env): void {
    env.bans.remove(args.bans);
  },

  'bans.clear'(_args: undefined, env): void {
    env.bans.clear();
  },

  /** Client ids found flapping here since the last call. */
  'flapping.take'(_args: undefined, env): string[] {
    return env.bans.takeFlagged();
  },
} satisfies Record<string, Op>;

/** The connections a batch of bans may name: client ids only (flapping, most single bans) are
 * looked up by their sessions, O(1) each; anything else scans this worker's connections. */
function candidates(bans: readonly BanSpec[], byClientId: ReadonlyMap<string, Parameters<typeof connectionOf>[0]>, connections: ReadonlySet<Connection>): Connection[] {
  const out: Connection[] = [];
  if (bans.every((b) => b.as === 'clientid')) {
    for (const b of bans) {
      const session = byClientId.get(b.who);
      const c = session ? connectionOf(session) : null;
      if (c !== null && c.state === 'connected') out.push(c);
    }
    return out;
  }
  for (const c of connections) if (c.state === 'connected') out.push(c);
  return out;
}
