// State every worker holds a copy of (worker/messages.ts WorkerStates: the policy chains, the
// scripts and extensions): the main thread keeps the latest value of each key, sends them all to
// a worker that starts before it opens its listeners, and each change to every running worker.
// Owns those latest values (main thread).
import type { ToWorker, WorkerStates } from '../worker/messages.ts';

/** What the state needs of the workers. */
export interface StateWorkers {
  onWorkerStart(fn: (worker: number) => void): void;
  post(worker: number, msg: ToWorker): void;
  postAll(msg: ToWorker): void;
}

export class ReplicatedState {
  private readonly values = new Map<keyof WorkerStates, ToWorker>();

  constructor(private readonly workers: StateWorkers) {
    // Posted in order before the worker's 'open': in place before its first client.
    workers.onWorkerStart((w) => {
      for (const msg of this.values.values()) workers.post(w, msg);
    });
  }

  /** Sets `key` on every worker now, and on each worker that starts later. */
  set<K extends keyof WorkerStates>(key: K, value: WorkerStates[K]): void {
    const msg = { t: 'state', key, value } as ToWorker;
    this.values.set(key, msg);
    this.workers.postAll(msg);
  }
}
