// InternalSessions unit tests (no engine, no sockets): the broker's own sessions deliver to their
// sink and queue nothing; closing one takes its routes out once, and closing a session that was
// already replaced under its handle leaves the new one alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { InternalSessions } from '../../../src/engine/session/internal-sessions.ts';
import type { Delivery } from '../../../src/router/delivery.ts';

function table() {
  const removed: number[] = [];
  return { removed, internal: new InternalSessions((handle) => removed.push(handle)) };
}

test('an internal session is found by its handle, delivers to its sink and queues nothing', () => {
  const { internal } = table();
  const got: Delivery[] = [];
  const s = internal.open(9, '$local/9', (d) => got.push(d));
  assert.equal(internal.get(9), s);
  assert.equal(internal.has(s), true);
  assert.equal(s.clientId, '$local/9');
  assert.equal(s.sink !== null, true);
  const d = { qos: 0 } as unknown as Delivery;
  s.sink?.(d);
  assert.deepEqual(got, [d]);
  // maxQueued 0: what the sink is not given is not kept.
  assert.equal(s.queue.push(d), d, 'dropped at once');
  assert.equal(s.queuedCount, 0);
});

test('close takes the routes out once; closing again does nothing', () => {
  const { internal, removed } = table();
  const s = internal.open(3, 'x', () => {});
  internal.close(s);
  internal.close(s);
  assert.deepEqual(removed, [3]);
  assert.equal(internal.get(3), undefined);
  assert.equal(internal.has(s), false);
});

test('closing a session replaced under its handle leaves the new one and its routes alone', () => {
  const { internal, removed } = table();
  const old = internal.open(4, 'x', () => {});
  const fresh = internal.open(4, 'x', () => {}); // reopened after a worker restart
  internal.close(old);
  assert.deepEqual(removed, []);
  assert.equal(internal.get(4), fresh);
});
