// Group commit for the SQL backends: callers submit jobs to one bounded queue; the writer takes
// everything queued (up to a batch limit) and runs it in ONE transaction, resolving every caller
// after COMMIT and rejecting all of them with a StoreError when the transaction fails. Jobs run
// in submission order. A pipelined job issues all its statements synchronously (the driver sends
// them in order without waiting for replies); any other job first waits for the replies of the
// jobs before it. Jobs with the same merge key that are queued next to each other become one job
// (e.g. many addMessage calls become one multi-row INSERT). After a failed batch the next one waits
// a backoff (doubling, capped) so a server that went away is not hammered; `healthy` tells
// whether the last batch committed.
import { StoreError } from '../errors.ts';

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Job<Tx> {
  /** Jobs with equal non-null keys queued next to each other are merged. */
  key: string | null;
  items: unknown[];
  pipelined: boolean;
  run: (tx: Tx, items: unknown[]) => Promise<unknown>;
  waiters: Waiter[];
}

export interface GroupCommitOptions<Tx> {
  /** Runs `body` inside one transaction; resolves after COMMIT, rejects (after ROLLBACK) on failure. */
  transaction: (body: (tx: Tx) => Promise<void>) => Promise<void>;
  /** Turns a driver error into a StoreError (UNAVAILABLE when the server is gone, IO otherwise). */
  classify: (err: unknown) => StoreError;
  /** Jobs waiting at most; beyond that submit rejects with STORE_UNAVAILABLE. */
  maxQueued?: number;
  /** Jobs (merged items count one each) in one transaction at most. */
  maxBatch?: number;
  /** Items one merged job holds at most. */
  maxMerge?: number;
  /** Backoff after a failed batch: first and largest delay, ms. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

export class GroupCommit<Tx> {
  private readonly queue: Job<Tx>[] = [];
  private queuedItems = 0;
  private running = false;
  private failures = 0;
  private idle: (() => void)[] = [];
  private readonly o: Required<GroupCommitOptions<Tx>>;
  /** False after a batch failed, true again once one commits. */
  healthy = true;

  constructor(options: GroupCommitOptions<Tx>) {
    this.o = { maxQueued: 100_000, maxBatch: 5_000, maxMerge: 500, backoffMs: 50, maxBackoffMs: 2_000, ...options };
  }

  /** Queues a job; resolves with its result once its transaction committed. */
  submit<T>(run: (tx: Tx) => Promise<T>, pipelined: boolean): Promise<T> {
    return this.enqueue(null, undefined, (tx) => run(tx), pipelined) as Promise<T>;
  }

  /** Queues `item` for a mergeable job: `run` receives every item merged into it. */
  submitMerged(key: string, item: unknown, run: (tx: Tx, items: unknown[]) => Promise<unknown>): Promise<void> {
    return this.enqueue(key, item, run, true) as Promise<void>;
  }

  /** Resolves once the queue is empty and no batch is running. */
  drain(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private enqueue(key: string | null, item: unknown, run: (tx: Tx, items: unknown[]) => Promise<unknown>, pipelined: boolean): Promise<unknown> {
    if (this.queuedItems >= this.o.maxQueued) {
      return Promise.reject(new StoreError('STORE_UNAVAILABLE', `store write queue full (${this.o.maxQueued} waiting)`));
    }
    return new Promise((resolve, reject) => {
      const tail = this.queue[this.queue.length - 1];
      this.queuedItems++;
      if (key !== null && tail && tail.key === key && tail.items.length < this.o.maxMerge) {
        tail.items.push(item);
        tail.waiters.push({ resolve, reject });
      } else {
        this.queue.push({ key, items: key === null ? [] : [item], pipelined, run, waiters: [{ resolve, reject }] });
      }
      if (!this.running) void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.running = true;
    while (this.queue.length > 0) {
      if (this.failures > 0) {
        const delay = Math.min(this.o.backoffMs * 2 ** (this.failures - 1), this.o.maxBackoffMs);
        await new Promise((r) => setTimeout(r, delay));
      }
      const batch = this.queue.splice(0, this.o.maxBatch);
      for (const job of batch) this.queuedItems -= job.waiters.length;
      await this.runBatch(batch);
    }
    this.running = false;
    for (const done of this.idle.splice(0)) done();
  }

  private async runBatch(batch: Job<Tx>[]): Promise<void> {
    const results: unknown[] = new Array(batch.length);
    try {
      await this.o.transaction(async (tx) => {
        let pending: Promise<unknown>[] = [];
        for (let i = 0; i < batch.length; i++) {
          const job = batch[i];
          if (!job.pipelined) {
            await settleAll(pending);
            pending = [];
            results[i] = await job.run(tx, job.items);
          } else {
            const p = job.run(tx, job.items).then((r) => (results[i] = r));
            p.catch(() => {}); // observed by settleAll below
            pending.push(p);
          }
        }
        await settleAll(pending);
      });
    } catch (err) {
      this.failures++;
      this.healthy = false;
      const error = err instanceof StoreError ? err : this.o.classify(err);
      for (const job of batch) for (const w of job.waiters) w.reject(error);
      return;
    }
    this.failures = 0;
    this.healthy = true;
    batch.forEach((job, i) => {
      for (const w of job.waiters) w.resolve(job.key === null ? results[i] : undefined);
    });
  }
}

/** Waits for every promise, then throws the first rejection (so no failure goes unobserved). */
async function settleAll(pending: Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(pending);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
}
