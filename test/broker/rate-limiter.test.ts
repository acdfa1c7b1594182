// The token buckets of the rate limits, on a clock the test moves: a client's limiter (messages,
// bytes, bursts, a packet larger than its burst, a limit changed at run time) and an endpoint's
// total shared by two limiters as two workers would share it.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RateLimiter } from '../../src/broker/rate-limiter.ts';
import { SharedRateBuckets, sharedRateBucketsBytes } from '../../src/broker/shared-rate-buckets.ts';
import { THROTTLE } from '../../src/broker/rate-limit.ts';

const noTotal = { slot: 0, config: {} };
const shared = () => new SharedRateBuckets(new SharedArrayBuffer(sharedRateBucketsBytes(4)), 0, 4);

test('messages: the burst at once, then one per 1000/rate ms; a refused message is not taken', () => {
  const l = new RateLimiter({ messagesPerSecond: 10, messagesBurst: 3 }, 0, noTotal, shared());
  for (let i = 0; i < 3; i++) assert.equal(l.admit(10, 0), 0);
  assert.equal(l.admit(10, 0), 100);
  assert.equal(l.lastKind, THROTTLE.messages);
  assert.equal(l.admit(10, 50), 50, 'nothing was taken by the refusal: half a token now');
  assert.equal(l.admit(10, 100), 0);
  assert.equal(l.admit(10, 100), 100);
  // Idle for long: no more than the burst.
  for (let i = 0; i < 3; i++) assert.equal(l.admit(10, 10_000), 0);
  assert.ok(l.admit(10, 10_000) > 0);
});

test('bytes: counted per packet; a packet larger than the burst is taken from a full bucket, which owes the rest', () => {
  const l = new RateLimiter({ bytesPerSecond: 1000, bytesBurst: 500 }, 0, noTotal, shared());
  assert.equal(l.admit(400, 0), 0);
  assert.equal(l.admit(400, 0), 300, '300 bytes short at 1 byte per ms');
  assert.equal(l.lastKind, THROTTLE.bytes);
  assert.equal(l.admit(2000, 300), 100, 'a packet above the burst waits for a full bucket');
  assert.equal(l.admit(2000, 400), 0);
  assert.equal(l.admit(1, 400), 1501, 'the bucket owes 1500 bytes');
});

test('a limit changed at run time keeps the tokens, within the new burst; no rate: nothing limited', () => {
  const l = new RateLimiter({ messagesPerSecond: 100 }, 0, noTotal, shared());
  l.set({ messagesPerSecond: 1, messagesBurst: 1 });
  assert.equal(l.admit(1, 0), 0);
  assert.equal(l.admit(1, 0), 1000);
  l.set(null);
  assert.equal(l.active, false);
  for (let i = 0; i < 1000; i++) assert.equal(l.admit(1, 0), 0);
});

test('an endpoint total is shared: two limiters (two workers) take from one bucket', () => {
  // Epoch ms, as Date.now() gives: a slot never used fills to its burst at its first use.
  const T = 1_700_000_000_000;
  const totals = shared();
  const ep = { slot: 2, config: { totalRateLimit: { messagesPerSecond: 4, messagesBurst: 2 } } };
  const a = new RateLimiter(null, T, ep, totals);
  const b = new RateLimiter(null, T, ep, totals);
  assert.equal(a.admit(1, T + 0), 0);
  assert.equal(b.admit(1, T + 0), 0);
  assert.equal(a.admit(1, T + 0), 250);
  assert.equal(a.lastKind, THROTTLE.totalMessages);
  assert.equal(b.admit(1, T + 250), 0);
  assert.equal(a.admit(1, T + 250), 250, 'b took the token a waited for');
  // Another slot is another endpoint.
  const other = new RateLimiter(null, T, { slot: 3, config: { totalRateLimit: { messagesPerSecond: 4, messagesBurst: 2 } } }, totals);
  assert.equal(other.admit(1, T + 250), 0);
  // The client's own limit is checked first; a refusal there takes nothing from the total.
  const own = new RateLimiter({ messagesPerSecond: 1, messagesBurst: 1 }, T + 1000, ep, totals);
  assert.equal(own.admit(1, T + 1000), 0);
  assert.equal(own.admit(1, T + 1000), 1000);
  assert.equal(own.lastKind, THROTTLE.messages);
  assert.equal(a.admit(1, T + 1000), 0, 'the total kept its token');
});
