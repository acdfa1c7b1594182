// Owns how a consumer tells its runner that its connection failed after it opened: a promise that
// rejects once, with the first failure (later ones are the same outage and are ignored). Handled
// from birth, so a failure nobody races (the runner already closing) is no unhandled rejection.
import type { ConsumerError } from './types.ts';

export class FailureSignal {
  readonly promise: Promise<never>;
  private reject!: (err: ConsumerError) => void;

  constructor() {
    this.promise = new Promise<never>((_, reject) => {
      this.reject = reject;
    });
    this.promise.catch(() => {});
  }

  fail(err: ConsumerError): void {
    this.reject(err);
  }
}
