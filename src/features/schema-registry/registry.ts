// The schema registry, the main thread's half: named schemas (admin kind 'schema', id the name)
// and topic checks (admin kind 'schema-check', id the filter) kept in the store, replicated
// across a cluster, and sent whole to every worker as the 'schemaRegistry' worker state (each
// worker compiles only the schemas whose text changed). A schema is compiled when it is added:
// one that does not compile is refused naming the parser's message. The main thread holds a
// runtime of its own, so /api/rules/test decodes as the workers do.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import { compileSchema } from './codec.ts';
import { SchemaRegistryError } from './errors.ts';
import type { SchemaRuntime } from './runtime.ts';
import { CHECK_WORDS, newCheckCounters, SCHEMA_TYPES, type CheckDoc, type SchemaDoc, type SchemaType, type SchemaWorkerState } from './types.ts';

export const SCHEMA_KIND = 'schema';
export const CHECK_KIND = 'schema-check';
/** Most schemas held, and most topic checks. */
export const MAX_SCHEMAS = 1000;
export const MAX_CHECKS = 1000;
/** Longest schema text, in characters. */
export const MAX_SOURCE = 1_048_576;
const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export interface SchemaInput {
  name: string;
  type: string;
  source: string;
  description?: string;
  by: string;
}

export interface CheckInput {
  filter: string;
  schema: string;
  messageType?: string | null;
  by: string;
}

