// Owns what one delivery attempt of any channel type is given besides its config and notice
// (main thread): the notifier's closing signal and the cap on a receiver's Retry-After.

export interface AttemptContext {
  /** Aborted when the notifier closes: an attempt in progress is abandoned. */
  closing: AbortSignal;
  retryAfterCapMs: number;
}
