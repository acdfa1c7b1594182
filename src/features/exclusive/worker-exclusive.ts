// WorkerExclusive: exclusive subscriptions' half on a worker thread. The SUBSCRIBE, UNSUBSCRIBE
// handlers and the end of a session use it (HandlerHost.exclusive); the table is the node's,
// shared by every worker (table.ts). Off (mqtt.exclusiveSubscription false): `enabled` is false
// and `$exclusive/...` is an ordinary filter.
// Alone (no cluster) a place is taken in the table, synchronously, and the main thread is told
// after the fact only of places a persistent session took or freed (kept in the store across a
// restart). In a cluster a place the table gives is claimed across the nodes by the main thread
// (cluster.ts) before the SUBACK: `confirm` answers a promise then.
import { ExclusiveTable, type Acquired } from './table.ts';
import type { ExclusiveNote, ExclusiveReply } from './types.ts';

/** What every worker holds (WorkerStates.exclusive). */
export interface ExclusiveWorkerState {
  enabled: boolean;
  /** Places are decided across a cluster's nodes (the main thread answers each claim). */
  cluster: boolean;
  table: SharedArrayBuffer;
  /** Uint32 counters: [0] places taken, [1] SUBSCRIBEs refused (busy), [2] refused (table full),
   * [3] places freed, [4] refused (the cluster could not be asked). */
  counters: SharedArrayBuffer;
}

/** Longer than a cluster's claim takes (NATS requests time out before): it always answers first. */
const CLAIM_TIMEOUT_MS = 30_000;

export class WorkerExclusive {
  enabled = false;
  cluster = false;
  private table: ExclusiveTable | null = null;
  private counters: Uint32Array | null = null;
  private notes: ExclusiveNote[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(result: ExclusiveReply['result']): void; timer: NodeJS.Timeout }>();
  /** The claims out now, by client id and filter (a second SUBSCRIBE waits for the first's). */
  private readonly deciding = new Map<string, Promise<boolean>>();

  constructor(private readonly post: (notes: ExclusiveNote[]) => void = () => {}) {}

  setState(s: ExclusiveWorkerState): void {
    this.enabled = s.enabled;
    this.cluster = s.cluster;
    this.table = new ExclusiveTable(s.table);
    this.counters = new Uint32Array(s.counters);
  }

  acquire(filter: string, clientId: string): Acquired {
    const r = this.table!.acquire(filter, clientId);
    Atomics.add(this.counters!, r === 'taken' ? 0 : r === 'busy' ? 1 : r === 'full' ? 2 : 3, r === 'held' ? 0 : 1);
    return r;
  }

  /**
   * A place the table gave (`acquire` answered 'taken'): alone, granted now (`persist`: the main
   * thread keeps it in the store); in a cluster, the answer of the cluster (false: the place was
   * freed in the table again, and counted refused).
   */
  confirm(filter: string, clientId: string, persist: boolean): true | Promise<boolean> {
    if (!this.cluster) {
      if (persist) this.note({ op: 'keep', filter, clientId });
      return true;
    }
    const id = this.nextId++;
    this.note({ op: 'claim', id, filter, clientId, persist });
    const key = `${clientId}\n${filter}`;
    const decided = new Promise<ExclusiveReply['result']>((resolve) => {
      const timer = setTimeout(() => this.answer([{ id, result: 'cluster' }]), CLAIM_TIMEOUT_MS);
      this.pending.set(id, { resolve, timer });
    }).then((result) => {
      if (result === 'granted') return true;
      if (this.table!.release(filter, clientId)) {
        // Not taken after all: counted refused, not taken then freed.
        Atomics.sub(this.counters!, 0, 1);
        Atomics.add(this.counters!, result === 'busy' ? 1 : 4, 1);
      }
      return false;
    });
    this.deciding.set(key, decided);
    void decided.then(() => {
      if (this.deciding.get(key) === decided) this.deciding.delete(key);
    });
    return decided;
  }

  /** The cluster's answer still to come for a place the table shows `clientId` holding (a
   * SUBSCRIBE of it being decided); undefined when none is out. */
  waiting(filter: string, clientId: string): Promise<boolean> | undefined {
    return this.deciding.size === 0 ? undefined : this.deciding.get(`${clientId}\n${filter}`);
  }

  /** The main thread's answers to this worker's claims. */
  answer(replies: readonly ExclusiveReply[]): void {
    for (const r of replies) {
      const p = this.pending.get(r.id);
      if (p === undefined) continue;
      this.pending.delete(r.id);
      clearTimeout(p.timer);
      p.resolve(r.result);
    }
  }

  release(filter: string, clientId: string): void {
    if (!this.table!.release(filter, clientId)) return;
    Atomics.add(this.counters!, 3, 1);
    this.note({ op: 'free', filter, clientId });
  }

  holds(filter: string, clientId: string): boolean {
    return this.table !== null && this.table.holds(filter, clientId);
  }

  private note(n: ExclusiveNote): void {
    if (this.notes.length === 0) queueMicrotask(() => this.flush());
    this.notes.push(n);
  }

  private flush(): void {
    const notes = this.notes;
    this.notes = [];
    if (notes.length > 0) this.post(notes);
  }
}
