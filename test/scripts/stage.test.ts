// ProcessorStage with its real piscina pool: an extension that never yields is cut off by the
// heartbeat watchdog (its thread ended), its message passes or is dropped per onError, and the
// next message is processed by a new thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ProcessorStage } from '../../src/scripts/worker/stage.ts';
import { createLogger } from '../../src/log/index.ts';
import type { Message } from '../../src/broker/message.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-stage-'));
writeFileSync(path.join(dir, 'spin.mjs'), `export class Spin { onMessage(m) { if (m.payload.toString() === 'spin') for (;;) {} return { payload: 'seen:' + m.payload }; } }`);

function message(topic: string, payload: string): Message {
  return { topic, topicBytes: Buffer.from(topic), payload: Buffer.from(payload), qos: 1, retain: false, props: null, expiresAt: 0, receivedAt: Date.now(), storeId: undefined, seq: undefined };
}

for (const onError of ['pass', 'drop'] as const) {
  test(`an extension that never yields has its thread ended; the message is handled per onError (${onError})`, async () => {
    const stage = new ProcessorStage({ log: createLogger({ level: 'error', name: 'stage-test' }), threads: 1, timeoutMs: 50, memoryMb: 64, onError, maxTopicLevels: 8 });
    stage.setState({ processors: [{ id: 'spin', kind: 'extension', name: 'spin', topic: 'x/#', key: 'spin:1', module: path.join(dir, 'spin.mjs'), exportName: 'Spin', options: {} }] });
    try {
      assert.equal(stage.wants('y/1'), false);
      assert.equal(stage.wants('x/1'), true);
      const first = await stage.transform(message('x/1', 'a'), 'c1');
      assert.deepEqual(first.map((m) => m.payload.toString()), ['seen:a']);
      const spun = await stage.transform(message('x/1', 'spin'), 'c1');
      assert.deepEqual(spun.map((m) => m.payload.toString()), onError === 'pass' ? ['spin'] : []);
      const after = await stage.transform(message('x/1', 'b'), 'c1');
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
