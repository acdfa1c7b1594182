// The pool's task handler (runBatch) on its own, in this thread: what convert's answers become,
// the per-call time limit (only the looping message fails), errors and invalid answers with the
// onError policy, console lines, and the context's isolation (no way to this realm's Function or
// process).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { runBatch } from '../../src/features/scripts/pool/run-batch.ts';
import type { BatchResult, BatchTask } from '../../src/features/scripts/pool/task.ts';
import type { OnError, ProcessorSpec } from '../../src/features/scripts/types.ts';

let version = 0;
function script(content: string, topic = '#'): ProcessorSpec {
  const id = `s${++version}`;
  return { id, kind: 'script', name: id, topic, key: `${id}:1`, content };
}

function task(processors: ProcessorSpec[], messages: [string, string][], onError: OnError = 'pass', timeoutMs = 100, precise = false): BatchTask {
  const payloads = messages.map(([, p]) => Buffer.from(p));
  const offsets = new Uint32Array(messages.length + 1);
  let at = 0;
  payloads.forEach((p, i) => {
    offsets[i] = at;
    at += p.length;
  });
  offsets[messages.length] = at;
  return {
    settings: { timeoutMs, onError, maxTopicLevels: 8, precise: precise ? processors.map((p) => p.key) : [] },
    count: messages.length,
    processors,
    topics: messages.map(([t]) => t).join('\u0000'),
    clients: messages.map(() => 'c1').join('\u0000'),
    flags: new Uint8Array(messages.length).fill(1),
    listOf: new Uint16Array(messages.length),
    lists: [processors.map((_, i) => i)],
    bytes: new Uint8Array(Buffer.concat(payloads)),
    offsets,
    beat: new Int32Array(new SharedArrayBuffer(8)),
    base: Date.now(),
  };
}

/** The messages a result holds, per input: [topic or null when unchanged, payload text]. */
function outputs(r: BatchResult): [string | null, string][][] {
  const out: [string | null, string][][] = [];
  let j = 0;
  for (const count of r.counts) {
    const one: [string | null, string][] = [];
    for (let k = 0; k < count; k++, j++) one.push([r.topics[j], Buffer.from(r.bytes.subarray(r.offsets[j], r.offsets[j + 1])).toString()]);
    out.push(one);
  }
  return out;
}

test('convert: a string or bytes replaces the payload, {topic, payload} also the topic, null drops, undefined keeps', async () => {
  const s = script(`
    function convert(topic, payload) {
      const text = payload.toString();
      if (text === 'drop') return null;
      if (text === 'keep') return undefined;
      if (text === 'move') return { topic: 'moved/' + topic, payload: text.toUpperCase() };
      if (text === 'bytes') return new Uint8Array([104, 105]);
      return text + '!';
    }`);
  const r = await runBatch(task([s], [['a', 'x'], ['b', 'drop'], ['c', 'keep'], ['d', 'move'], ['e', 'bytes'], ['f', 'héllo ✓']]));
  assert.deepEqual(outputs(r), [[[null, 'x!']], [], [[null, 'keep']], [['moved/d', 'MOVE']], [[null, 'hi']], [[null, 'héllo ✓!']]]);
  assert.equal(r.counters[0].messages, 6);
  assert.equal(r.counters[0].converted, 4);
  assert.equal(r.counters[0].dropped, 1);
  assert.equal(r.counters[0].unchanged, 1);
});

test('payload.toString takes hex and base64; JSON.parse(payload) reads the text', async () => {
  const s = script(`function convert(t, p) { return [p.toString('hex'), p.toString('base64'), JSON.parse(p).v].join(' '); }`);
  const r = await runBatch(task([s], [['t', '{"v":42}']]));
  assert.deepEqual(outputs(r), [[[null, `${Buffer.from('{"v":42}').toString('hex')} ${Buffer.from('{"v":42}').toString('base64')} 42`]]]);
});

test('processors apply in order, each on what the one before made', async () => {
  const a = script(`function convert(t, p) { return { topic: t + '/a', payload: p.toString() + 'a' }; }`);
  const b = script(`function convert(t, p) { return p.toString() + 'b'; }`);
  const r = await runBatch(task([a, b], [['x', '1']]));
  assert.deepEqual(outputs(r), [[['x/a', '1ab']]]);
});

