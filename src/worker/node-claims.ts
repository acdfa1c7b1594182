// The worker's side of client-id claims across the nodes of a cluster (src/cluster/claims.ts
// answers them in the main thread): a CONNECT asks, before claiming its client id here, that any
// other node holding it give it up; the claims of one tick go to the main thread in one post,
// and their answers come back the same way. Off (and free) until the cluster turns it on.
import type { NodeClaims } from '../engine/session/node-handover.ts';
import type { LOAD_FROM_STORE, SessionState } from '../engine/session/handover.ts';

export { LOAD_FROM_STORE } from '../engine/session/handover.ts';

export interface NodeClaim {
  id: number;
  clientId: string;
  resume: boolean;
}

export interface NodeClaimReply {
  id: number;
  state: SessionState | typeof LOAD_FROM_STORE | null;
  error?: string;
}

/** Longer than the main thread waits for the other nodes: it always answers first. */
const CLAIM_TIMEOUT_MS = 15_000;

export class WorkerNodeClaims implements NodeClaims {
  enabled = false;
  private nextId = 1;
  private batch: NodeClaim[] = [];
  private readonly pending = new Map<number, { resolve(s: SessionState | typeof LOAD_FROM_STORE | null): void; reject(e: Error): void; timer: NodeJS.Timeout }>();

  constructor(private readonly post: (claims: NodeClaim[]) => void) {}

  claim(clientId: string, resume: boolean): Promise<SessionState | typeof LOAD_FROM_STORE | null> {
    const id = this.nextId++;
    if (this.batch.length === 0) setImmediate(() => this.flush());
    this.batch.push({ id, clientId, resume });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error('no answer from the main thread'));
      }, CLAIM_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
    });
  }

  answer(replies: readonly NodeClaimReply[]): void {
    for (const r of replies) {
      const p = this.pending.get(r.id);
      if (!p) continue;
      this.pending.delete(r.id);
      clearTimeout(p.timer);
      if (r.error !== undefined) p.reject(new Error(r.error));
      else p.resolve(r.state);
    }
  }

  private flush(): void {
    const claims = this.batch;
    this.batch = [];
    if (claims.length > 0) this.post(claims);
  }
}
