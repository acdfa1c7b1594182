// The frames retained messages cross nodes in (src/cluster/retained-frames.ts): sets and clears
// round-trip with their version, QoS, expiry and properties; frames are cut under the limit and the
// last of a reply is flagged (an empty reply is one flagged frame); malformed frames throw.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { decodeRetained, encodeRetained, FLAG_LAST, type RetainedEntry } from '../../src/cluster/retained-frames.ts';
import { nodeTag, recordVersion } from '../../src/cluster/retained.ts';
import { toRecord } from '../../src/broker/message.ts';

const set = (topic: string, payload: string, version = 5n): RetainedEntry => ({
  topic,
  version,
  message: { qos: 1, expiresAt: 1_900_000_000_000, props: Buffer.from([0x03, 0x00, 0x01, 0x78]), payload: Buffer.from(payload) },
});

test('sets and clears round-trip', () => {
  const entries: RetainedEntry[] = [set('a/b', 'hello', (1_800_000_000_000n << 22n) | 7n), { topic: 'c/ü', version: 9n, message: null }, set('e', '')];
  const { frames, tooLarge } = encodeRetained(entries, 1 << 20);
  assert.equal(tooLarge, 0);
  assert.equal(frames.length, 1);
  const { last, entries: back } = decodeRetained(frames[0]);
  assert.equal(last, false);
  assert.equal(back.length, 3);
  assert.equal(back[0].topic, 'a/b');
  assert.equal(back[0].version, (1_800_000_000_000n << 22n) | 7n);
  assert.equal(back[0].message?.qos, 1);
  assert.equal(back[0].message?.expiresAt, 1_900_000_000_000);
  assert.deepEqual([...back[0].message!.props!], [0x03, 0x00, 0x01, 0x78]);
  assert.equal(Buffer.from(back[0].message!.payload).toString(), 'hello');
  assert.deepEqual(back[1], { topic: 'c/ü', version: 9n, message: null });
  assert.equal(back[2].message?.payload.length, 0);
});

test('frames are cut under the limit; the last of a reply is flagged; too large entries are counted', () => {
  const entries = Array.from({ length: 10 }, (_, i) => set(`t/${i}`, 'x'.repeat(100)));
  entries.push(set('huge', 'y'.repeat(1000)));
  const { frames, tooLarge } = encodeRetained(entries, 400, true);
  assert.equal(tooLarge, 1);
  assert.ok(frames.length >= 4);
  for (const f of frames) assert.ok(f.length <= 400);
  assert.deepEqual(frames.map((f) => (f[0] & FLAG_LAST) !== 0), frames.map((_, i) => i === frames.length - 1));
  assert.deepEqual(frames.flatMap((f) => decodeRetained(f).entries.map((e) => e.topic)), Array.from({ length: 10 }, (_, i) => `t/${i}`));
  const empty = encodeRetained([], 400, true);
  assert.equal(empty.frames.length, 1);
  assert.deepEqual(decodeRetained(empty.frames[0]), { last: true, entries: [] });
});

test('malformed frames throw', () => {
  const good = encodeRetained([set('a', 'b')], 1000).frames[0];
  const cases: [string, Uint8Array][] = [
    ['empty', new Uint8Array(0)],
    ['cut in the header', good.subarray(0, 6)],
    ['cut in the payload', good.subarray(0, good.length - 1)],
    ['unknown kind', Buffer.from([0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x61])],
    ['QoS 3', (() => {
      const b = Buffer.from(good);
      b[1 + 1 + 8 + 2 + 1] = 3;
      return b;
    })()],
  ];
  for (const [name, frame] of cases) assert.throws(() => decodeRetained(frame), Error, name);
});

test('a record version is its store id, or its receipt second without one; node tags are 22 bits', () => {
  const m = { topic: 't', topicBytes: Buffer.from('t'), payload: Buffer.from('p'), qos: 0 as const, retain: true, props: null, expiresAt: 0, receivedAt: 1_700_000_000_500 };
  assert.equal(recordVersion(toRecord(m)), 1_700_000_000_000n << 22n);
  assert.equal(recordVersion(toRecord({ ...m, storeId: 123n })), 123n);
  assert.ok(nodeTag('node-a') < 1 << 22);
  assert.notEqual(nodeTag('node-a'), nodeTag('node-b'));
});
