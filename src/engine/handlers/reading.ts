// Why a connection's reading may be paused: several reasons can hold it at once, each kept on the
// connection, and whichever lets go last resumes it (each checks the others first):
// - the publish pipeline's bound: publishPending reached limits.receiveMaximum (publish.ts);
// - a rate limit or the tenant's licence: throttledUntil (throttle.ts);
// - a handler's promise: the connection's backlog of frames (connection.ts; when it drains it
//   resumes only if none of the others holds reading);
// - a rule stage whose backlog is past its bound: heldByRules (below; the schema pool's rule
//   evaluations, src/features/schema-registry/worker/rule-stage.ts), so a publisher faster than
//   the pool is slowed down instead of its rules being evaluated on the listener thread.
import type { Client } from './client.ts';

/** Pauses `c`'s reading for a rule stage; false when the stage holds it already or it is closed. */
export function holdForRules(c: Client): boolean {
  if (c.heldByRules || c.isClosed()) return false;
  c.heldByRules = true;
  c.pauseReading();
  return true;
}

/** The rule stage lets go of `c`: reading resumes unless another reason still holds it (a closed
 * connection is left as it is). */
export function releaseForRules(c: Client, receiveMaximum: number): void {
  c.heldByRules = false;
  if (!c.isClosed() && c.publishPending < receiveMaximum && c.throttledUntil === 0) c.resumeReading();
}
