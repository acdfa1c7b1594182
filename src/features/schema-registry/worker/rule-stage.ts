// RuleStage: the rule evaluations of one worker thread that run off it (owned by that thread):
// a rule whose SQL calls schema_decode or spb_decode, on a PUBLISH of at least
// schemaRegistry.offloadBytes (src/rules/offload.ts, worker-rules.ts decide). Batched per tick
// (BatchPump), each batch goes to this worker's schema pool (schema-pool.ts, shared with the
// checks) as one task: the rules and the schemas they name, each once, the PUBLISHes' fields, the
// payloads in one transferred buffer. The answers come back in the order evaluations were asked,
// across batches.
//
// Bounded by the pool's waiting bound, with back-pressure (room(), hold()): past the bound an
// evaluation still goes to the pool, and the client that published its message (a client of this
// thread) has its reading paused, remembered here, until the backlog is below half the bound;
// then every client paused is resumed (unless something else holds it: engine/handlers/
// reading.ts). Past twice the bound (the hard bound: messages from other workers, other nodes or
// the broker have no client to pause, nor do WebSocket clients, see worker.ts) the rule engine
// evaluates inline, counted by overflowed().
// A batch whose thread dies, runs out of memory or stops beating fails as a
// whole: each evaluation fails its rule with a lastError saying why, counted, logged at most once
// per LOG_EVERY_MS (with how many failed since).
import type { Logger } from '../../../log/index.ts';
import { newBeat } from '../../../threads/heartbeat.ts';
import { BatchPump } from '../../../threads/batch-pump.ts';
import { RULE_FAILED, type OffloadedRule, type PublishSnapshot, type RuleDone, type RuleOffload, type RuleOutcome } from '../../../rules/offload.ts';
import type { RuleResult, RuleSchema, RuleTask } from '../pool/rule-task.ts';
import { CHECK_WORDS } from '../types.ts';
import type { SchemaPool } from './schema-pool.ts';
import { failureReason } from '../../../threads/beat-watchdog.ts';

export interface RuleStageOptions {
  log: Logger;
  /** Payloads of at least this many bytes are evaluated on the pool (0: never). */
  minBytes: number;
  /** The node the rules run on (their `node` field). */
  node: string;
  /** Pauses publishers past the bound; without it (tests of the stage alone) none is paused. */
  publishers?: PublisherReading;
}

/** The clients of this thread whose reading the stage pauses (worker.ts: the handlers' Client,
 * through engine/handlers/reading.ts). */
export interface PublisherReading<C = unknown> {
  /** Pauses the reading of the client of session `publisher`; null when it is no client here, is
   * closed, or is paused by the stage already. */
  pause(publisher: number): C | null;
  /** Lets go of a client `pause` gave (closed since: nothing to resume). */
  resume(client: C): void;
}

/** Where the stage finds the schemas a rule names (runtime.ts). */
export interface RuleSchemaSource {
  ruleSchemas(names: readonly string[] | null): RuleSchema[];
}

interface Pending {
  rule: OffloadedRule;
  fields: PublishSnapshot;
  done: RuleDone<never>;
  owner: unknown;
}

const BATCH_SIZE = 256;
const BATCH_BYTES_MAX = 1 << 20;
const LOG_EVERY_MS = 10_000;

export class RuleStage implements RuleOffload {
  readonly minBytes: number;
  private readonly batches: BatchPump<Pending>;
  private lastLogAt = 0;
  private unlogged = 0;
  /** Clients paused by the stage now, resumed once the pool's backlog has drained. */
  private held: unknown[] = [];

  constructor(
    private readonly pool: SchemaPool,
    private readonly schemas: RuleSchemaSource,
    private readonly options: RuleStageOptions,
  ) {
    this.minBytes = options.minBytes;
    this.batches = new BatchPump(pool.options.threads + 1, (batch, seq) => this.send(batch, seq));
  }

  room(bytes: number): number {
    return this.pool.room(bytes);
  }

  hold(publisher: number): void {
    const publishers = this.options.publishers;
    if (publishers === undefined) return;
    const client = publishers.pause(publisher);
    if (client === null) return;
    this.held.push(client);
    this.pool.count(CHECK_WORDS.rulePaused, 1);
    this.pool.count(CHECK_WORDS.rulePausedNow, 1);
    this.pool.onDrained = this.resumeAll;
  }

  /** The backlog is below half the bound: every client paused is resumed. */
  private readonly resumeAll = (): void => {
    const held = this.held;
    this.held = [];
    this.pool.count(CHECK_WORDS.rulePausedNow, -held.length);
    for (const c of held) this.options.publishers!.resume(c);
  };

  overflowed(): void {
    this.pool.count(CHECK_WORDS.ruleOverflow, 1);
  }

