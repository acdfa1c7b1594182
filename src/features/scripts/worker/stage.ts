// ProcessorStage: the scripts and extensions of one worker thread (owned by that thread). The
// engine asks wants(topic) for each PUBLISH it accepted (cheap: a cached answer per topic, and
// false at once while there are no processors), and hands the ones wanted to transform(), which
// adds them to the open batch. Each batch goes to this worker's piscina pool as one task
// (payloads in one transferred buffer); the answer calls each message's `done` with what it
// became, in the order messages came in, across batches.
//
// A batch whose thread dies (out of memory) or stops beating (a call that never yields: the pool
// thread writes a heartbeat into a shared word; past 3x the time limit the task is aborted and
// its thread ended) fails as a whole: each of its messages then passes unchanged or is dropped
// (scripts.onError), counted against the processor that was running.
import type { Piscina } from 'piscina';

import type { Logger } from '../../../log/index.ts';
import type { Message } from '../../../broker/message.ts';
import { matchLevels, parseFilter, type FilterLevel } from '../../../auth/topic-filter.ts';
import { addCounters, emptyCounters, NO_PROCESSORS, type FailureReason, type OnError, type ProcessorCounters, type ProcessorState } from '../types.ts';
import { RETAIN_FLAG, type BatchResult, type BatchTask } from '../pool/task.ts';
import { BEAT_PROCESSOR, newBeat } from '../../../threads/heartbeat.ts';
import { BeatWatchdog, failureReason } from '../../../threads/beat-watchdog.ts';
import { BatchPump } from '../../../threads/batch-pump.ts';
import { threadEntry } from '../../../threads/entry.ts';
import { FROM_SOURCE } from '../../../install/root.ts';
import { lazyRequire } from '../../../lazy/lazy-require.ts';

// piscina is loaded with the first processor: a worker without scripts or extensions never does.
const piscina = lazyRequire<typeof import('piscina')>('piscina');

/** The pool thread's task handler: compiled, run-batch.js's runBatch; from the TypeScript sources,
 * thread.mjs, which registers tsx first and exports runBatch as its default. */
const POOL_ENTRY = FROM_SOURCE
  ? { filename: new URL('../pool/thread.mjs', import.meta.url).href }
  : { filename: threadEntry('run-batch').href, name: 'runBatch' };

export interface StageOptions {
  log: Logger;
  /** Pool threads of this worker. */
  threads: number;
  timeoutMs: number;
  memoryMb: number;
  onError: OnError;
  maxTopicLevels: number;
  /** Most messages in one batch (a batch also ends with the tick). */
  batchSize?: number;
}

/** What a message became: itself changed in place (one message), several, or null (dropped). */
type Out = Message | Message[] | null;

interface Pending {
  message: Message;
  clientId: string;
  list: number;
  done: (owner: never, tag: number, m: Message, out: Out) => void;
  owner: unknown;
  tag: number;
}

/** Topics remembered with the processors that apply to them; cleared when full. */
const TOPIC_CACHE_MAX = 10_000;
const BATCH_BYTES_MAX = 1 << 20;
/** How long a script that timed out runs with a time limit per call (script-runner.ts). */
const PRECISE_FOR_MS = 10 * 60_000;
/** Console lines logged per processor per second at most (the rest are counted). */
const LOG_LINES_PER_SECOND = 10;

export class ProcessorStage {
  private state: ProcessorState = NO_PROCESSORS;
  private filters: FilterLevel[][] = [];
  /** Distinct lists of processor indices, and per topic the index of its list (-1: none). */
  private lists: number[][] = [];
  private readonly listIds = new Map<string, number>();
  private readonly topicLists = new Map<string, number>();
  private pool: Piscina | null = null;
  /** The open batch, and closed ones waiting for a free slot (threads + 1 run at once). */
  private readonly batches: BatchPump<Pending>;
  private readonly counters = new Map<string, ProcessorCounters>();
  /** Scripts that timed out lately, by key: until when they run with a limit per call. */
  private readonly precise = new Map<string, number>();
  private readonly logBudget = new Map<string, { second: number; lines: number; dropped: number }>();
  private readonly batchSize: number;

  private readonly watchdog: BeatWatchdog;

  constructor(private readonly options: StageOptions) {
    this.watchdog = new BeatWatchdog(options.timeoutMs);
    this.batchSize = options.batchSize ?? 512;
    this.batches = new BatchPump(options.threads + 1, (batch, seq) => this.send(batch, seq));
  }

