// Message ids (src/store/message-id.ts): increasing per generator, unique across generators (the
// nodes sharing a store, and their workers) even when they make ids in the same millisecond, and
// past 256 in one millisecond; the time they were made reads back.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MAIN_THREAD, MAX_NODE_SLOTS, MessageIds, storedAtMs } from '../../src/store/message-id.ts';

test('ids grow per generator and never meet across node slots and threads', () => {
  const gens = [new MessageIds(0, 0), new MessageIds(1, 0), new MessageIds(0, 1), new MessageIds(63, MAIN_THREAD), new MessageIds(1, 1)];
  const seen = new Set<bigint>();
  const before = Date.now();
  for (const g of gens) {
    let last = -1n;
    for (let i = 0; i < 5000; i++) {
      const id = g.next();
      assert.ok(id > last, 'increasing');
      last = id;
      assert.ok(!seen.has(id), 'unique across generators');
      seen.add(id);
    }
  }
  const first = new MessageIds(5, 7).next();
  assert.ok(storedAtMs(first) >= before && storedAtMs(first) <= Date.now() + 1);
  assert.ok(first < 2n ** 63n, 'fits a signed 64-bit column');
});

test('a node slot outside 0..63 is refused', () => {
  assert.throws(() => new MessageIds(MAX_NODE_SLOTS, 0), /node slot 64/);
  assert.throws(() => new MessageIds(-1, 0), RangeError);
});
