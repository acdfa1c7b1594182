// WorkerExclusive: exclusive subscriptions' half on a worker thread. The SUBSCRIBE, UNSUBSCRIBE
// handlers and the end of a session use it (HandlerHost.exclusive); the table is the node's,
// shared by every worker (table.ts). Off (mqtt.exclusiveSubscription false): `enabled` is false
// and `$exclusive/...` is an ordinary filter.
import { ExclusiveTable, type Acquired } from './table.ts';

/** What every worker holds (WorkerStates.exclusive). */
export interface ExclusiveWorkerState {
  enabled: boolean;
  table: SharedArrayBuffer;
  /** Uint32 counters: [0] places taken, [1] SUBSCRIBEs refused (busy), [2] refused (table full),
   * [3] places freed. */
  counters: SharedArrayBuffer;
}

export class WorkerExclusive {
  enabled = false;
  private table: ExclusiveTable | null = null;
  private counters: Uint32Array | null = null;

  setState(s: ExclusiveWorkerState): void {
    this.enabled = s.enabled;
    this.table = new ExclusiveTable(s.table);
    this.counters = new Uint32Array(s.counters);
  }

  acquire(filter: string, clientId: string): Acquired {
    const r = this.table!.acquire(filter, clientId);
    Atomics.add(this.counters!, r === 'taken' ? 0 : r === 'busy' ? 1 : r === 'full' ? 2 : 3, r === 'held' ? 0 : 1);
    return r;
  }

  release(filter: string, clientId: string): void {
    if (this.table!.release(filter, clientId)) Atomics.add(this.counters!, 3, 1);
  }

  holds(filter: string, clientId: string): boolean {
    return this.table !== null && this.table.holds(filter, clientId);
  }
}
