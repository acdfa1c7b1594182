// The pool thread's task handler: runs the processors of a worker's state on one batch of
// messages, in order, each on the messages its filter matched (and on what earlier processors
// made of them). Runners are kept per processor key, so a script is compiled and an extension
// loaded once per thread; one whose key is no longer in the state is closed and forgotten.
import { ExtensionRunner } from './extension-runner.ts';
import { ScriptRunner } from './script-runner.ts';
import { isFailure, type Item, type MessageMeta, type Runner } from './runner.ts';
import { beat, pause } from '../../../threads/heartbeat.ts';
import { MAX_LOG_LINES, QOS_MASK, RETAIN_FLAG, type BatchResult, type BatchTask } from './task.ts';
import { emptyCounters, type ProcessorCounters, type ProcessorSpec } from '../types.ts';

const runners = new Map<string, Runner>();

function runnerFor(p: ProcessorSpec, task: BatchTask): Runner {
  let r = runners.get(p.key);
  if (!r) {
    const { timeoutMs, maxTopicLevels } = task.settings;
    r = p.kind === 'script'
      ? new ScriptRunner(p.content ?? '', timeoutMs, maxTopicLevels)
      : new ExtensionRunner(p.module!, p.exportName!, p.options ?? {}, timeoutMs, maxTopicLevels);
    runners.set(p.key, r);
  }
  return r;
}

/** Closes the runners of processors the state no longer has. */
async function forget(current: readonly ProcessorSpec[]): Promise<void> {
  const keys = new Set(current.map((p) => p.key));
  for (const [key, r] of runners) {
    if (keys.has(key)) continue;
    runners.delete(key);
    await r.close();
  }
}

export async function runBatch(task: BatchTask): Promise<BatchResult> {
  await forget(task.processors);
  const n = task.count;
  const topics = n === 0 ? [] : task.topics.split('\u0000');
  let clients: string[] | undefined;
  const meta = (src: number): MessageMeta => ({ clientId: (clients ??= task.clients.split('\u0000'))[src] ?? '', qos: (task.flags[src] & QOS_MASK) as 0 | 1 | 2, retain: (task.flags[src] & RETAIN_FLAG) !== 0 });
  const precise = new Set(task.settings.precise);
  let items: Item[] = new Array(n);
  for (let i = 0; i < n; i++) {
    items[i] = { src: i, topic: topics[i], payload: Buffer.from(task.bytes.buffer, task.bytes.byteOffset + task.offsets[i], task.offsets[i + 1] - task.offsets[i]), topicChanged: false };
  }
  // applies[list][p]: whether processor p is in that list.
  const applies = task.lists.map((list) => {
    const a = new Uint8Array(task.processors.length);
    for (const p of list) a[p] = 1;
    return a;
  });
  const counters: ProcessorCounters[] = task.processors.map(() => emptyCounters());
  const logs: [number, string][] = [];
  for (let p = 0; p < task.processors.length; p++) {
    const mine = items.filter((m) => applies[task.listOf[m.src]][p] === 1);
    if (mine.length === 0) continue;
    const c = counters[p];
    const runner = runnerFor(task.processors[p], task);
    pause(task.beat);
    await runner.ready();
    const started = performance.now();
    beat(task.beat, task.base, p);
    const outcomes = await runner.run(mine, {
      meta,
      beat: () => beat(task.beat, task.base, p),
      log: (line) => {
        if (logs.length < MAX_LOG_LINES) logs.push([p, line]);
      },
      precise: precise.has(task.processors[p].key),
    });
    c.micros += Math.round((performance.now() - started) * 1000);
    c.messages += mine.length;
    const next: Item[] = [];
    let k = 0;
    for (const m of items) {
      if (applies[task.listOf[m.src]][p] !== 1) {
        next.push(m);
        continue;
      }
      const o = outcomes[k++];
      if (o === undefined) {
        c.unchanged++;
        next.push(m);
      } else if (isFailure(o)) {
        c.failed[o.reason]++;
        c.lastError = o.message;
        c.lastErrorAt = Date.now();
        if (task.settings.onError === 'pass') next.push(m);
      } else if (o.length === 0) {
        c.dropped++;
      } else {
        c.converted++;
        for (const out of o) next.push(out);
      }
    }
    items = next;
  }
  return encode(n, items, counters, logs);
}

function encode(n: number, items: Item[], counters: ProcessorCounters[], logs: [number, string][]): BatchResult {
  const counts = new Uint32Array(n);
  const topics: (string | null)[] = new Array(items.length);
  const offsets = new Uint32Array(items.length + 1);
  let size = 0;
  for (const m of items) size += m.payload.length;
  const bytes = new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < items.length; i++) {
    const m = items[i];
    counts[m.src]++;
    topics[i] = m.topicChanged ? m.topic : null;
    offsets[i] = at;
    bytes.set(m.payload, at);
    at += m.payload.length;
  }
  offsets[items.length] = at;
  return { counts, topics, bytes, offsets, counters, logs };
}
