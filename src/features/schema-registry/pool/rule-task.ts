// The messages between a worker's rule stage (worker/rule-stage.ts) and its schema pool threads:
// one task per batch of rule evaluations (rules whose SQL calls schema_decode or spb_decode, on
// large payloads): the rules and schemas they need, each once, and per evaluation the rule and a
// snapshot of the PUBLISH's fields (payloads back to back in one transferred buffer); one answer
// per evaluation.
import type { TaskSchema } from './check-task.ts';

/** A schema as a rule's SQL names it, and its version (TaskSchema.key). */
export interface RuleSchema extends TaskSchema {
  name: string;
}

export interface RuleTask {
  kind: 'rules';
  /** The rules of this batch: a pool thread compiles each once per id and version (its SQL and
   * republish actions), renders the republishes, and answers the output of a `remote` one. */
  rules: { id: string; version: string; sql: string; republish: readonly Record<string, unknown>[]; remote: boolean }[];
  /** The schemas the batch's rules may name. */
  schemas: RuleSchema[];
  /** The node the rules run on (the `node` field). */
  node: string;
  count: number;
  /** Evaluation i runs rules[rule[i]] on the fields below at i. */
  rule: Uint16Array;
  /** Payloads back to back; evaluation i's is bytes[offsets[i] .. offsets[i + 1]). */
  bytes: Uint8Array;
  offsets: Uint32Array;
  topics: string[];
  qos: Uint8Array;
  retain: Uint8Array;
  timestamps: Float64Array;
  ids: string[];
  clientids: string[];
  usernames: (string | null)[];
  peerhosts: (string | null)[];
  /** The node's schema counters (types.ts CHECK_WORDS): the pool thread adds what it evaluated. */
  counters: SharedArrayBuffer | null;
  /** The heartbeat (src/threads/heartbeat.ts), and the time (ms) it counts from. */
  beat: Int32Array;
  base: number;
}

export interface RuleResult {
  /** Per evaluation: RULE_PASSED, RULE_FILTERED or RULE_FAILED (src/rules/offload.ts). */
  outcomes: Uint8Array;
  /** Per evaluation: a PooledOutput (passed: src/rules/offload.ts), null (filtered) or the
   * error's message (failed). */
  values: unknown[];
  /** The pool thread that evaluated (worker_threads' threadId). */
  threadId: number;
}
