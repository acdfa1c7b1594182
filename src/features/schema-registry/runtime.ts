// The schema registry in one thread (each worker, and the main thread for /api/rules/test): the
// schemas compiled once (a change recompiles only the schemas whose text changed), the codecs the
// rule SQL calls (schema_decode, schema_encode), and the topic checks asked per PUBLISH. With no
// check, `active` is false and a PUBLISH asks nothing (one check of a boolean). In a worker with a
// CheckStage (offloadTo), a payload of at least schemaRegistry.offloadBytes that a check matches
// is decoded on a pool thread instead (PAYLOAD_OFFLOAD), while the stage's waiting bound allows.
import { matchLevels, parseFilter, type FilterLevel } from '../../auth/topic-filter.ts';
import { setSchemaCodecs, type SchemaCodecs } from '../../rules/sql/schemas.ts';
import type { Logger } from '../../log/index.ts';
import { compileSchema, type CompiledSchema } from './codec.ts';
import { SchemaCodecError } from './errors.ts';
import { CHECK_WORDS, type CheckDoc, type SchemaDoc, type SchemaWorkerState } from './types.ts';
import { PAYLOAD_OFFLOAD, PAYLOAD_PASS, PAYLOAD_REFUSED } from '../../engine/handlers/client.ts';
import type { CheckDone, CheckStage, OffloadedCheck } from './worker/check-stage.ts';
import type { RuleSchema } from './pool/rule-task.ts';
import type { RuleSchemaSource } from './worker/rule-stage.ts';

interface Held {
  doc: SchemaDoc;
  compiled: CompiledSchema | null;
  /** What a pool thread is sent of it; the key changes with the schema's text, so a pool thread
   * compiles each version once. */
  task: RuleSchema;
}

interface Check {
  levels: FilterLevel[];
  schema: CompiledSchema | null;
  messageType: string | undefined;
  /** What the stage sends a pool thread for this check. */
  offloaded: OffloadedCheck;
}

interface Waiter {
  done: CheckDone<unknown>;
  owner: unknown;
}

export class SchemaRuntime implements SchemaCodecs, RuleSchemaSource {
  private readonly held = new Map<string, Held>();
  private checks: Check[] = [];
  private counters: BigInt64Array | null = null;
  /** Whether a PUBLISH must be checked (a check is configured). */
  active = false;
  private stage: CheckStage | null = null;
  /** Payloads of at least this many bytes are offloaded (0: none; no stage: none). */
  private offloadBytes = 0;
  /** The checks verdict() last answered PAYLOAD_OFFLOAD for, which offload() sends. */
  private toOffload: OffloadedCheck[] = [];

  constructor(private readonly log: Logger) {}

  /** Makes this runtime the one the rule SQL of this thread uses. */
  install(): this {
    setSchemaCodecs(this);
    return this;
  }

  /** Decodes large payloads on `stage`'s pool threads (a worker): those of at least `bytes`
   * bytes (0: never). */
  offloadTo(stage: CheckStage, bytes: number): this {
    this.stage = stage;
    this.offloadBytes = bytes;
    return this;
  }

