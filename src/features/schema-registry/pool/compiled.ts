// The schemas a schema pool thread has compiled (owned by that thread): once per version
// (TaskSchema.key), kept, at most MAX_COMPILED; protobufjs, avsc and Ajv are loaded here only when
// a schema of their type arrives (codec.ts loads them lazily). Shared by the checks' and the
// rules' task handlers.
import { compileSchema, type CompiledSchema } from '../codec.ts';
import type { TaskSchema } from './check-task.ts';

/** Compiled schemas kept by this thread (the registry holds at most 1000). */
const MAX_COMPILED = 1000;
const compiled = new Map<string, CompiledSchema | null>();

/** `s` compiled; null when it does not compile. */
export function compiledOf(s: TaskSchema): CompiledSchema | null {
  let c = compiled.get(s.key);
  if (c !== undefined) return c;
  try {
    c = compileSchema(s.type, s.source);
  } catch {
    // It compiled when it was added: a payload held to a schema that no longer compiles is
    // refused (a check) or fails the row (a rule), as inline (runtime.ts).
    c = null;
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(s.key, c);
  return c;
}
