// Cluster operations on one worker (src/cluster asks them): the cluster's routing-core handles,
// and the sessions another node claims.
import type { Op } from './types.ts';
import type { SessionState } from '../../engine/session/handover.ts';
import { loadStoredParts, storedSession } from '../../engine/session/restore.ts';
import type { StoredSession } from '../../store/types.ts';

export const clusterOps = {
  /** The cluster's node handles and inbound handle (src/cluster), replaced whole each time. */
  'cluster.set'(args: { handles: number[]; inbound: number; forwards: number[]; originTag: string }, env): void {
    env.bridges.setCluster(args.handles, args.inbound, args.forwards, args.originTag);
    // Sessions keep the identities of the cluster messages they take (a moved session takes one
    // copy of each).
    env.sessions.originTag = args.originTag;
    // Retained changes go to the main thread; what other nodes send is not retained by the worker.
    env.router.setCluster(args.inbound);
    // From now on a CONNECT asks the other nodes for its client id first.
    env.nodeClaims.enabled = true;
  },
  /** Another node claims these client ids: their connections here are taken over (0x8E) and
   * their sessions leave this node; the states of sessions to resume are answered. */
  async 'cluster.release'(args: { clients: { clientId: string; resume: boolean }[]; forward?: number }, env): Promise<(SessionState | null)[]> {
    return Promise.all(args.clients.map((c) => env.sessions.releaseToNode(c.clientId, c.resume, args.forward).catch((err: unknown) => {
      env.log.error('a session could not be given to another node', { clientId: c.clientId, err });
      return null;
    })));
  },
  /** Sessions of a node that went down (in the database this node shares): restored here,
   * offline, and stored as this node's; answers their client ids (one held here already is
   * skipped). */
  async 'cluster.adopt'(args: { sessions: StoredSession[] }, env): Promise<string[]> {
    const store = env.persistence?.store;
    if (!store) return [];
    const adopted: string[] = [];
    for (const s of args.sessions) {
      if (env.sessions.known(s.clientId)) continue;
      const parts = await loadStoredParts(store, s);
      const session = env.sessions.restore(s.clientId, (handle) => storedSession(handle, parts, env.sessionLimits));
      env.persistence!.sessionDisconnected(session);
      adopted.push(s.clientId);
    }
    if (adopted.length > 0) env.log.info('sessions of a node that went down adopted', { count: adopted.length });
    return adopted;
  },
} satisfies Record<string, Op>;
