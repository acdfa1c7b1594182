// Owns the per-operation deadline of a source: an operation that has not settled after `ms` is
// rejected with a transient 'timeout' SourceError, so a caller never hangs on a server that is down
// or a pool that is exhausted. `onTimeout` lets the driver cancel the work (a query's cancel()).
// A write that times out may still complete on the server: delivery to sources is at least once.
import { SourceError } from './types.ts';

export function withTimeout<T>(work: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(function timedOut() {
      onTimeout?.();
      reject(new SourceError(`${what} timed out after ${ms} ms`, 'timeout', true));
    }, ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
