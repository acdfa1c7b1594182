// Owns how one operation of a source runs (main thread): refused at once while the source is
// closed or down (fail fast; the health probe brings it back), otherwise it waits for a slot of
// the source's Limiter and runs counted by its HealthTracker, all under one deadline (the
// source's requestTimeout, queue wait included). Every failure leaves as a SourceError from the
// driver's `toSourceError`, so callers see `kind` and `transient` the same way for every type.
// A write whose deadline passes may still complete on the server (delivery is at least once).
import type { HealthTracker } from './health.ts';
import type { Limiter, Ticket } from './limiter.ts';
import { withTimeout } from './timeout.ts';
import { SourceError, type FailureKind } from './types.ts';

export interface OperationRunnerOptions {
  health: HealthTracker;
  limiter: Limiter;
  /** Deadline of one operation, ms, from the call (queue wait included). */
  timeoutMs: number;
  /** The driver's mapping of its errors (never with a password in the message). */
  toSourceError: (err: unknown) => SourceError;
}

export class OperationRunner {
  /** Kind of the failure that took the source down, reported by the operations refused meanwhile. */
  private downKind: FailureKind = 'other';

  constructor(private readonly options: OperationRunnerOptions) {}

  async run<T>(what: string, op: () => Promise<T>): Promise<T> {
    const { health, limiter, timeoutMs, toSourceError } = this.options;
    if (health.current === 'closed') throw new SourceError(`${what}: the source is closed`, 'other', false);
    if (health.current === 'down') {
      const last = health.snapshot().lastError;
      throw new SourceError(`${what}: the source is down${last ? ` (${last})` : ''}`, this.downKind, true);
    }
    // The slot is held until the driver settles (its own timeouts bound that), so at most
    // poolSize operations are ever in flight, even when callers gave up on some of them; one whose
    // deadline passed while it waited is not started.
    const ticket: Ticket = { expired: false };
    const work = limiter.run(() => health.track(op(), (err) => toSourceError(err).transient), ticket);
    try {
      return await withTimeout(work, timeoutMs, what, () => {
        ticket.expired = true;
      });
    } catch (err) {
      const error = toSourceError(err);
      if (error.kind === 'timeout') health.wentDown(error);
      if (health.snapshot().state === 'down' && error.transient) this.downKind = error.kind;
      throw error;
    }
  }
}
