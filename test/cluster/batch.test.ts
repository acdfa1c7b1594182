// The frames messages cross nodes in: what is encoded decodes the same (MQTT 5 properties, the
// plain flag, the shared groups the destination was picked for, the publisher's hash, the
// message's identity across the cluster and the client ids it is only for), frames stay under the limit,
// a message over it alone is left out and counted, and a cut frame is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeBatch, encodeBatch, encodeFrames, frameSize, type FrameMessage } from '../../src/cluster/batch.ts';

const m = (topic: string, n: number, qos: 0 | 1 | 2 = 1, props: Uint8Array | null = null, plain = true, shares: string[] | null = null, only: string[] | null = null): FrameMessage => ({ topic, payload: new Uint8Array(n).fill(7), qos, retain: n % 2 === 0, expiresAt: n * 1000, props, plain, shares, publisherHash: (n * 2654435761) >>> 0, origin: qos === 0 ? '' : `node-ä/lq3x8k/${n}`, only });

const plainOf = (x: { topic: string; payload: Uint8Array; qos: number; retain: boolean; expiresAt: number; props: Uint8Array | null; plain?: boolean; shares?: readonly string[] | null; publisherHash?: number; origin?: string; only?: readonly string[] | null }) => ({ topic: x.topic, payload: [...x.payload], qos: x.qos, retain: x.retain, expiresAt: x.expiresAt, props: x.props === null ? null : [...x.props], plain: x.plain, shares: x.shares, publisherHash: x.publisherHash, origin: x.origin, only: x.only });

test('a batch decodes to what was encoded', () => {
  const messages = [
    m('a/b', 0, 0),
    m('ünï/çødé', 10, 2, new Uint8Array([0x26, 0, 1, 0x6b, 0, 1, 0x76])),
    m('x', 300, 1, null, false, ['$share/g/x']),
    m('y', 0, 1, new Uint8Array([0x01, 1]), true, ['$share/g/#', '$share/grüppe/+', '$share/DEFAULT/y']),
    m('z', 3, 2, null, false, null),
    m('fwd', 4, 1, null, true, null, ['dev-1', 'ünï-2', '']),
  ];
  const encoded = encodeBatch(messages);
  assert.equal(encoded.length, messages.reduce((n, x) => n + frameSize(x), 0));
  const back = decodeBatch(encoded);
  assert.deepEqual(back.map(plainOf), messages.map(plainOf));
});

test('frames stay under the limit; a message over it alone is left out', () => {
  const messages = Array.from({ length: 50 }, (_, i) => m(`t/${i}`, 100, 1, null, i % 3 !== 0, i % 2 === 0 ? [`$share/g${i}/t/#`] : null));
  messages.splice(10, 0, m('huge', 5000));
  const { frames, tooLarge } = encodeFrames(messages, 1000);
  assert.equal(tooLarge, 1);
  assert.ok(frames.every((f) => f.length <= 1000));
  const back = frames.flatMap((f) => decodeBatch(f));
  assert.deepEqual(back.map(plainOf), messages.filter((x) => x.topic !== 'huge').map(plainOf));
});

test('a cut frame is refused', () => {
  const f = encodeBatch([m('a', 50, 1, null, true, ['$share/g/a'], ['dev-1'])]);
  for (const cut of [1, 5, 8, 50, 55, f.length - 20]) assert.throws(() => decodeBatch(f.subarray(0, f.length - cut)), /cut short/);
});
