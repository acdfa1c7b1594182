// Owns constant-time comparison of secrets (hashes, digests): equal-length buffers go through
// crypto.timingSafeEqual; a length mismatch still costs one comparison (against a dummy) and is false.
import { timingSafeEqual } from 'node:crypto';

/** True when `a` and `b` hold the same bytes; the time taken does not depend on where they differ. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) {
    timingSafeEqual(a, a);
    return false;
  }
  return timingSafeEqual(a, b);
}
