// Drain operations on one worker (src/features/drain asks them): how many clients are connected
// here, and moving some of them away. Runs on the worker's own thread, between two packets.
import { RC } from '../../protocol/reason-codes.ts';
import type { Op } from './types.ts';

/** A client moved away: its id, and whether its session stays here to be claimed by the node it
 * reconnects to (a persistent one), or ended with the connection. */
export interface MovedClient {
  clientId: string;
  persistent: boolean;
}

export const drainOps = {
  /** Connected clients here now. */
  'drain.connected'(_args: undefined, env): number {
    let n = 0;
    for (const conn of env.connections) if (conn.state === 'connected') n++;
    return n;
  },

  /** Of these client ids, those whose session is held on this worker (a moved client's session
   * leaves once the node it reconnected to claimed it). */
  'drain.held'(args: { clientIds: string[] }, env): string[] {
    return args.clientIds.filter((id) => env.sessions.byClientId.has(id));
  },

  /**
   * Moves up to `references.length` connected clients away, the i-th one to `references[i]`:
   * MQTT 5 clients get DISCONNECT 0x9C Use another server with that Server Reference (0x8B Server
   * shutting down when it is null: no other server to name); MQTT 3.1.1 clients are closed
   * (they have no server DISCONNECT). Their persistent sessions stay here, offline, until the
   * node they reconnect to claims them (src/cluster/claims.ts). Answers who moved and how many
   * clients are still connected here.
   */
  'drain.move'(args: { references: (string | null)[] }, env): { moved: MovedClient[]; connected: number } {
    const moved: MovedClient[] = [];
    let connected = 0;
    for (const conn of [...env.connections]) {
      if (conn.state !== 'connected') continue;
      if (moved.length >= args.references.length) {
        connected++;
        continue;
      }
      const reference = args.references[moved.length];
      const persistent = env.sessions.byClientId.get(conn.clientId)?.expiryInterval !== 0;
      moved.push({ clientId: conn.clientId, persistent });
      if (reference === null) conn.disconnectWith(RC.SERVER_SHUTTING_DOWN, 'drained', 'the server is draining');
      else conn.disconnectWith(RC.USE_ANOTHER_SERVER, 'drained', 'the server is draining', reference);
    }
    return { moved, connected };
  },
} satisfies Record<string, Op>;
