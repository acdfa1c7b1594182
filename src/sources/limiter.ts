// Owns a source's concurrency bound: at most `limit` operations run at once (the pool size); the
// others wait in arrival order. The wait is bounded in time, not length: every operation runs
// under its deadline (timeout.ts), and one whose deadline passed while it waited is not started
// when its turn comes (a write the caller was told failed must not happen later).
import { SourceError } from './types.ts';

/** Set by the deadline: the caller has been answered, the work must not start any more. */
export interface Ticket {
  expired: boolean;
}

export class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(work: () => Promise<T>, ticket: Ticket): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((grant) => this.waiting.push(grant)); // the slot is handed over by release()
    try {
      if (ticket.expired) throw new SourceError('the operation expired while waiting for a connection', 'timeout', true);
      return await work();
    } finally {
      this.release();
    }
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