test('precise mode: an endless loop is cut off at the time limit; that message alone fails, the others are converted', async () => {
  const s = script(`function convert(t, p) { if (p.toString() === 'loop') for (;;) {} return 'ok'; }`);
  const started = performance.now();
  const r = await runBatch(task([s], [['a', '1'], ['b', 'loop'], ['c', '3']], 'pass', 50, true));
  const took = performance.now() - started;
  assert.deepEqual(outputs(r), [[[null, 'ok']], [[null, 'loop']], [[null, 'ok']]]);
  assert.equal(r.counters[0].failed.timeout, 1);
  assert.equal(r.counters[0].converted, 2);
  assert.match(r.counters[0].lastError!, /longer than 50 ms/);
  assert.ok(took < 1000, `took ${took} ms`);
});

test('precise mode: a batch that is merely long is not a timeout, each call has the whole limit; nor in chunks', async () => {
  const s = script(`function convert(t, p) { const end = Date.now() + 15; while (Date.now() < end) {} return 'done'; }`);
  for (const precise of [true, false]) {
    const r = await runBatch(task([{ ...s, key: `${s.key}-${precise}` }], Array.from({ length: 8 }, (_, i): [string, string] => [`t${i}`, 'x']), 'drop', 40, precise));
    assert.equal(r.counters[0].failed.timeout, 0);
    assert.deepEqual(outputs(r).map((o) => o.length), [1, 1, 1, 1, 1, 1, 1, 1]);
  }
});

test('a throw, an invalid answer or topic fails that message: passed unchanged, or dropped with onError drop', async () => {
  const s = script(`
    function convert(t, p) {
      const v = p.toString();
      if (v === 'throw') throw new Error('bad input ' + v);
      if (v === 'number') return 42;
      if (v === 'wild') return { topic: 'a/#', payload: 'x' };
      if (v === 'sys') return { topic: '$SYS/x', payload: 'x' };
      if (v === 'deep') return { topic: 'a/b/c/d/e/f/g/h/i', payload: 'x' };
      if (v === 'promise') return Promise.resolve('x');
      return 'fine';
    }`);
  const inputs: [string, string][] = [['t', 'throw'], ['t', 'number'], ['t', 'wild'], ['t', 'sys'], ['t', 'deep'], ['t', 'promise'], ['t', 'ok']];
  const passed = await runBatch(task([s], inputs, 'pass'));
  assert.deepEqual(outputs(passed), [[[null, 'throw']], [[null, 'number']], [[null, 'wild']], [[null, 'sys']], [[null, 'deep']], [[null, 'promise']], [[null, 'fine']]]);
  assert.equal(passed.counters[0].failed.error, 1);
  assert.equal(passed.counters[0].failed.invalid, 5);
  const dropped = await runBatch(task([{ ...s, key: 'other' }], inputs, 'drop'));
  assert.deepEqual(outputs(dropped).map((o) => o.length), [0, 0, 0, 0, 0, 0, 1]);
});

test('a script that does not load fails every message with the reason', async () => {
  const none = await runBatch(task([script('const x = 1;')], [['t', 'a']]));
  assert.equal(none.counters[0].failed.error, 1);
  assert.match(none.counters[0].lastError!, /defines no function convert/);
  const throws = await runBatch(task([script('throw new Error("at load")')], [['t', 'a']]));
  assert.match(throws.counters[0].lastError!, /failed to load: at load/);
});

test('console lines come back with the result, bounded', async () => {
  const r = await runBatch(task([script(`function convert(t, p) { console.log('saw', t, { n: 1 }); }`)], Array.from({ length: 60 }, (): [string, string] => ['t', 'x'])));
  assert.equal(r.logs.length, 50);
  assert.deepEqual(r.logs[0], [0, 'saw t {"n":1}']);
});

test('the context reaches nothing of this realm: no process, no require, no Function from strings', async () => {
  const s = script(`
    function attempt(f) { try { return String(f()); } catch (e) { return 'refused'; } }
    function convert(t, p) {
      return [
        typeof process, typeof require, typeof globalThis.Buffer,
        attempt(() => this.constructor.constructor('return process')()),
        attempt(() => p.constructor.constructor('return process')()),
        attempt(() => convert.constructor('return 1')()),
        attempt(() => console.log.constructor('return process')()),
      ].join(',');
    }`);
  const r = await runBatch(task([s], [['t', 'x']]));
  assert.deepEqual(outputs(r), [[[null, 'undefined,undefined,undefined,refused,refused,refused,refused']]]);
});
