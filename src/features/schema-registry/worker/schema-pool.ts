// SchemaPool: the piscina pool of one worker thread (owned by that thread) that decodes off the
// listener thread what is heavy to decode: schema checks on large payloads (check-stage.ts) and
// rules calling schema_decode or spb_decode on large payloads (rule-stage.ts). One pool for
// both: its threads run pool/task.ts, which dispatches on the task's kind. piscina is loaded, and
// the threads started, by the first stage that has something to offload: a worker that never
// offloads never loads it.
//
// The waiting bound is the pool's, shared by both stages: at most schemaRegistry.maxWaitingBytes
// of payload and maxWaitingMessages messages wait for (or are in) the pool; the check stage asks
// admits() and checks inline past it (counted; its publishers wait in their publish pipelines
// meanwhile). The rule stage asks room(): past the bound its evaluations still wait, their
// publishers paused until the backlog is below half the bound (onDrained), up to twice the bound
// (the hard bound, for messages whose publisher cannot be paused), inline past that. A task whose thread stops beating (past 3x the
// time limit, plus 500 ms) is aborted; the stage that sent it handles the failure.
import type { Piscina } from 'piscina';

import type { Logger } from '../../../log/index.ts';
import { BeatWatchdog } from '../../../threads/beat-watchdog.ts';
import { threadEntry } from '../../../threads/entry.ts';
import { FROM_SOURCE } from '../../../install/root.ts';
import { lazyRequire } from '../../../lazy/lazy-require.ts';
import type { PoolTask } from '../pool/task-types.ts';
import { NO_ROOM, ROOM, ROOM_HOLD } from '../../../rules/offload.ts';
import { CHECK_WORDS } from '../types.ts';

const piscina = lazyRequire<typeof import('piscina')>('piscina');

/** The pool thread's task handler: compiled, schema-task.js's schemaTask; from the TypeScript
 * sources, thread.mjs, which registers tsx first. */
const POOL_ENTRY = FROM_SOURCE
  ? { filename: new URL('../pool/thread.mjs', import.meta.url).href }
  : { filename: threadEntry('schema-task').href, name: 'schemaTask' };

export interface SchemaPoolOptions {
  log: Logger;
  /** Pool threads of this worker. */
  threads: number;
  timeoutMs: number;
  maxWaitingBytes: number;
  maxWaitingMessages: number;
}


export class SchemaPool {
  private pool: Piscina | null = null;
  private closed = false;
  private waitingBytes = 0;
  private waitingMessages = 0;
  private counters: BigInt64Array | null = null;
  /** The node's schema counters (types.ts CHECK_WORDS), which tasks carry to the pool threads. */
  sharedCounters: SharedArrayBuffer | null = null;
  /** The pool thread that answered last (worker_threads' threadId): logs and tests. */
  lastThreadId = -1;
  /** Called once what waits is below half the bound again, while set (the rule stage sets it
   * while it holds publishers). */
  onDrained: (() => void) | null = null;

  private readonly watchdog: BeatWatchdog;

  constructor(readonly options: SchemaPoolOptions) {
    this.watchdog = new BeatWatchdog(options.timeoutMs);
  }

  setCounters(counters: SharedArrayBuffer): void {
    this.sharedCounters = counters;
    this.counters = new BigInt64Array(counters);
  }

  /** Adds `n` to the counter `word` (CHECK_WORDS). */
  count(word: number, n: number): void {
    if (this.counters !== null) Atomics.add(this.counters, word, BigInt(n));
  }

  /** Whether a payload of `bytes` may wait for the pool now (the bound is not reached). */
  admits(bytes: number): boolean {
    return this.waitingMessages < this.options.maxWaitingMessages && this.waitingBytes + bytes <= this.options.maxWaitingBytes;
  }

  /** For a rule evaluation on a payload of `bytes` (src/rules/offload.ts): ROOM under the bound,
   * ROOM_HOLD past it but under twice it, NO_ROOM past that. */
  room(bytes: number): number {
    const o = this.options;
    const messages = this.waitingMessages;
    const total = this.waitingBytes + bytes;
    if (messages < o.maxWaitingMessages && total <= o.maxWaitingBytes) return ROOM;
    return messages < 2 * o.maxWaitingMessages && total <= 2 * o.maxWaitingBytes ? ROOM_HOLD : NO_ROOM;
  }

  /** Counts what waits for the pool (negative: what left it), and starts the pool with the
   * first thing that waits, so its threads start while the batch fills. */
  wait(bytes: number, messages: number): void {
    if (this.pool === null && !this.closed && messages > 0) this.pool = this.newPool();
    this.waitingBytes += bytes;
    this.waitingMessages += messages;
    if (this.counters !== null) {
      Atomics.add(this.counters, CHECK_WORDS.waitingBytes, BigInt(bytes));
      Atomics.add(this.counters, CHECK_WORDS.waitingMessages, BigInt(messages));
    }
    if (messages < 0 && this.onDrained !== null && 2 * this.waitingMessages <= this.options.maxWaitingMessages && 2 * this.waitingBytes <= this.options.maxWaitingBytes) {
      const drained = this.onDrained;
      this.onDrained = null;
      drained();
    }
  }

  /** Runs `task` on a pool thread (`transfer` moved to it); rejects when the thread dies, runs
   * out of memory, stops beating, or the pool is closed. */
  async run<R extends { threadId: number }>(task: PoolTask, transfer: ArrayBuffer[]): Promise<R> {
    if (this.pool === null) throw new Error('the schema pool is closed');
    const pool = this.pool;
    const result = await this.watchdog.watch(task.beat, task.base, (signal) => pool.run(task, { transferList: transfer, signal }) as Promise<R>);
    this.lastThreadId = result.threadId;
    return result;
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    if (pool !== null) await pool.destroy().catch(() => {});
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