export class SchemaRegistry {
  private readonly schemas = new Map<string, SchemaDoc>();
  private readonly checks = new Map<string, CheckDoc>();
  readonly counters = newCheckCounters();
  private readonly refusedAdds: Counter;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    registry: Registry,
    /** The main thread's runtime (rule tests); also the compile check of every change. */
    readonly runtime: SchemaRuntime,
    /** Sends the whole state to every worker (and to each that starts). */
    private readonly publish: (state: SchemaWorkerState) => void,
  ) {
    const words = new BigInt64Array(this.counters);
    const load = (word: number): number => Number(Atomics.load(words, word));
    const schemas = this.schemas;
    const checks = this.checks;
    new Counter({
      name: 'spindle_schema_check_refused_total',
      help: 'PUBLISHes refused by a schema check (the payload does not decode with the schema on its topic filter): v5 QoS 1/2 answered 0x99 Payload format invalid, v5 QoS 0 and MQTT 3.1.1 dropped. By protocol (v5, v3).',
      labelNames: ['protocol'],
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ protocol: 'v5' }, load(CHECK_WORDS.v5));
        this.inc({ protocol: 'v3' }, load(CHECK_WORDS.v3));
      },
    });
    new Counter({
      name: 'spindle_schema_check_pooled_total',
      help: 'PUBLISHes whose schema check was decoded on a pool thread of their worker (payload of at least schemaRegistry.offloadBytes), counted by the pool thread itself.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.pooled));
      },
    });
    new Counter({
      name: 'spindle_schema_check_offload_overflow_total',
      help: 'PUBLISHes large enough to be checked on a pool thread but checked on the listener thread, because schemaRegistry.maxWaitingBytes or maxWaitingMessages of its worker was reached.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.overflow));
      },
    });
    new Counter({
      name: 'spindle_schema_check_offload_failures_total',
      help: 'Offloaded schema checks whose batch failed as a whole (pool thread died, out of memory, or past schemaRegistry.timeout), by what they became (schemaRegistry.onPoolFailure): refused or passed.',
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ outcome: 'refused' }, load(CHECK_WORDS.failedRefused));
        this.inc({ outcome: 'passed' }, load(CHECK_WORDS.failedPassed));
      },
    });
    new Counter({
      name: 'spindle_schema_rule_pooled_total',
      help: 'Rule evaluations done on a pool thread of their worker: rules whose SQL calls schema_decode or spb_decode, on a PUBLISH of at least schemaRegistry.offloadBytes (or behind such an evaluation of the same rule), counted by the pool thread itself.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.rulePooled));
      },
    });
    new Counter({
      name: 'spindle_schema_rule_offload_overflow_total',
      help: 'Rule evaluations that were to run on a pool thread but ran on the listener thread, because twice schemaRegistry.maxWaitingBytes or maxWaitingMessages of its worker was reached (the hard bound; past the bound itself the publishers are paused instead).',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.ruleOverflow));
      },
    });
    new Counter({
      name: 'spindle_schema_rule_publishers_paused_total',
      help: 'Times a client had its reading paused because the rule evaluations its messages sent to its worker\'s schema pool were past schemaRegistry.maxWaitingBytes or maxWaitingMessages; resumed once below half of it.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.rulePaused));
      },
    });
    new Gauge({
      name: 'spindle_schema_rule_publishers_paused',
      help: 'Clients whose reading is paused now by the rule evaluations waiting for their worker\'s schema pool, all workers together.',
      registers: [registry],
      collect() {
        this.set(load(CHECK_WORDS.rulePausedNow));
      },
    });
    new Counter({
      name: 'spindle_schema_rule_offload_failures_total',
      help: 'Rule evaluations sent to a pool thread whose batch failed as a whole (pool thread died, out of memory, or past schemaRegistry.timeout); each counts as a failure of its rule, with a lastError saying why.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(load(CHECK_WORDS.ruleFailed));
      },
    });
    new Gauge({
      name: 'spindle_schema_check_offload_waiting_bytes',
      help: 'Payload bytes waiting for (or being decoded by) the schema pools, checks and rule evaluations, all workers together (each bounded by schemaRegistry.maxWaitingBytes, twice it for rule evaluations).',
      registers: [registry],
      collect() {
        this.set(load(CHECK_WORDS.waitingBytes));
      },
    });
    new Gauge({
      name: 'spindle_schema_check_offload_waiting_messages',
      help: 'Schema checks and rule evaluations waiting for (or being run by) the schema pools, all workers together (each bounded by schemaRegistry.maxWaitingMessages, twice it for rule evaluations).',
      registers: [registry],
      collect() {
        this.set(load(CHECK_WORDS.waitingMessages));
      },
    });
    new Gauge({
      name: 'spindle_schemas',
      help: 'Schemas held in the schema registry, by type (protobuf, avro, json).',
      labelNames: ['type'],
      registers: [registry],
      collect() {
        const n: Record<string, number> = { protobuf: 0, avro: 0, json: 0 };
        for (const s of schemas.values()) n[s.type]++;
        for (const [type, v] of Object.entries(n)) this.set({ type }, v);
      },
    });
    new Gauge({ name: 'spindle_schema_checks', help: 'Schema checks on topic filters held.', registers: [registry], collect() { this.set(checks.size); } });
    this.refusedAdds = new Counter({ name: 'spindle_schema_refused_adds_total', help: `Schemas or checks not made because the registry holds ${MAX_SCHEMAS} schemas or ${MAX_CHECKS} checks.`, registers: [registry] });
  }

  async load(): Promise<void> {
    for (const { id, doc } of await this.store.listAdmin<SchemaDoc>(SCHEMA_KIND)) {
      const d = schemaOf(doc);
      if (d === null || d.name !== id) this.log.warn('stored schema is not one; skipped', { id });
      else this.schemas.set(id, d);
    }
    for (const { id, doc } of await this.store.listAdmin<CheckDoc>(CHECK_KIND)) {
      const d = checkOf(doc);
      if (d === null || d.filter !== id) this.log.warn('stored schema check is not one; skipped', { id });
      else this.checks.set(id, d);
    }
    this.push();
  }

  list(): SchemaDoc[] {
    return [...this.schemas.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): SchemaDoc {
    const d = this.schemas.get(name);
    if (d === undefined) throw new SchemaRegistryError(404, 'name', `no schema named ${name}`);
    return d;
  }

  listChecks(): CheckDoc[] {
    return [...this.checks.values()].sort((a, b) => a.filter.localeCompare(b.filter));
  }

  /** Adds a schema (`replace` false: 409 when the name is taken) or replaces one (`replace` true:
   * 404 when there is none). Compiled first: one that does not compile is refused (400, field
   * `source`, the parser's message). */
  async put(input: SchemaInput, replace: boolean): Promise<SchemaDoc> {
    if (!NAME.test(input.name)) throw new SchemaRegistryError(400, 'name', 'name: 1 to 128 letters, digits, _, . or -');
    if (!SCHEMA_TYPES.includes(input.type as SchemaType)) throw new SchemaRegistryError(400, 'type', `type: must be one of ${SCHEMA_TYPES.join(', ')}`);
    if (input.source.length > MAX_SOURCE) throw new SchemaRegistryError(400, 'source', `source: at most ${MAX_SOURCE} characters`);
    try {
      compileSchema(input.type as SchemaType, input.source);
    } catch (err) {
      throw new SchemaRegistryError(400, 'source', `source: not a valid ${input.type} schema: ${(err as Error).message}`);
    }
    return this.serial(async () => {
      const had = this.schemas.get(input.name);
      if (!replace && had !== undefined) throw new SchemaRegistryError(409, 'name', `a schema named ${input.name} exists (PUT /api/schemas/${input.name} replaces it)`);
      if (replace && had === undefined) throw new SchemaRegistryError(404, 'name', `no schema named ${input.name}`);
      if (had === undefined && this.schemas.size >= MAX_SCHEMAS) {
        this.refusedAdds.inc();
        throw new SchemaRegistryError(409, 'name', `the registry holds ${this.schemas.size} of at most ${MAX_SCHEMAS} schemas`);
      }
      if (had !== undefined && had.type !== input.type) {
        for (const c of this.checks.values()) if (c.schema === input.name && (input.type === 'protobuf') !== (c.messageType !== null)) throw new SchemaRegistryError(409, 'type', `the check on ${c.filter} uses ${input.name} ${c.messageType === null ? 'without' : 'with'} a message type: delete it first`);
      }
      const doc: SchemaDoc = { name: input.name, type: input.type as SchemaType, source: input.source, description: input.description ?? '', by: input.by, at: new Date().toISOString() };
      if (input.type === 'protobuf') {
        for (const c of this.checks.values()) {
          if (c.schema !== input.name) continue;
          const problem = compileSchema('protobuf', input.source).messageTypeProblem(c.messageType ?? undefined);
          if (problem !== null) throw new SchemaRegistryError(409, 'source', `the check on ${c.filter} needs message type ${c.messageType}: ${problem}`);
        }
      }
      await this.store.putAdmin(SCHEMA_KIND, doc.name, doc);
      this.schemas.set(doc.name, doc);
      this.push();
      return doc;
    });
  }

  /** Removes a schema; 409 while a check uses it. */
  async delete(name: string): Promise<SchemaDoc> {
    return this.serial(async () => {
      const had = this.get(name);
      for (const c of this.checks.values()) if (c.schema === name) throw new SchemaRegistryError(409, 'name', `the check on ${c.filter} uses schema ${name}: delete it first`);
      await this.store.deleteAdmin(SCHEMA_KIND, name);
      this.schemas.delete(name);
      this.push();
      return had;
    });
  }

  /** Puts a check on a topic filter (replacing the filter's check). */
  async putCheck(input: CheckInput): Promise<CheckDoc> {
    const problem = topicFilterProblem(input.filter);
    if (problem !== undefined) throw new SchemaRegistryError(400, 'filter', `filter: ${problem}`);
    return this.serial(async () => {
      const schema = this.schemas.get(input.schema);
      if (schema === undefined) throw new SchemaRegistryError(400, 'schema', `schema: no schema named ${input.schema}`);
      const messageType = input.messageType === undefined || input.messageType === '' ? null : input.messageType;
      const typeProblem = compileSchema(schema.type, schema.source).messageTypeProblem(messageType ?? undefined);
      if (typeProblem !== null) throw new SchemaRegistryError(400, 'messageType', `messageType: ${typeProblem}`);
      if (!this.checks.has(input.filter) && this.checks.size >= MAX_CHECKS) {
        this.refusedAdds.inc();
        throw new SchemaRegistryError(409, 'filter', `the registry holds ${this.checks.size} of at most ${MAX_CHECKS} checks`);
      }
      const doc: CheckDoc = { filter: input.filter, schema: input.schema, messageType, by: input.by, at: new Date().toISOString() };
      await this.store.putAdmin(CHECK_KIND, doc.filter, doc);
      this.checks.set(doc.filter, doc);
      this.push();
      return doc;
    });
  }

  async deleteCheck(filter: string): Promise<CheckDoc> {
    return this.serial(async () => {
      const had = this.checks.get(filter);
      if (had === undefined) throw new SchemaRegistryError(404, 'filter', `no schema check on ${filter}`);
      await this.store.deleteAdmin(CHECK_KIND, filter);
      this.checks.delete(filter);
      this.push();
      return had;
    });
  }

  /** A schema changed on another node (null: removed), already in the bucket: applied here. */
  applySchema(id: string, doc: unknown): Promise<void> {
    return this.serial(async () => {
      if (doc === null) this.schemas.delete(id);
      else {
        const d = schemaOf(doc);
        if (d === null || d.name !== id) throw new SchemaRegistryError(400, 'schema', `schema ${id} from another node is not a schema`);
        this.schemas.set(id, d);
      }
      this.push();
    });
  }

  /** A check changed on another node (null: removed). */
  applyCheck(id: string, doc: unknown): Promise<void> {
    return this.serial(async () => {
      if (doc === null) this.checks.delete(id);
      else {
        const d = checkOf(doc);
        if (d === null || d.filter !== id) throw new SchemaRegistryError(400, 'check', `schema check ${id} from another node is not one`);
        this.checks.set(id, d);
      }
      this.push();
    });
  }

  /** The state every worker holds. */
  state(): SchemaWorkerState {
    return { schemas: [...this.schemas.values()], checks: [...this.checks.values()], counters: this.counters };
  }

  private push(): void {
    const state = this.state();
    this.runtime.setState(state);
    this.publish(state);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function schemaOf(doc: unknown): SchemaDoc | null {
  if (doc === null || typeof doc !== 'object') return null;
  const d = doc as SchemaDoc;
  if (typeof d.name !== 'string' || !SCHEMA_TYPES.includes(d.type) || typeof d.source !== 'string') return null;
  return { name: d.name, type: d.type, source: d.source, description: String(d.description ?? ''), by: String(d.by ?? ''), at: String(d.at ?? '') };
}

function checkOf(doc: unknown): CheckDoc | null {
  if (doc === null || typeof doc !== 'object') return null;
  const d = doc as CheckDoc;
  if (typeof d.filter !== 'string' || typeof d.schema !== 'string') return null;
  return { filter: d.filter, schema: d.schema, messageType: typeof d.messageType === 'string' ? d.messageType : null, by: String(d.by ?? ''), at: String(d.at ?? '') };
}
