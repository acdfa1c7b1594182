// CheckStage: the schema checks of one worker thread that run off it (owned by that thread).
// Built like the scripts' ProcessorStage (src/features/scripts/worker/stage.ts): the runtime hands
// it the PUBLISHes whose payload is at least schemaRegistry.offloadBytes and whose topic a check
// matches; they are batched per tick and each batch goes to this worker's piscina pool as one task
// (payloads in one transferred buffer); the answer calls each message's `done` with its verdict,
// in the order messages came in, across batches. piscina is loaded with the first offloaded
// message: a worker that never offloads never loads it.
//
// Bounded: at most maxWaitingBytes of payload and maxWaitingMessages messages wait for (or are in)
// the pool; admits() says no past them, and the runtime then checks the message inline (counted).
// A batch whose thread dies, runs out of memory or stops beating (past 3x the time limit, plus
// 500 ms) fails as a whole: each of its messages is refused or passes (onFailure), counted.
import type { Piscina } from 'piscina';

import type { Logger } from '../../../log/index.ts';
import { BEAT_TIME, NOT_STARTED, newBeat } from '../../../threads/heartbeat.ts';
import { BatchPump } from '../../../threads/batch-pump.ts';
import { threadEntry } from '../../../threads/entry.ts';
import { FROM_SOURCE } from '../../../install/root.ts';
import { lazyRequire } from '../../../lazy/lazy-require.ts';
import type { CheckResult, CheckTask, TaskSchema } from '../pool/check-task.ts';
import { CHECK_WORDS, type SchemaType } from '../types.ts';

const piscina = lazyRequire<typeof import('piscina')>('piscina');

/** The pool thread's task handler: compiled, check-batch.js's checkBatch; from the TypeScript
 * sources, thread.mjs, which registers tsx first. */
const POOL_ENTRY = FROM_SOURCE
  ? { filename: new URL('../pool/thread.mjs', import.meta.url).href }
  : { filename: threadEntry('check-batch').href, name: 'checkBatch' };

export interface CheckStageOptions {
  log: Logger;
  /** Pool threads of this worker. */
  threads: number;
  timeoutMs: number;
  maxWaitingBytes: number;
  maxWaitingMessages: number;
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
  private pool: Piscina | null = null;
  private readonly batches: BatchPump<Pending>;
  private waitingBytes = 0;
  private waitingMessages = 0;
  private counters: BigInt64Array | null = null;
  private sharedCounters: SharedArrayBuffer | null = null;
  private readonly inFlight = new Set<{ beat: Int32Array; base: number; abort: AbortController }>();
  private watchdog: NodeJS.Timeout | null = null;
  /** The pool thread that answered last (worker_threads' threadId): logs and tests. */
  lastThreadId = -1;

  constructor(private readonly options: CheckStageOptions) {
    this.batches = new BatchPump(options.threads + 1, (batch, seq) => this.send(batch, seq));
  }

  /** The node's schema counters (types.ts CHECK_WORDS). */
  setCounters(counters: SharedArrayBuffer): void {
    this.sharedCounters = counters;
    this.counters = new BigInt64Array(counters);
  }

  /** Whether a payload of `bytes` may wait for the pool now (the bound is not reached). */
  admits(bytes: number): boolean {
    return this.waitingMessages < this.options.maxWaitingMessages && this.waitingBytes + bytes <= this.options.maxWaitingBytes;
  }

  /** Checks `payload` against `checks` on a pool thread; `done(owner, refused)` is called later
   * (never before this returns), in the order messages were given. The payload is read when its
   * batch is sent (a connection's read buffers are its own: every read is a new one). */
  check<T>(payload: Uint8Array, checks: readonly OffloadedCheck[], done: CheckDone<T>, owner: T): void {
    this.pool ??= this.newPool();
    this.wait(payload.length, 1);
    this.batches.add({ payload, checks, done: done as CheckDone<never>, owner }, payload.length, BATCH_SIZE, BATCH_BYTES_MAX);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool !== null) await pool.destroy().catch(() => {});
  }

  private wait(bytes: number, messages: number): void {
    this.waitingBytes += bytes;
    this.waitingMessages += messages;
    if (this.counters !== null) {
      Atomics.add(this.counters, CHECK_WORDS.waitingBytes, BigInt(bytes));
      Atomics.add(this.counters, CHECK_WORDS.waitingMessages, BigInt(messages));
    }
  }

  private async send(batch: Pending[], seq: number): Promise<void> {
    const task = this.task(batch);
    const abort = new AbortController();
    const flight = { beat: task.beat, base: task.base, abort };
    let result: CheckResult;
    try {
      if (this.pool === null) throw new Error('the stage is closed');
      this.inFlight.add(flight);
      this.armWatchdog();
      result = (await this.pool.run(task, { transferList: [task.bytes.buffer as ArrayBuffer], signal: abort.signal })) as CheckResult;
    } catch (err) {
      this.batches.inOrder(seq, () => this.failed(batch, err));
      return;
    } finally {
      this.inFlight.delete(flight);
    }
    this.lastThreadId = result.threadId;
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
    return { schemas, checkSchema: Uint16Array.from(checkSchema), messageTypes, count: n, bytes, offsets, listStart, checks, counters: this.sharedCounters, beat: newBeat(), base: Date.now() };
  }

  /** The batch's task failed as a whole: each message is refused or passes, counted. */
  private failed(batch: Pending[], err: unknown): void {
    this.release(batch);
    const refuse = this.options.onFailure === 'refuse';
    const reason = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : (err as Error).name === 'AbortError' ? 'timeout' : 'error';
    if (this.counters !== null) Atomics.add(this.counters, refuse ? CHECK_WORDS.failedRefused : CHECK_WORDS.failedPassed, BigInt(batch.length));
    this.options.log.warn('schema check pool failed on a batch', { reason, messages: batch.length, onPoolFailure: this.options.onFailure, err: (err as Error).message });
    for (const p of batch) this.call(p, refuse);
  }

  private release(batch: readonly Pending[]): void {
    let bytes = 0;
    for (const p of batch) bytes += p.payload.length;
    this.wait(-bytes, -batch.length);
  }

  /** One message's verdict: a failure there (a bug) must not keep the others from theirs. */
  private call(p: Pending, refused: boolean): void {
    try {
      p.done(p.owner as never, refused);
    } catch (err) {
      this.options.log.error('handling a schema check verdict failed (a bug)', { err });
    }
  }

  /** Checks the heartbeats of the tasks in flight while there are any. */
  private armWatchdog(): void {
    if (this.watchdog !== null) return;
    const limit = 3 * this.options.timeoutMs + 500;
    this.watchdog = setInterval(() => {
      const now = Date.now();
      for (const f of this.inFlight) {
        const at = Atomics.load(f.beat, BEAT_TIME);
        if (at !== NOT_STARTED && now - f.base - at > limit) f.abort.abort();
      }
      if (this.inFlight.size === 0) {
        clearInterval(this.watchdog!);
        this.watchdog = null;
      }
    }, Math.max(50, this.options.timeoutMs));
    this.watchdog.unref();
  }

  private newPool(): Piscina {
    return new (piscina().Piscina)({
      ...POOL_ENTRY,
      minThreads: this.options.threads,
      maxThreads: this.options.threads,
      concurrentTasksPerWorker: 1,
      idleTimeout: 60_000,
    });
  }
}
