// The frames messages cross nodes in: what is encoded decodes the same, frames stay under the
// limit, a message over it alone is left out and counted, and a cut frame is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeBatch, encodeBatch, encodeFrames } from '../../src/cluster/batch.ts';

const m = (topic: string, n: number, qos: 0 | 1 | 2 = 1, props: Uint8Array | null = null) => ({ topic, payload: new Uint8Array(n).fill(7), qos, retain: n % 2 === 0, expiresAt: n * 1000, props });

test('a batch decodes to what was encoded', () => {
  const messages = [m('a/b', 0, 0), m('ünï/çødé', 10, 2, new Uint8Array([0x26, 0, 1, 0x6b, 0, 1, 0x76])), m('x', 300), m('y', 0, 1, new Uint8Array([0x01, 1]))];
  const back = decodeBatch(encodeBatch(messages));
  const plain = (x: (typeof back)[number]) => ({ topic: x.topic, payload: [...x.payload], qos: x.qos, retain: x.retain, expiresAt: x.expiresAt, props: x.props === null ? null : [...x.props] });
  assert.deepEqual(back.map(plain), messages.map(plain));
});

test('frames stay under the limit; a message over it alone is left out', () => {
  const messages = Array.from({ length: 50 }, (_, i) => m(`t/${i}`, 100));
  messages.splice(10, 0, m('huge', 5000));
  const { frames, tooLarge } = encodeFrames(messages, 1000);
  assert.equal(tooLarge, 1);
  assert.ok(frames.every((f) => f.length <= 1000));
  assert.deepEqual(frames.flatMap((f) => decodeBatch(f).map((x) => x.topic)), messages.filter((x) => x.topic !== 'huge').map((x) => x.topic));
});

test('a cut frame is refused', () => {
  const f = encodeBatch([m('a', 50)]);
  assert.throws(() => decodeBatch(f.subarray(0, f.length - 1)), /cut short/);
});
