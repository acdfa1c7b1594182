// Owns the waits between delivery attempts (main thread): exponential backoff from BACKOFF_BASE_MS,
// doubling, capped at BACKOFF_MAX_MS, or what the receiver asked for (Retry-After, capped by the
// caller), and a sleep that ends early when the notifier closes.

export const BACKOFF_BASE_MS = 500;
export const BACKOFF_MAX_MS = 30_000;

/** The wait before retry number `retry` (1: the second attempt): base, 2 base, 4 base, ... capped. */
export function backoffDelay(retry: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(retry - 1, 30));
}

/** Resolves after `ms`, or at once when `signal` aborts (the caller checks which). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
