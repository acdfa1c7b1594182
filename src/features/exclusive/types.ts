// What the exclusive subscriptions feature offers the others and its routes, and what crosses
// between a worker and the main thread.
export interface Exclusive {
  readonly enabled: boolean;
  /** Places taken now on this node. */
  size(): number;
}

/** What a worker tells the main thread (one post per tick):
 * - `claim`: a place this worker's table gave `clientId` (a cluster decides it: answered by id);
 * - `keep`: a place taken by a session that outlives its connection (kept in the store, to hold it
 *   again after a restart);
 * - `free`: a place freed (unsubscribed, the session ended). */
export type ExclusiveNote =
  | { op: 'claim'; id: number; filter: string; clientId: string; persist: boolean }
  | { op: 'keep'; filter: string; clientId: string }
  | { op: 'free'; filter: string; clientId: string };

/** The answer to a claim: granted or refused (another node's client holds it, or the cluster
 * could not be asked). */
export interface ExclusiveReply {
  id: number;
  result: 'granted' | 'busy' | 'cluster';
}

/** A place kept in the store: who held it, on which node. */
export interface ExclusiveHold {
  filter: string;
  clientId: string;
}
