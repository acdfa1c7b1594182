// The schema registry in one thread (each worker, and the main thread for /api/rules/test): the
// schemas compiled once (a change recompiles only the schemas whose text changed), the codecs the
// rule SQL calls (schema_decode, schema_encode), and the topic checks asked per PUBLISH. With no
// check, `active` is false and a PUBLISH asks nothing (one check of a boolean).
import { matchLevels, parseFilter, type FilterLevel } from '../../auth/topic-filter.ts';
import { setSchemaCodecs, type SchemaCodecs } from '../../rules/sql/schemas.ts';
import type { Logger } from '../../log/index.ts';
import { compileSchema, type CompiledSchema } from './codec.ts';
import { SchemaCodecError } from './errors.ts';
import { CHECK_WORDS, type CheckDoc, type SchemaDoc, type SchemaWorkerState } from './types.ts';

interface Held {
  doc: SchemaDoc;
  compiled: CompiledSchema | null;
}

interface Check {
  levels: FilterLevel[];
  schema: CompiledSchema | null;
  messageType: string | undefined;
}

export class SchemaRuntime implements SchemaCodecs {
  private readonly held = new Map<string, Held>();
  private checks: Check[] = [];
  private counters: Int32Array | null = null;
  /** Whether a PUBLISH must be checked (a check is configured). */
  active = false;

  constructor(private readonly log: Logger) {}

  /** Makes this runtime the one the rule SQL of this thread uses. */
  install(): this {
    setSchemaCodecs(this);
    return this;
  }

  /** Takes the whole state (a worker that starts, and each change). */
  setState(state: SchemaWorkerState): void {
    this.counters = new Int32Array(state.counters);
    this.setSchemas(state.schemas);
    this.setChecks(state.checks);
  }

  setSchemas(docs: readonly SchemaDoc[]): void {
    const seen = new Set<string>();
    for (const doc of docs) {
      seen.add(doc.name);
      const had = this.held.get(doc.name);
      if (had !== undefined && had.doc.type === doc.type && had.doc.source === doc.source) {
        had.doc = doc;
        continue;
      }
      let compiled: CompiledSchema | null = null;
      try {
        compiled = compileSchema(doc.type, doc.source);
      } catch (err) {
        // Checked when it was added: only a library that changed its mind gets here.
        this.log.error('schema does not compile; decoding with it fails', { schema: doc.name, err });
      }
      this.held.set(doc.name, { doc, compiled });
    }
    for (const name of [...this.held.keys()]) if (!seen.has(name)) this.held.delete(name);
  }

  setChecks(docs: readonly CheckDoc[]): void {
    this.checks = docs.map((d) => ({ levels: parseFilter(d.filter), schema: this.held.get(d.schema)?.compiled ?? null, messageType: d.messageType ?? undefined }));
    this.active = this.checks.length > 0;
  }

  /** The compiled schema `name` (undefined when there is none). */
  compiled(name: string): CompiledSchema | undefined {
    return this.held.get(name)?.compiled ?? undefined;
  }

  decode(name: string, payload: Uint8Array, messageType: string | undefined): Record<string, unknown> {
    return this.need(name).decode(payload, messageType);
  }

  encode(name: string, value: unknown, messageType: string | undefined): Buffer {
    return this.need(name).encode(value, messageType);
  }

  /**
   * A PUBLISH to `topic`: true when a check whose filter matches the topic refuses the payload
   * (it does not decode, or its schema is gone); counted by protocol version. Asked only while
   * `active`.
   */
  refuses(topic: string, payload: Uint8Array, version: number): boolean {
    let levels: string[] | null = null;
    for (const check of this.checks) {
      levels ??= topic.split('/');
      if (!matchLevels(check.levels, levels)) continue;
      if (check.schema !== null && check.schema.valid(payload, check.messageType)) continue;
      if (this.counters !== null) Atomics.add(this.counters, version === 5 ? CHECK_WORDS.v5 : CHECK_WORDS.v3, 1);
      return true;
    }
    return false;
  }

  private need(name: string): CompiledSchema {
    const h = this.held.get(name);
    if (h === undefined) throw new SchemaCodecError(`no schema named ${name}`);
    if (h.compiled === null) throw new SchemaCodecError(`schema ${name} does not compile`);
    return h.compiled;
  }
}
