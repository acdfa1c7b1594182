// Built-in client database operations on one worker (src/features/client-db asks them): changes to
// the worker's copy, kicking the connections of some usernames, and the worker's counters. Runs on
// the worker's own thread, between two packets.
import { RC } from '../../protocol/reason-codes.ts';
import type { ClientDbDelta } from '../../features/client-db/types.ts';
import type { ClientDbCounters } from '../../features/client-db/worker-db.ts';
import type { Op } from './types.ts';

export const clientDbOps = {
  /** Applies a change of the database; the next CONNECT, PUBLISH or SUBSCRIBE reads it. */
  'clientDb.apply'(args: ClientDbDelta, env): number {
    env.clientDb.apply(args);
    return env.clientDb.size;
  },

  /** Disconnects (v5: DISCONNECT 0x98 Administrative action) the connections signed in with one
   * of these usernames; their sessions stay until they expire. Answers how many. */
  'clientDb.kick'(args: { usernames: string[] }, env): number {
    const names = new Set(args.usernames);
    let kicked = 0;
    for (const conn of env.connections) {
      const username = conn.identity?.username ?? conn.username;
      if (conn.state === 'closed' || username === undefined || !names.has(username)) continue;
      conn.disconnectWith(RC.ADMINISTRATIVE_ACTION, 'kicked');
      kicked++;
    }
    return kicked;
  },

  'clientDb.counters'(_args: undefined, env): ClientDbCounters {
    return { ...env.clientDb.counters };
  },
} satisfies Record<string, Op>;
