// The failed sign-in tracker on its own, with a given clock: N failures in the window lock the
// address or the username for the lockout; failures expire with the window; a success resets
// nothing; attempts in flight count towards the limit; memory stays within the bound, expired
// entries dropped first.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { LoginLimiter } from '../../src/admin/login-limiter.ts';

const LIMITS = { maxFailures: 3, windowMs: 10_000, lockoutMs: 30_000 };

function fail(l: LoginLimiter, address: string, username: string, now: number) {
  assert.equal(l.begin(address, username, now), null, `${address}/${username} may try at ${now}`);
  return l.end(address, username, false, now);
}

test('the Nth failure of an address locks it for the lockout, whatever the username', () => {
  const l = new LoginLimiter(LIMITS);
  assert.deepEqual(fail(l, 'a', 'u1', 0), []);
  assert.deepEqual(fail(l, 'a', 'u2', 1), []);
  assert.deepEqual(fail(l, 'a', 'u3', 2), [{ kind: 'address', key: 'a', until: 30_002 }]);
  assert.deepEqual(l.begin('a', 'u4', 3), { kind: 'address', key: 'a', until: 30_002 });
  assert.equal(l.begin('b', 'u4', 3), null, 'another address is not locked');
  l.end('b', 'u4', true, 3);
  assert.notEqual(l.begin('a', 'u5', 30_001), null);
  assert.equal(l.begin('a', 'u5', 30_002), null, 'free again when the lockout passes');
});

test('the Nth failure for a username locks it, from any address', () => {
  const l = new LoginLimiter(LIMITS);
  fail(l, 'a', 'admin', 0);
  fail(l, 'b', 'admin', 0);
  assert.deepEqual(fail(l, 'c', 'admin', 0), [{ kind: 'username', key: 'admin', until: 30_000 }]);
  assert.equal(l.begin('d', 'admin', 1)?.kind, 'username');
});

test('failures expire with the window', () => {
  const l = new LoginLimiter(LIMITS);
  fail(l, 'a', 'u', 0);
  fail(l, 'a', 'u', 1);
  assert.deepEqual(fail(l, 'a', 'u', 10_001), [], 'the first two are out of the window');
});

test('a success resets no counter: neither its own address nor another', () => {
  const l = new LoginLimiter(LIMITS);
  fail(l, 'a', 'x1', 0);
  fail(l, 'a', 'x2', 0);
  assert.equal(l.begin('b', 'ok', 1), null);
  l.end('b', 'ok', true, 1);
  assert.equal(l.begin('a', 'ok', 1), null);
  l.end('a', 'ok', true, 1);
  assert.equal(fail(l, 'a', 'x3', 2)[0]?.kind, 'address');
});

test('attempts in flight count: a parallel burst gets no more than maxFailures checks', () => {
  const l = new LoginLimiter(LIMITS);
  const letThrough = Array.from({ length: 20 }, () => l.begin('a', 'u', 0)).filter((x) => x === null).length;
  assert.equal(letThrough, 3);
  assert.equal(l.begin('a', 'u', 0)?.until, 1000, 'refused for a second while the checks run');
  for (let i = 0; i < 3; i++) l.end('a', 'u', false, 5);
  assert.equal(l.begin('a', 'u', 6)?.until, 30_005, 'then locked out by the failures');
});

test('maxFailures 0 never locks', () => {
  const l = new LoginLimiter({ ...LIMITS, maxFailures: 0 });
  for (let i = 0; i < 100; i++) assert.equal(fail(l, 'a', 'u', i).length, 0);
});

test('memory is bounded: expired entries go first, then the least recently used, each counted', () => {
  let evicted = 0;
  const l = new LoginLimiter(LIMITS, () => evicted++, 10);
  for (let i = 0; i < 5; i++) fail(l, `old${i}`, `old-user${i}`, 0);
  assert.equal(l.size, 10);
  fail(l, 'new', 'new-user', 20_000);
  assert.equal(l.size, 2, 'the expired entries were swept');
  assert.equal(evicted, 0, 'dropping expired entries loses nothing');
  for (let i = 0; i < 20; i++) fail(l, `a${i}`, `u${i}`, 20_001);
  assert.ok(l.size <= 10);
  assert.ok(evicted > 0);
});
