// SessionIndex unit tests (no engine, no sockets): sessions by handle and by client id, the
// sessions count kept in step, a newer session of a client id surviving the removal of an older
// one, and where a handed-over session went, remembered for MOVED_MEMORY_MS (mocked timers).
import { test, mock, afterEach } from 'node:test';
import assert from 'node:assert/strict';

import { SessionIndex, MOVED_MEMORY_MS } from '../../../src/engine/session/session-index.ts';
import { Session } from '../../../src/engine/session/session.ts';

const limits = { maxQueued: 10, dropPolicy: 'drop-newest' as const };

afterEach(() => mock.timers.reset());

test('add and remove keep byHandle, byClientId and the sessions count in step', () => {
  const stats = { sessions: 0 };
  const index = new SessionIndex(stats);
  const a = new Session(1, 'a', limits);
  const b = new Session(2, 'b', limits);
  index.add(a);
  index.add(b);
  assert.equal(stats.sessions, 2);
  assert.equal(index.size, 2);
  assert.equal(index.byClientId.get('a'), a);
  assert.deepEqual([...index.all()], [a, b]);
  index.remove(a);
  assert.equal(stats.sessions, 1);
  assert.equal(index.byHandle.has(1), false);
  assert.equal(index.byClientId.has('a'), false);
  assert.equal(index.has(b), true);
});

test('has() is about the very session, not another one with its handle', () => {
  const index = new SessionIndex({ sessions: 0 });
  const held = new Session(7, 'c', limits);
  index.add(held);
  assert.equal(index.has(held), true);
  assert.equal(index.has(new Session(7, 'c', limits)), false);
});

test('removing an older session of a client id leaves the newer one found by client id', () => {
  const index = new SessionIndex({ sessions: 0 });
  const older = new Session(1, 'same', limits);
  const newer = new Session(2, 'same', limits); // Clean Start: a new handle for the client id
  index.add(older);
  index.add(newer);
  index.remove(older);
  assert.equal(index.byClientId.get('same'), newer);
  assert.equal(index.byHandle.get(2), newer);
});

test('a moved session is remembered for MOVED_MEMORY_MS, and forgotten once it is back', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  const index = new SessionIndex({ sessions: 0 });
  index.markMoved(5, 1);
  assert.equal(index.movedTo(5), 1);
  mock.timers.tick(MOVED_MEMORY_MS - 1);
  assert.equal(index.movedTo(5), 1);
  mock.timers.tick(1);
  assert.equal(index.movedTo(5), undefined);
  index.markMoved(6, 2);
  index.arrived(6);
  assert.equal(index.movedTo(6), undefined);
});

test('the memory of an earlier move does not forget a later move of the same session', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  const index = new SessionIndex({ sessions: 0 });
  index.markMoved(5, 1);
  mock.timers.tick(MOVED_MEMORY_MS / 2);
  index.markMoved(5, 2); // it came back and left again, to worker 2
  mock.timers.tick(MOVED_MEMORY_MS / 2);
  assert.equal(index.movedTo(5), 2);
  mock.timers.tick(MOVED_MEMORY_MS / 2);
  assert.equal(index.movedTo(5), undefined);
});
