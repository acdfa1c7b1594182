// A schema pool thread's rule task (task.ts dispatches it): evaluates rules whose SQL calls
// schema_decode or spb_decode on large payloads, off the worker's listener thread, and answers
// each evaluation's filtering, error, or republishes rendered (topics and payloads) and output
// (only for a rule whose output goes to the main thread: a decoded map can be large, and
// deserializing it would cost the listener thread much of what it was spared); the worker applies
// them (src/rules/worker-rules.ts). A rule is compiled once per id and version (SQL and republish
// configs) and kept (at most MAX_RULES); the schema codecs the SQL calls are this thread's, over
// the schemas the task carries (compiled once per version, compiled.ts), with the inline
// runtime's errors (runtime.ts).
import { threadId } from 'node:worker_threads';

import { beat, pause } from '../../../threads/heartbeat.ts';
import { compileRule, EventContext, parseRule, type CompiledRule } from '../../../rules/sql/index.ts';
import { setSchemaCodecs, type SchemaCodecs } from '../../../rules/sql/schemas.ts';
import { RULE_FAILED, RULE_FILTERED, RULE_PASSED, type PooledOutput } from '../../../rules/offload.ts';
import { compileRepublish } from '../../../rules/actions/republish.ts';
import type { CompiledRepublish } from '../../../rules/actions/types.ts';
import type { CompiledSchema } from '../codec.ts';
import { SchemaCodecError } from '../errors.ts';
import { CHECK_WORDS } from '../types.ts';
import { compiledOf } from './compiled.ts';
import type { RuleResult, RuleSchema, RuleTask } from './rule-task.ts';

/** Rules kept compiled by this thread. */
const MAX_RULES = 1000;
interface Compiled {
  version: string;
  run: CompiledRule;
  republish: CompiledRepublish[];
  remote: boolean;
}
const rules = new Map<string, Compiled | Error>();

function ruleOf(r: RuleTask['rules'][number]): Compiled | Error {
  const had = rules.get(r.id);
  if (had !== undefined && !(had instanceof Error) && had.version === r.version) return had;
  let c: Compiled | Error;
  try {
    c = { version: r.version, run: compileRule(parseRule(r.sql)), republish: r.republish.map((x) => compileRepublish(x)), remote: r.remote };
  } catch (err) {
    c = err as Error; // it compiled on the worker: only a change of this code gets here
  }
  if (rules.size >= MAX_RULES) rules.clear();
  rules.set(r.id, c);
  return c;
}

/** The codecs of one task: its schemas by name. */
class TaskCodecs implements SchemaCodecs {
  private readonly byName = new Map<string, RuleSchema>();

  constructor(schemas: readonly RuleSchema[]) {
    for (const s of schemas) this.byName.set(s.name, s);
  }

  decode(name: string, payload: Uint8Array, messageType: string | undefined): Record<string, unknown> {
    return this.need(name).decode(payload, messageType);
  }

  encode(name: string, value: unknown, messageType: string | undefined): Buffer {
    return this.need(name).encode(value, messageType);
  }

  private need(name: string): CompiledSchema {
    const s = this.byName.get(name);
    if (s === undefined) throw new SchemaCodecError(`no schema named ${name}`);
    const c = compiledOf(s);
    if (c === null) throw new SchemaCodecError(`schema ${name} does not compile`);
    return c;
  }
}

export function ruleBatch(task: RuleTask): RuleResult {
  pause(task.beat);
  setSchemaCodecs(new TaskCodecs(task.schemas));
  const runs = task.rules.map(ruleOf);
  const outcomes = new Uint8Array(task.count);
  const values: unknown[] = new Array(task.count).fill(null);
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  for (let i = 0; i < task.count; i++) {
    beat(task.beat, task.base, 0);
    const rule = runs[task.rule[i]];
    if (rule instanceof Error) {
      outcomes[i] = RULE_FAILED;
      values[i] = rule.message;
      continue;
    }
    // The fields as worker-rules.ts PublishFields has them, in its order (SELECT * reads them so).
    const fields: Record<string, unknown> = {
      topic: task.topics[i],
      payload: bytes.subarray(task.offsets[i], task.offsets[i + 1]),
      qos: task.qos[i],
      retain: task.retain[i] === 1,
      timestamp: task.timestamps[i],
      publish_received_at: task.timestamps[i],
      node: task.node,
      event: 'PUBLISH',
      id: task.ids[i],
      clientid: task.clientids[i],
      username: task.usernames[i],
      peerhost: task.peerhosts[i],
    };
    try {
      const out = rule.run(new EventContext('PUBLISH', fields));
      if (out === null) {
        outcomes[i] = RULE_FILTERED;
        continue;
      }
      // As worker-rules.ts queueRepublish() renders them inline.
      const republish: string[] = [];
      for (const r of rule.republish) republish.push(r.topic(out), r.payload === null ? JSON.stringify(out) : r.payload(out));
      outcomes[i] = RULE_PASSED;
      values[i] = { republish, out: rule.remote ? out : null } satisfies PooledOutput;
    } catch (err) {
      outcomes[i] = RULE_FAILED;
      values[i] = (err as Error).message;
    }
  }
  setSchemaCodecs(null);
  if (task.counters !== null) Atomics.add(new BigInt64Array(task.counters), CHECK_WORDS.rulePooled, BigInt(task.count));
  return { outcomes, values, threadId };
}
