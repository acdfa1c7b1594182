// CheckStage: the schema checks of one worker thread that run off it (owned by that thread).
// Built like the scripts' ProcessorStage (src/features/scripts/worker/stage.ts): the runtime hands
// it the PUBLISHes whose payload is at least schemaRegistry.offloadBytes and whose topic a check
// matches; they are batched per tick and each batch goes to this worker's schema pool
// (schema-pool.ts, shared with the rules' evaluations) as one task (payloads in one transferred
// buffer); the answer calls each message's `done` with its verdict, in the order messages came
// in, across batches.
//
// Bounded by the pool's waiting bound: admits() says no past it, and the runtime then checks the
// message inline (counted). A batch whose thread dies, runs out of memory or stops beating fails
// as a whole: each of its messages is refused or passes (onFailure), counted.
import type { Logger } from '../../../log/index.ts';
import { newBeat } from '../../../threads/heartbeat.ts';
import { BatchPump } from '../../../threads/batch-pump.ts';
import type { CheckResult, CheckTask, TaskSchema } from '../pool/check-task.ts';
import { CHECK_WORDS, type SchemaType } from '../types.ts';
import type { SchemaPool } from './schema-pool.ts';
import { failureReason } from '../../../threads/beat-watchdog.ts';

export interface CheckStageOptions {
  log: Logger;
  onFailure: 'refuse' | 'pass';
}

/** A check as the stage sends it: its schema (null: gone or not compiling, so it refuses). */
export interface OffloadedCheck {
  schema: { key: string; type: SchemaType; source: string } | null;
  messageType: string | undefined;
}

/** Called with the verdict: true when a check refuses the payload. */
export type CheckDone<T> = (owner: T, refused: boolean) => void;

interface Pending {
  payload: Uint8Array;
  checks: readonly OffloadedCheck[];
  done: CheckDone<never>;
  owner: unknown;
}

const BATCH_SIZE = 256;
const BATCH_BYTES_MAX = 1 << 20;
/** A key no schema has: the stand-in for a check whose schema is gone (pool thread refuses it). */
const GONE: TaskSchema = { key: '\u0000gone', type: 'json', source: '' };

export class CheckStage {
  private readonly batches: BatchPump<Pending>;

  constructor(
    private readonly pool: SchemaPool,
    private readonly options: CheckStageOptions,
  ) {
    this.batches = new BatchPump(pool.options.threads + 1, (batch, seq) => this.send(batch, seq));
  }

  /** The node's schema counters (types.ts CHECK_WORDS), for the pool this stage shares. */
  setCounters(counters: SharedArrayBuffer): void {
    this.pool.setCounters(counters);
  }

  /** Whether a payload of `bytes` may wait for the pool now (the bound is not reached). */
  admits(bytes: number): boolean {
    return this.pool.admits(bytes);
  }

  /** Checks `payload` against `checks` on a pool thread; `done(owner, refused)` is called later
   * (never before this returns), in the order messages were given. The payload is read when its
   * batch is sent (a connection's read buffers are its own: every read is a new one). */
  check<T>(payload: Uint8Array, checks: readonly OffloadedCheck[], done: CheckDone<T>, owner: T): void {
    this.pool.wait(payload.length, 1);
    this.batches.add({ payload, checks, done: done as CheckDone<never>, owner }, payload.length, BATCH_SIZE, BATCH_BYTES_MAX);
  }

  private async send(batch: Pending[], seq: number): Promise<void> {
    const task = this.task(batch);
    let result: CheckResult;
    try {
      result = await this.pool.run<CheckResult>(task, [task.bytes.buffer as ArrayBuffer]);
    } catch (err) {
      this.batches.inOrder(seq, () => this.failed(batch, err));
      return;
    }
    this.batches.inOrder(seq, () => {
      this.release(batch);
      for (let i = 0; i < batch.length; i++) this.call(batch[i], result.refused[i] === 1);
    });
  }

  private task(batch: readonly Pending[]): CheckTask {
    const n = batch.length;
    let size = 0;
    let entries = 0;
    for (const p of batch) {
      size += p.payload.length;
      entries += p.checks.length;
    }
    const bytes = new Uint8Array(size);
    const offsets = new Uint32Array(n + 1);
    const listStart = new Uint32Array(n + 1);
    const checks = new Uint16Array(entries);
    // Checks and schemas of the batch, each once (a batch is usually one topic's: one check).
    const schemas: TaskSchema[] = [];
    const schemaIndex = new Map<string, number>();
    const checkIndex = new Map<OffloadedCheck, number>();
    const checkSchema: number[] = [];
    const messageTypes: string[] = [];
    let at = 0;
    let e = 0;
    for (let i = 0; i < n; i++) {
      const p = batch[i];
      offsets[i] = at;
      bytes.set(p.payload, at);
      at += p.payload.length;
      listStart[i] = e;
      for (const c of p.checks) {
        let ci = checkIndex.get(c);
        if (ci === undefined) {
          const s = c.schema ?? GONE;
          let si = schemaIndex.get(s.key);
          if (si === undefined) {
            si = schemas.length;
            schemas.push({ key: s.key, type: s.type, source: s.source });
            schemaIndex.set(s.key, si);
          }
          ci = checkSchema.length;
          checkSchema.push(si);
          messageTypes.push(c.messageType ?? '');
          checkIndex.set(c, ci);
        }
        checks[e++] = ci;
      }
    }
    offsets[n] = at;
    listStart[n] = e;
    return { kind: 'check', schemas, checkSchema: Uint16Array.from(checkSchema), messageTypes, count: n, bytes, offsets, listStart, checks, counters: this.pool.sharedCounters, beat: newBeat(), base: Date.now() };
  }

  /** The batch's task failed as a whole: each message is refused or passes, counted. */
  private failed(batch: Pending[], err: unknown): void {
    this.release(batch);
    const refuse = this.options.onFailure === 'refuse';
    this.pool.count(refuse ? CHECK_WORDS.failedRefused : CHECK_WORDS.failedPassed, batch.length);
    this.options.log.warn('schema check pool failed on a batch', { reason: failureReason(err), messages: batch.length, onPoolFailure: this.options.onFailure, err: (err as Error).message });
    for (const p of batch) this.call(p, refuse);
  }

  private release(batch: readonly Pending[]): void {
    let bytes = 0;
    for (const p of batch) bytes += p.payload.length;
    this.pool.wait(-bytes, -batch.length);
  }

  /** One message's verdict: a failure there (a bug) must not keep the others from theirs. */
  private call(p: Pending, refused: boolean): void {
    try {
      p.done(p.owner as never, refused);
    } catch (err) {
      this.options.log.error('handling a schema check verdict failed (a bug)', { err });
    }
  }
}
