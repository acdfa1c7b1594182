// ProcessorStage with its real piscina pool: an extension that never yields is cut off by the
// heartbeat watchdog (its thread ended), its message passes or is dropped per onError, and the
// next message is processed by a new thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ProcessorStage } from '../../src/features/scripts/worker/stage.ts';
import { createLogger } from '../../src/log/index.ts';
import type { Message } from '../../src/broker/message.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-stage-'));
writeFileSync(path.join(dir, 'spin.mjs'), `export class Spin { onMessage(m) { if (m.payload.toString() === 'spin') for (;;) {} return { payload: 'seen:' + m.payload }; } }`);

function message(topic: string, payload: string): Message {
  return { topic, topicBytes: Buffer.from(topic), payload: Buffer.from(payload), qos: 1, retain: false, props: null, expiresAt: 0, receivedAt: Date.now(), storeId: undefined, seq: undefined };
}

/** What the stage made of `m`, as a list (none: dropped). */
const transform = (stage: ProcessorStage, m: Message) =>
  new Promise<Message[]>((resolve) => stage.transform(m, 'c1', (done: (out: Message[]) => void, _tag, _m, out) => done(out === null ? [] : Array.isArray(out) ? out : [out]), resolve, 0));

test('answers come in the order messages went in, across batches', async () => {
  const stage = new ProcessorStage({ log: createLogger({ level: 'error', name: 'stage-test' }), threads: 2, timeoutMs: 200, memoryMb: 64, onError: 'pass', maxTopicLevels: 8, batchSize: 3 });
  // Odd messages are slow: with two threads a later batch finishes first.
  stage.setState({ processors: [{ id: 's', kind: 'script', name: 's', topic: '#', key: 's:1', content: 'function convert(t, p) { const n = +p.toString(); if (n % 6 < 3) { const end = Date.now() + 20; while (Date.now() < end) {} } return "v" + n; }' }] });
  try {
    const order: string[] = [];
    await Promise.all(Array.from({ length: 30 }, (_, i) => {
      const got = transform(stage, message('t', String(i)));
      return got.then((out) => {
        order.push(out[0].payload.toString());
      });
    }));
    assert.deepEqual(order, Array.from({ length: 30 }, (_, i) => `v${i}`));
  } finally {
    await stage.close();
  }
});

test('a script that never returns: its batch fails as a whole, then it runs in precise mode and only the looping message fails', async () => {
  const stage = new ProcessorStage({ log: createLogger({ level: 'error', name: 'stage-test' }), threads: 1, timeoutMs: 50, memoryMb: 64, onError: 'pass', maxTopicLevels: 8 });
  stage.setState({ processors: [{ id: 'loop', kind: 'script', name: 'loop', topic: '#', key: 'loop:1', content: 'function convert(t, p) { if (p.toString() === "spin") for (;;) {} return "ok:" + p; }' }] });
  try {
    const batch = (payloads: string[]) => Promise.all(payloads.map((p) => transform(stage, message('t', p))));
    const first = await batch(['a', 'spin', 'b']);
    assert.deepEqual(first.map((o) => o.map((m) => m.payload.toString())), [['a'], ['spin'], ['b']], 'the whole batch passed unchanged');
    assert.equal(stage.runtime().loop.failed.timeout, 3);
    const second = await batch(['c', 'spin', 'd']);
    assert.deepEqual(second.map((o) => o.map((m) => m.payload.toString())), [['ok:c'], ['spin'], ['ok:d']], 'precise: only the looping message failed');
    assert.equal(stage.runtime().loop.failed.timeout, 4);
  } finally {
    await stage.close();
  }
});

for (const onError of ['pass', 'drop'] as const) {
  test(`an extension that never yields has its thread ended; the message is handled per onError (${onError})`, async () => {
    const stage = new ProcessorStage({ log: createLogger({ level: 'error', name: 'stage-test' }), threads: 1, timeoutMs: 50, memoryMb: 64, onError, maxTopicLevels: 8 });
    stage.setState({ processors: [{ id: 'spin', kind: 'extension', name: 'spin', topic: 'x/#', key: 'spin:1', module: path.join(dir, 'spin.mjs'), exportName: 'Spin', options: {} }] });
    try {
      assert.equal(stage.wants('y/1'), false);
      assert.equal(stage.wants('x/1'), true);
      const first = await transform(stage, message('x/1', 'a'));
      assert.deepEqual(first.map((m) => m.payload.toString()), ['seen:a']);
      const spun = await transform(stage, message('x/1', 'spin'));
      assert.deepEqual(spun.map((m) => m.payload.toString()), onError === 'pass' ? ['spin'] : []);
      const after = await transform(stage, message('x/1', 'b'));
      assert.deepEqual(after.map((m) => m.payload.toString()), ['seen:b']);
      const c = stage.runtime().spin;
      assert.equal(c.failed.timeout, 1);
      assert.equal(c.converted, 2);
      assert.match(c.lastError!, /did not return within 50 ms/);
    } finally {
      await stage.close();
    }
  });
}
