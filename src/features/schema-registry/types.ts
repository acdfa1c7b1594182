// The schema registry's shapes, shared by its main-thread half, its worker half and its routes.

export type SchemaType = 'protobuf' | 'avro' | 'json';

export const SCHEMA_TYPES: readonly SchemaType[] = ['protobuf', 'avro', 'json'];

/** A named schema as stored (admin kind 'schema', id its name) and shown by the API. */
export interface SchemaDoc {
  name: string;
  type: SchemaType;
  /** The schema's text: a `.proto` file, an Avro schema (JSON), or a JSON Schema (JSON). */
  source: string;
  description: string;
  /** Who made or last changed it. */
  by: string;
  /** When it was last changed (RFC 3339). */
  at: string;
}

/** A schema check on a topic filter (admin kind 'schema-check', id its filter): a PUBLISH to a
 * topic the filter matches must decode with the schema, or it is refused. */
export interface CheckDoc {
  filter: string;
  schema: string;
  /** The Protobuf message type (required for a protobuf schema; none for the others). */
  messageType: string | null;
  by: string;
  at: string;
}

/** What every worker holds (WorkerStates 'schemaRegistry'): the schemas and checks, and the
 * shared counters of refused PUBLISHes (CHECK_WORDS). */
export interface SchemaWorkerState {
  schemas: SchemaDoc[];
  checks: CheckDoc[];
  counters: SharedArrayBuffer;
}

/** Words of the shared counters (every worker and pool thread of the node adds to them):
 * PUBLISHes refused by a check, by protocol version; checks decoded by a pool thread (added by
 * the pool thread itself); offloadable checks run inline because the pool's waiting bound was
 * reached; offloaded checks whose batch failed, refused or passed (schemaRegistry.onPoolFailure);
 * what waits for the pools now (bytes, messages: checks and rule evaluations); and the same for
 * rules that call schema_decode or spb_decode on large payloads: evaluations done by a pool
 * thread (added by it), run inline past the hard waiting bound, and failed with their batch;
 * clients whose reading the rule stage paused (times), and paused by it now. */
export const CHECK_WORDS = { v5: 0, v3: 1, pooled: 2, overflow: 3, failedRefused: 4, failedPassed: 5, waitingBytes: 6, waitingMessages: 7, rulePooled: 8, ruleOverflow: 9, ruleFailed: 10, rulePaused: 11, rulePausedNow: 12 } as const;
export const CHECK_COUNTER_WORDS = 13;

/** The shared counters: 64-bit words (BigInt64Array views), so neither a counter of a long-lived
 * node nor the byte gauge of many workers wraps. */
export function newCheckCounters(): SharedArrayBuffer {
  return new SharedArrayBuffer(CHECK_COUNTER_WORDS * 8);
}
