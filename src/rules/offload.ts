// Rules evaluated off the listener thread: a rule whose SQL calls a heavy decoder (schema_decode,
// spb_decode) is evaluated on a pool thread for a PUBLISH whose payload is large. The rule engine
// (worker-rules.ts) decides and applies the answers; the pool is the schema registry's (its
// worker/rule-stage.ts implements RuleOffload), so src/rules knows it only through this interface.
import { eachCall, type ParsedRule } from './sql/index.ts';

/** The SQL functions whose decode is heavy enough to leave the listener thread for. */
const HEAVY = new Set(['schema_decode', 'spb_decode']);
/** The SQL functions that read the schema registry (their first argument names the schema). */
const SCHEMA_FUNCTIONS = new Set(['schema_decode', 'schema_encode']);

/** A rule as a pool thread compiles it (once per id and version). */
export interface OffloadedRule {
  id: string;
  sql: string;
  /** Its republish actions' configs: the pool thread renders their topics and payloads. */
  republish: readonly Record<string, unknown>[];
  /** Whether its output goes to the main thread's actions (then it crosses back whole). */
  remote: boolean;
  /** Changes with the SQL or the republish configs. */
  version: string;
  /** The schemas its SQL names (literal first arguments of schema_decode/schema_encode); null:
   * a name is computed, so every schema held is sent. */
  schemas: readonly string[] | null;
}

/** The fields of a PUBLISH as rules read them (worker-rules.ts PublishFields), taken when it
 * matched: what a pool thread evaluates the rule on. `node` and `event` are the batch's. */
export interface PublishSnapshot {
  topic: string;
  payload: Uint8Array;
  qos: number;
  retain: boolean;
  timestamp: number;
  id: string;
  clientid: string;
  username: string | null;
  peerhost: string | null;
}

/** What a pool thread answers for one evaluation. */
export const RULE_PASSED = 0;
export const RULE_FILTERED = 1;
export const RULE_FAILED = 2;
export type RuleOutcome = typeof RULE_PASSED | typeof RULE_FILTERED | typeof RULE_FAILED;

/** A passed evaluation's answer: each republish action's topic and payload (rendered from the
 * output on the pool thread, in the order of the rule's actions: topic, payload, topic, ...),
 * and the output itself when the rule is `remote` (else null). */
export interface PooledOutput {
  republish: string[];
  out: Record<string, unknown> | null;
}

/** Called with one evaluation's answer: RULE_PASSED and a PooledOutput, RULE_FILTERED and null,
 * or RULE_FAILED and the error's message. */
export type RuleDone<T> = (owner: T, outcome: RuleOutcome, value: unknown) => void;

/** RuleOffload.room(): the pool takes the evaluation; */
export const ROOM = 0;
/** ... takes it, but its backlog is past its (soft) bound: the publisher is to be paused
 * (RuleOffload.hold); */
export const ROOM_HOLD = 1;
/** ... does not: past its hard bound, the evaluation runs inline (RuleOffload.overflowed). */
export const NO_ROOM = 2;

export interface RuleOffload {
  /** Payloads of at least this many bytes are evaluated on the pool (0: never). */
  readonly minBytes: number;
  /** Whether an evaluation on a payload of `bytes` may wait for the pool now: ROOM, ROOM_HOLD or
   * NO_ROOM. */
  room(bytes: number): number;
  /** Pauses the reading of the client of session `publisher` (this thread's) until the pool's
   * backlog has drained; nothing when it is not a client here or is paused by it already. */
  hold(publisher: number): void;
  /** Counts an evaluation that was to go to the pool but ran inline (the hard bound was reached). */
  overflowed(): void;
  /** Evaluates `rule` on `fields` on a pool thread; `done` is called later (never before this
   * returns), in the order evaluations were asked. */
  evaluate<T>(rule: OffloadedRule, fields: PublishSnapshot, done: RuleDone<T>, owner: T): void;
}

/** What a pool thread needs to evaluate `parsed` (the rule of `spec`), or null when its SQL calls
 * no heavy decoder (it always runs inline). */
export function offloadedRule(spec: { id: string; sql: string; republish: readonly object[]; remote: boolean }, parsed: ParsedRule): OffloadedRule | null {
  let heavy = false;
  let names: Set<string> | null = new Set();
  eachCall(parsed, (name, args) => {
    if (HEAVY.has(name)) heavy = true;
    if (!SCHEMA_FUNCTIONS.has(name) || names === null) return;
    const first = args[0];
    if (first !== undefined && first.type === 'literal' && typeof first.value === 'string') names.add(first.value);
    else names = null;
  });
  if (!heavy) return null;
  const republish = spec.republish as readonly Record<string, unknown>[];
  return { id: spec.id, sql: spec.sql, republish, remote: spec.remote, version: `${spec.sql}\u0000${JSON.stringify(republish)}`, schemas: names === null ? null : [...names] };
}
