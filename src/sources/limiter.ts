// Owns the bounded concurrency of one source (main thread): at most `size` operations hold a slot
// at once; the others wait in arrival order. The wait queue is bounded too (`maxWaiting`): at the
// bound a new operation is refused at once with a transient 'busy' SourceError (push back, never
// an unbounded queue). A waiter whose signal aborts (its deadline) leaves the queue.
import { SourceError } from './types.ts';

export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class Limiter {
  private active = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly size: number,
    readonly maxWaiting = 10_000,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`Limiter: size must be a positive integer (got ${size})`);
  }

  /** Operations holding a slot now. */
  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with the release of a slot once one is free; rejects when `signal` aborts first
   * (with the signal's reason) or when the queue is full. */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(new SourceError(`too many operations waiting (${this.maxWaiting})`, 'other', true));
    }
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        grant: resolve,
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(waiter);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next === undefined) {
        this.active--;
        return;
      }
      // The slot passes straight to the next waiter: `active` stays the same.
      next.signal?.removeEventListener('abort', next.onAbort);
      next.grant(this.releaser());
    };
  }
}