  /** The processors changed (or this worker just started). */
  setState(state: ProcessorState): void {
    const before = this.state;
    this.state = state;
    this.filters = state.processors.map((p) => parseFilter(p.topic));
    this.lists = [];
    this.listIds.clear();
    this.topicLists.clear();
    for (const id of this.counters.keys()) if (!state.processors.some((p) => p.id === id)) this.counters.delete(id);
    if (state.processors.length > 0 && this.pool === null) this.pool = this.newPool();
    else if (state.processors.length === 0 && this.pool !== null) void this.closePool();
    else if (before.processors.some((p) => !state.processors.some((q) => q.key === p.key))) this.sync();
  }

  /** Whether a processor applies to messages on `topic`. */
  wants(topic: string): boolean {
    if (this.state.processors.length === 0) return false;
    return this.listOf(topic) >= 0;
  }

  /** Runs the processors on `m` (published by `clientId`); `done(owner, tag, m, out)` gets what
   * it became: `m` itself changed in place, several messages, or null (dropped). Answers come in the order messages were given, also across batches.
   * `m`'s buffers are read when its batch is sent (a connection's read buffers are its own:
   * every read is a new one). */
  transform<T>(m: Message, clientId: string, done: (owner: T, tag: number, m: Message, out: Out) => void, owner: T, tag: number): void {
    const list = this.listOf(m.topic);
    if (list < 0) {
      done(owner, tag, m, m);
      return;
    }
    this.batches.add({ message: m, clientId, list, done: done as Pending['done'], owner, tag }, m.payload.length, this.batchSize, BATCH_BYTES_MAX);
  }

  /** Counters per processor id since this worker started. */
  runtime(): Record<string, ProcessorCounters> {
    return Object.fromEntries(this.counters);
  }

  async close(): Promise<void> {
    this.batches.flush();
    await this.closePool();
  }

  private listOf(topic: string): number {
    const known = this.topicLists.get(topic);
    if (known !== undefined) return known;
    const levels = topic.split('/');
    const list: number[] = [];
    for (let i = 0; i < this.filters.length; i++) if (matchLevels(this.filters[i], levels)) list.push(i);
    let id = -1;
    if (list.length > 0) {
      const key = list.join(',');
      id = this.listIds.get(key) ?? -1;
      if (id < 0) {
        id = this.lists.length;
        this.lists.push(list);
        this.listIds.set(key, id);
      }
    }
    if (this.topicLists.size >= TOPIC_CACHE_MAX) this.topicLists.clear();
    this.topicLists.set(topic, id);
    return id;
  }

