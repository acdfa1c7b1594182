// The messages between a worker's schema check stage (worker/check-stage.ts) and its pool
// threads: one task per batch of PUBLISHes to check (payloads back to back in one transferred
// buffer), one verdict per message in the answer.
import type { SchemaType } from '../types.ts';

/** A schema a task's checks use. `key` changes whenever the schema's text does, so a pool
 * thread compiles a schema once per version it is sent. */
export interface TaskSchema {
  key: string;
  type: SchemaType;
  source: string;
}

export interface CheckTask {
  kind: 'check';
  /** The schemas of this batch's checks, and the checks: a schema (index into `schemas`) and its
   * Protobuf message type ('' for none). */
  schemas: TaskSchema[];
  checkSchema: Uint16Array;
  messageTypes: string[];
  count: number;
  /** Payloads back to back; message i is bytes[offsets[i] .. offsets[i + 1]). */
  bytes: Uint8Array;
  offsets: Uint32Array;
  /** Message i must pass the checks checks[listStart[i] .. listStart[i + 1]). */
  listStart: Uint32Array;
  checks: Uint16Array;
  /** The node's schema counters (types.ts CHECK_WORDS): the pool thread adds what it decoded. */
  counters: SharedArrayBuffer | null;
  /** The heartbeat (src/threads/heartbeat.ts), and the time (ms) it counts from. */
  beat: Int32Array;
  base: number;
}

export interface CheckResult {
  /** Per message: 1 when a check refuses it (it does not decode), else 0. */
  refused: Uint8Array;
  /** The pool thread that decoded (worker_threads' threadId). */
  threadId: number;
}
