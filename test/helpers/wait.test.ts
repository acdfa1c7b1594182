// The wait helpers themselves: waitFor answers the condition's value, retries throwing checks,
// and times out with a message that says what was waited for; waitForEvent answers the event's
// arguments, honours its filter and times out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';

import { waitFor, waitForEvent } from './wait.ts';

test('waitFor resolves with the first truthy value of a sync or async condition', async () => {
  let n = 0;
  assert.equal(await waitFor(() => ++n >= 3 && n, { interval: 1 }), 3);
  let m = 0;
  assert.deepEqual(await waitFor(async () => (++m === 2 ? { m } : null), { interval: 1 }), { m: 2 });
});

test('waitFor treats a throwing check as not yet met', async () => {
  let n = 0;
  const v = await waitFor(() => {
    n++;
    assert.ok(n > 2, 'not yet');
    return 'done';
  }, { interval: 1 });
  assert.equal(v, 'done');
});

test('waitFor times out with the message, the last value or error', async () => {
  await assert.rejects(waitFor(() => 0, { timeout: 50, message: 'the counter to move' }), /timed out after 50 ms .*the counter to move; last value: 0/);
  await assert.rejects(waitFor(() => { throw new Error('boom'); }, { timeout: 30 }), /last check threw: boom/);
});

test('waitForEvent resolves with the arguments of the first event passing the filter; rejects on timeout', async () => {
  const e = new EventEmitter();
  const got = waitForEvent(e, 'message', { filter: (topic: string) => topic === 'b' });
  e.emit('message', 'a', 1);
  e.emit('message', 'b', 2);
  assert.deepEqual(await got, ['b', 2]);
  assert.equal(e.listenerCount('message'), 0);
  await assert.rejects(waitForEvent(e, 'close', { timeout: 20 }), /no 'close' event within 20 ms/);
  assert.equal(e.listenerCount('close'), 0);
});
