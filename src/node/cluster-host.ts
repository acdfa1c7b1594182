// What the cluster asks of this node's workers (main thread): client ids another node claims
// (the worker holding each takes its connection over and gives the session up), and the stored
// sessions of a node that went down, spread over the workers. Holds no state.
import type { ClientRegistry } from '../native/index.ts';
import type { SessionState } from '../engine/session/handover.ts';
import { forwardedFilter } from '../engine/session/node-handover.ts';
import type { StoredSession } from '../store/types.ts';
import type { WorkerPool } from './worker-pool.ts';
import type { NodeStore } from './node-store.ts';

/** How long a worker has to give up sessions another node claims (a hand-over between workers
 * may wait for a CONNECT in progress). */
const RELEASE_TIMEOUT_MS = 8000;

/**
 * Another node claims these client ids: the worker holding each takes its connection over
 * (0x8E) and gives the session up; answers, per client, the state of a session to resume there
 * (null: none, or it ends).
 */
export async function releaseClients(pool: WorkerPool, registry: InstanceType<typeof ClientRegistry>, clients: readonly { clientId: string; resume: boolean; worker?: number }[], forward?: number): Promise<(SessionState | null)[]> {
  const out: (SessionState | null)[] = clients.map(() => null);
  const byWorker = new Map<number, number[]>();
  const running = new Set(pool.running());
  clients.forEach((c, i) => {
    // Not in the registry yet, but just let claim by `c.worker` (its answer is on the way):
    // asked after that answer, the worker finds the claim.
    const held = registry.lookup(c.clientId)?.[1];
    const w = held ?? (c.worker !== undefined && running.has(c.worker) ? c.worker : undefined);
    if (w === undefined) return;
    let list = byWorker.get(w);
    if (!list) byWorker.set(w, (list = []));
    list.push(i);
  });
  await Promise.all([...byWorker].map(async ([w, idx]) => {
    const states = await pool.call(w, 'cluster.release', { clients: idx.map((i) => ({ clientId: clients[i].clientId, resume: clients[i].resume })), forward }, RELEASE_TIMEOUT_MS);
    idx.forEach((i, k) => (out[i] = states[k] ?? null));
  }));
  return out;
}

/**
 * The sessions another node of the cluster held in the database this node shares with it, once
 * that node went down: restored here, offline, spread over the workers (their clients reconnect
 * to them; their wills go out as after a restart), and stored as this node's. Answers their
 * client ids.
 */
export async function adoptSessions(pool: WorkerPool, store: NodeStore, node: string): Promise<string[]> {
  const theirs = await store.adoptable(node);
  const workers = pool.running();
  if (theirs.length === 0 || workers.length === 0) return [];
  const shares = workers.map(() => [] as StoredSession[]);
  theirs.forEach((s, i) => shares[i % shares.length].push(s));
  const adopted = await Promise.all(workers.map((w, i) => pool.call(w, 'cluster.adopt', { sessions: shares[i] }, RELEASE_TIMEOUT_MS * 4)));
  return adopted.flat();
}

/** The filters of a session given up to another node that are forwarded to it a while (its plain
 * ones: see src/cluster/forwards.ts). */
export function forwardedFilters(state: unknown): string[] {
  const s = state as SessionState;
  if (s.expiryInterval === 0) return [];
  return s.subscriptions.map((sub) => sub.filter).filter(forwardedFilter);
}
