// A schema check pool thread's task handler (piscina runs it): decodes each message of a batch
// with the schemas of the checks its topic matched, off the worker's listener thread. Schemas
// are compiled once per version (TaskSchema.key) and kept, at most MAX_COMPILED; protobufjs, avsc
// and Ajv are loaded here only when a schema of their type arrives (codec.ts loads them lazily).
import { threadId } from 'node:worker_threads';

import { beat, pause } from '../../../threads/heartbeat.ts';
import { compileSchema, type CompiledSchema } from '../codec.ts';
import { CHECK_WORDS } from '../types.ts';
import type { CheckResult, CheckTask, TaskSchema } from './check-task.ts';

/** Compiled schemas kept by this thread (the registry holds at most 1000). */
const MAX_COMPILED = 1000;
const compiled = new Map<string, CompiledSchema | null>();

function compiledOf(s: TaskSchema): CompiledSchema | null {
  let c = compiled.get(s.key);
  if (c !== undefined) return c;
  try {
    c = compileSchema(s.type, s.source);
  } catch {
    // It compiled when it was added: a payload held to a schema that no longer compiles is
    // refused, as the inline check refuses it (runtime.ts).
    c = null;
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(s.key, c);
  return c;
}

export function checkBatch(task: CheckTask): CheckResult {
  pause(task.beat);
  const schemas = task.schemas.map(compiledOf);
  const refused = new Uint8Array(task.count);
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  for (let i = 0; i < task.count; i++) {
    beat(task.beat, task.base, 0);
    const payload = bytes.subarray(task.offsets[i], task.offsets[i + 1]);
    for (let k = task.listStart[i]; k < task.listStart[i + 1]; k++) {
      const check = task.checks[k];
      const schema = schemas[task.checkSchema[check]];
      const messageType = task.messageTypes[check];
      if (schema === null || !schema.valid(payload, messageType === '' ? undefined : messageType)) {
        refused[i] = 1;
        break;
      }
    }
  }
  if (task.counters !== null) Atomics.add(new BigInt64Array(task.counters), CHECK_WORDS.pooled, BigInt(task.count));
  return { refused, threadId };
}
