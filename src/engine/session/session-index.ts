// SessionIndex: the client sessions of one worker thread, by handle and by client id, their count
// (WorkerStats.sessions), and where the sessions recently handed to another worker went, so a
// delivery still routed here for one of them is forwarded there. It decides nothing: the claim
// chain and the session lifecycle add and remove sessions. Owned by the worker thread.
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Session } from './session.ts';

/** Sessions handed to another worker are remembered this long: stray deliveries go there. */
export const MOVED_MEMORY_MS = 60_000;

export class SessionIndex {
  readonly byHandle = new Map<number, Session>();
  readonly byClientId = new Map<string, Session>();
  /** Sessions handed to another worker recently: handle -> that worker. */
  private readonly moved = new Map<number, number>();

  constructor(private readonly stats: Pick<WorkerStats, 'sessions'>) {}

  get size(): number {
    return this.byHandle.size;
  }

  all(): IterableIterator<Session> {
    return this.byHandle.values();
  }

  /** Whether `session` is (still) in the index, not just a session with its handle. */
  has(session: Session): boolean {
    return this.byHandle.get(session.handle) === session;
  }

  add(session: Session): void {
    this.byHandle.set(session.handle, session);
    this.byClientId.set(session.clientId, session);
    this.stats.sessions++;
  }

  /** Drops a session (it moved or ended). A newer session of the same client id keeps its place. */
  remove(session: Session): void {
    this.byHandle.delete(session.handle);
    if (this.byClientId.get(session.clientId) === session) this.byClientId.delete(session.clientId);
    this.stats.sessions--;
  }

  /** The worker the session `handle` was handed to lately, if any. */
  movedTo(handle: number): number | undefined {
    return this.moved.get(handle);
  }

  /** The session `handle` was handed to worker `worker`: remembered for MOVED_MEMORY_MS. */
  markMoved(handle: number, worker: number): void {
    rememberAWhile(this.moved, handle, worker);
  }

  /** Sessions that left for another node of a cluster recently: handle -> that node's forward
   * handle (a delivery routed here before it left, arriving after, goes there: see
   * src/cluster/forwards.ts). */
  private readonly left = new Map<number, number>();

  /** The forward handle of the node the session `handle` left for lately, if any. */
  forwardOf(handle: number): number | undefined {
    return this.left.get(handle);
  }

  /** The session `handle` left for the node whose forward handle is `forward`: remembered for
   * MOVED_MEMORY_MS. */
  markLeft(handle: number, forward: number): void {
    rememberAWhile(this.left, handle, forward);
  }

  /** The session `handle` is here (again): nothing of it is forwarded any more. */
  arrived(handle: number): void {
    this.moved.delete(handle);
  }
}

/** Sets handle -> value for MOVED_MEMORY_MS (unless set again meanwhile). */
function rememberAWhile(map: Map<number, number>, handle: number, value: number): void {
  map.set(handle, value);
  setTimeout(() => {
    if (map.get(handle) === value) map.delete(handle);
  }, MOVED_MEMORY_MS).unref();
}