  /** Takes the whole state (a worker that starts, and each change). */
  setState(state: SchemaWorkerState): void {
    this.counters = new BigInt64Array(state.counters);
    this.stage?.setCounters(state.counters);
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
        had.task = taskSchema(doc);
        continue;
      }
      let compiled: CompiledSchema | null = null;
      try {
        compiled = compileSchema(doc.type, doc.source);
      } catch (err) {
        // Checked when it was added: only a library that changed its mind gets here.
        this.log.error('schema does not compile; decoding with it fails', { schema: doc.name, err });
      }
      this.held.set(doc.name, { doc, compiled, task: taskSchema(doc) });
    }
    for (const name of [...this.held.keys()]) if (!seen.has(name)) this.held.delete(name);
  }

  setChecks(docs: readonly CheckDoc[]): void {
    this.checks = docs.map((d) => {
      const held = this.held.get(d.schema);
      const schema = held?.compiled ?? null;
      const messageType = d.messageType ?? undefined;
      const offloaded: OffloadedCheck = { schema: held === undefined || schema === null ? null : held.task, messageType };
      return { levels: parseFilter(d.filter), schema, messageType, offloaded };
    });
    this.active = this.checks.length > 0;
  }

  /** What a pool thread is sent of the schemas `names` (null: all of them) that are held: a rule
   * evaluated there names them (one not held fails the row there, as here). */
  ruleSchemas(names: readonly string[] | null): RuleSchema[] {
    const out: RuleSchema[] = [];
    if (names === null) for (const h of this.held.values()) out.push(h.task);
    else {
      for (const name of names) {
        const h = this.held.get(name);
        if (h !== undefined) out.push(h.task);
      }
    }
    return out;
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
   * A PUBLISH to `topic`: PAYLOAD_REFUSED when a check whose filter matches the topic refuses the
   * payload (it does not decode, or its schema is gone), counted by protocol version; else
   * PAYLOAD_PASS, or PAYLOAD_OFFLOAD when the payload is large and the checks that match it are
   * to be decoded on a pool thread (offload() must follow). Asked only while `active`.
   */
  verdict(topic: string, payload: Uint8Array, version: number): number {
    const big = this.offloadBytes > 0 && payload.length >= this.offloadBytes;
    let levels: string[] | null = null;
    let offload: OffloadedCheck[] | null = null;
    for (const check of this.checks) {
      levels ??= topic.split('/');
      if (!matchLevels(check.levels, levels)) continue;
      if (check.schema !== null && big) {
        (offload ??= []).push(check.offloaded);
        continue;
      }
      if (check.schema !== null && check.schema.valid(payload, check.messageType)) continue;
      this.refused(version);
      return PAYLOAD_REFUSED;
    }
    if (offload === null) return PAYLOAD_PASS;
    if (this.stage!.admits(payload.length)) {
      this.toOffload = offload;
      return PAYLOAD_OFFLOAD;
    }
    // The pool is behind by schemaRegistry.maxWaiting*: this one is checked here (counted).
    if (this.counters !== null) Atomics.add(this.counters, CHECK_WORDS.overflow, 1n);
    for (const check of this.checks) {
      if (!matchLevels(check.levels, levels!)) continue;
      if (check.schema !== null && check.schema.valid(payload, check.messageType)) continue;
      this.refused(version);
      return PAYLOAD_REFUSED;
    }
    return PAYLOAD_PASS;
  }

  /** The checks verdict() just answered PAYLOAD_OFFLOAD for, on a pool thread; `done(owner,
   * refused)` later, refusals counted. */
  offload<T>(payload: Uint8Array, version: number, done: (owner: T, refused: boolean) => void, owner: T): void {
    const checks = this.toOffload;
    this.toOffload = [];
    this.stage!.check(payload, checks, version === 5 ? this.verdictV5 : this.verdictV3, { done: done as CheckDone<unknown>, owner });
  }

  private readonly verdictV5: CheckDone<Waiter> = (w, refused) => {
    if (refused) this.refused(5);
    w.done(w.owner, refused);
  };

  private readonly verdictV3: CheckDone<Waiter> = (w, refused) => {
    if (refused) this.refused(4);
    w.done(w.owner, refused);
  };

  private refused(version: number): void {
    if (this.counters !== null) Atomics.add(this.counters, version === 5 ? CHECK_WORDS.v5 : CHECK_WORDS.v3, 1n);
  }

  private need(name: string): CompiledSchema {
    const h = this.held.get(name);
    if (h === undefined) throw new SchemaCodecError(`no schema named ${name}`);
    if (h.compiled === null) throw new SchemaCodecError(`schema ${name} does not compile`);
    return h.compiled;
  }
}

/** A schema as a pool thread is sent it; `key` changes whenever its text does. */
function taskSchema(doc: SchemaDoc): RuleSchema {
  return { name: doc.name, key: `${doc.name}\u0000${doc.at}\u0000${doc.source.length}`, type: doc.type, source: doc.source };
}