  /** The payload is read when its batch is sent, later in this tick or after (a connection's
   * read buffers are its own: every read is a new one). */
  evaluate<T>(rule: OffloadedRule, fields: PublishSnapshot, done: RuleDone<T>, owner: T): void {
    this.pool.wait(fields.payload.length, 1);
    this.batches.add({ rule, fields, done: done as RuleDone<never>, owner }, fields.payload.length, BATCH_SIZE, BATCH_BYTES_MAX);
  }

  private async send(batch: Pending[], seq: number): Promise<void> {
    const task = this.task(batch);
    let result: RuleResult;
    try {
      result = await this.pool.run<RuleResult>(task, [task.bytes.buffer as ArrayBuffer]);
    } catch (err) {
      this.batches.inOrder(seq, () => this.failed(batch, err));
      return;
    }
    this.batches.inOrder(seq, () => {
      this.release(batch);
      for (let i = 0; i < batch.length; i++) this.call(batch[i], result.outcomes[i] as RuleOutcome, result.values[i]);
    });
  }

  private task(batch: readonly Pending[]): RuleTask {
    const n = batch.length;
    let size = 0;
    for (const p of batch) size += p.fields.payload.length;
    const bytes = new Uint8Array(size);
    const offsets = new Uint32Array(n + 1);
    const rule = new Uint16Array(n);
    const qos = new Uint8Array(n);
    const retain = new Uint8Array(n);
    const timestamps = new Float64Array(n);
    const topics: string[] = new Array(n);
    const ids: string[] = new Array(n);
    const clientids: string[] = new Array(n);
    const usernames: (string | null)[] = new Array(n);
    const peerhosts: (string | null)[] = new Array(n);
    // The batch's rules, each once (a batch is usually one rule's), and the schemas they name.
    const rules: RuleTask['rules'] = [];
    const ruleIndex = new Map<OffloadedRule, number>();
    let names: Set<string> | null = new Set();
    let at = 0;
    for (let i = 0; i < n; i++) {
      const p = batch[i];
      let r = ruleIndex.get(p.rule);
      if (r === undefined) {
        r = rules.length;
        rules.push({ id: p.rule.id, version: p.rule.version, sql: p.rule.sql, republish: p.rule.republish, remote: p.rule.remote });
        ruleIndex.set(p.rule, r);
        if (p.rule.schemas === null) names = null;
        else if (names !== null) for (const s of p.rule.schemas) names.add(s);
      }
      rule[i] = r;
      const f = p.fields;
      offsets[i] = at;
      bytes.set(f.payload, at);
      at += f.payload.length;
      topics[i] = f.topic;
      qos[i] = f.qos;
      retain[i] = f.retain ? 1 : 0;
      timestamps[i] = f.timestamp;
      ids[i] = f.id;
      clientids[i] = f.clientid;
      usernames[i] = f.username;
      peerhosts[i] = f.peerhost;
    }
    offsets[n] = at;
    const schemas = names !== null && names.size === 0 ? [] : this.schemas.ruleSchemas(names === null ? null : [...names]);
    return { kind: 'rules', rules, schemas, node: this.options.node, count: n, rule, bytes, offsets, topics, qos, retain, timestamps, ids, clientids, usernames, peerhosts, counters: this.pool.sharedCounters, beat: newBeat(), base: Date.now() };
  }

  /** The batch's task failed as a whole: each evaluation fails its rule, counted, logged. */
  private failed(batch: Pending[], err: unknown): void {
    this.release(batch);
    const reason = failureReason(err);
    this.pool.count(CHECK_WORDS.ruleFailed, batch.length);
    const why = reason === 'memory' ? 'ran out of memory' : reason === 'timeout' ? 'stopped answering (schemaRegistry.timeout)' : `failed: ${(err as Error).message}`;
    const message = `evaluated on a schema pool thread, which ${why}`;
    const now = Date.now();
    this.unlogged += batch.length;
    if (now - this.lastLogAt >= LOG_EVERY_MS) {
      this.options.log.warn('schema pool failed on a batch of rule evaluations; they count as failed', { reason, evaluations: this.unlogged, err: (err as Error).message });
      this.lastLogAt = now;
      this.unlogged = 0;
    }
    for (const p of batch) this.call(p, RULE_FAILED, message);
  }

  private release(batch: readonly Pending[]): void {
    let bytes = 0;
    for (const p of batch) bytes += p.fields.payload.length;
    this.pool.wait(-bytes, -batch.length);
  }

  /** One evaluation's answer: a failure there (a bug) must not keep the others from theirs. */
  private call(p: Pending, outcome: RuleOutcome, value: unknown): void {
    try {
      p.done(p.owner as never, outcome, value);
    } catch (err) {
      this.options.log.error('applying a rule evaluated on the schema pool failed (a bug)', { err });
    }
  }
}