  private async send(batch: Pending[], seq: number): Promise<void> {
    const state = this.state;
    const n = batch.length;
    let size = 0;
    for (const p of batch) size += p.message.payload.length;
    const bytes = new Uint8Array(size);
    const offsets = new Uint32Array(n + 1);
    const flags = new Uint8Array(n);
    const listOf = new Uint16Array(n);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const m = batch[i].message;
      offsets[i] = at;
      bytes.set(m.payload, at);
      at += m.payload.length;
      flags[i] = m.qos | (m.retain ? RETAIN_FLAG : 0);
      listOf[i] = batch[i].list;
    }
    offsets[n] = at;
    const task = this.task(state.processors, batch, bytes, offsets, flags, listOf);
    let result: BatchResult;
    try {
      const pool = this.pool;
      if (pool === null) throw new Error('the processors were removed');
      result = await this.watchdog.watch(task.beat, task.base, (signal) => pool.run(task, { transferList: [bytes.buffer], signal }) as Promise<BatchResult>);
    } catch (err) {
      this.batches.inOrder(seq, () => this.failed(batch, state, Atomics.load(task.beat, BEAT_PROCESSOR), err));
      return;
    }
    this.batches.inOrder(seq, () => this.answered(batch, state, result));
  }

  private answered(batch: Pending[], state: ProcessorState, r: BatchResult): void {
    for (let p = 0; p < state.processors.length; p++) {
      this.count(state.processors[p].id, r.counters[p]);
      if (r.counters[p].failed.timeout > 0) this.precise.set(state.processors[p].key, Date.now() + PRECISE_FOR_MS);
    }
    for (const [p, line] of r.logs) this.logLine(state.processors[p]?.name ?? '?', state.processors[p]?.id ?? '?', line);
    const buffer = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
    let j = 0;
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i];
      const message = p.message;
      const count = r.counts[i];
      if (count === 1) {
        // One message: this one, changed in place (no new object on the common path).
        const topic = r.topics[j];
        if (topic !== null) {
          message.topic = topic;
          message.topicBytes = Buffer.from(topic, 'utf8');
        }
        message.payload = buffer.subarray(r.offsets[j], r.offsets[j + 1]);
        j++;
        this.call(p, message);
        continue;
      }
      const out: Message[] = [];
      for (let k = 0; k < count; k++, j++) {
        const topic = r.topics[j];
        // Every field, in the order the engine makes them (one shape on the hot path).
        out.push({
          topic: topic ?? message.topic,
          topicBytes: topic === null ? message.topicBytes : Buffer.from(topic, 'utf8'),
          payload: buffer.subarray(r.offsets[j], r.offsets[j + 1]),
          qos: message.qos,
          retain: message.retain,
          props: message.props,
          expiresAt: message.expiresAt,
          receivedAt: message.receivedAt,
          storeId: undefined,
          seq: undefined,
        });
      }
      this.call(p, count === 0 ? null : out);
    }
  }

  /** The batch's task failed as a whole: every message passes unchanged or is dropped. */
  private failed(batch: Pending[], state: ProcessorState, running: number, err: unknown): void {
    const reason: FailureReason = failureReason(err);
    const spec = state.processors[running] ?? state.processors[0];
    if (spec && reason === 'timeout') this.precise.set(spec.key, Date.now() + PRECISE_FOR_MS);
    if (spec) {
      const c = emptyCounters();
      c.messages = batch.length;
      c.failed[reason] = batch.length;
      c.lastError = reason === 'memory' ? 'the pool thread ran out of memory (scripts.memoryLimit)' : reason === 'timeout' ? `a call did not return within ${this.options.timeoutMs} ms; its thread was ended` : `the batch failed: ${(err as Error).message}`;
      c.lastErrorAt = Date.now();
      this.count(spec.id, c);
      this.options.log.warn('processor failed on a batch', { processor: spec.name, id: spec.id, reason, messages: batch.length, onError: this.options.onError });
    }
    for (const p of batch) this.call(p, this.options.onError === 'pass' ? p.message : null);
  }

  /** One message's answer: a failure there (a bug) must not keep the others from theirs. */
  private call(p: Pending, out: Out): void {
    try {
      p.done(p.owner as never, p.tag, p.message, out);
    } catch (err) {
      this.options.log.error('publishing what a processor made failed (a bug)', { err });
    }
  }

  private count(id: string, c: ProcessorCounters): void {
    let total = this.counters.get(id);
    if (!total) this.counters.set(id, (total = emptyCounters()));
    addCounters(total, c);
  }

  private logLine(name: string, id: string, line: string): void {
    const second = Math.floor(Date.now() / 1000);
    let b = this.logBudget.get(id);
    if (!b || b.second !== second) {
      if (b && b.dropped > 0) this.options.log.info('script console lines dropped', { processor: name, id, dropped: b.dropped });
      b = { second, lines: 0, dropped: 0 };
      this.logBudget.set(id, b);
    }
    if (b.lines >= LOG_LINES_PER_SECOND) {
      b.dropped++;
      return;
    }
    b.lines++;
    this.options.log.info('script console', { processor: name, id, line });
  }

  private newPool(): Piscina {
    return new (piscina().Piscina)({
      ...POOL_ENTRY,
      minThreads: this.options.threads,
      maxThreads: this.options.threads,
      concurrentTasksPerWorker: 1,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: this.options.memoryMb, maxYoungGenerationSizeMb: Math.max(4, Math.min(32, this.options.memoryMb >> 2)) },
    });
  }

  /** An empty batch on each thread with `processors`: runners of the others are closed now. */
  private sync(pool = this.pool, processors = this.state.processors): Promise<unknown> {
    if (!pool) return Promise.resolve();
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < this.options.threads; i++) runs.push(pool.run(this.task(processors, [], new Uint8Array(0), new Uint32Array(1), new Uint8Array(0), new Uint16Array(0))).catch(() => {}));
    return Promise.all(runs);
  }

  private task(processors: ProcessorState['processors'], batch: readonly Pending[], bytes: Uint8Array, offsets: Uint32Array, flags: Uint8Array, listOf: Uint16Array): BatchTask {
    const now = Date.now();
    for (const [key, until] of this.precise) if (until < now) this.precise.delete(key);
    return {
      settings: { timeoutMs: this.options.timeoutMs, onError: this.options.onError, maxTopicLevels: this.options.maxTopicLevels, precise: [...this.precise.keys()] },
      processors,
      count: batch.length,
      topics: batch.map((p) => p.message.topic).join('\u0000'),
      clients: processors.some((p) => p.kind === 'extension') ? batch.map((p) => p.clientId).join('\u0000') : '',
      flags,
      listOf,
      lists: this.lists,
      bytes,
      offsets,
      beat: newBeat(),
      base: Date.now(),
    };
  }

  private async closePool(): Promise<void> {
    const pool = this.pool;
    if (!pool) return;
    this.pool = null;
    // Extensions get close() (an empty batch with no processors on each thread), then the end.
    await this.sync(pool, []);
    await pool.destroy().catch(() => {});
  }
}
