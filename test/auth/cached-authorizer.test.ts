// CachedAuthorizer: bounded LRU of decisions, synchronous on a hit, async inner results cached
// once resolved, rejections passed on, one identity per instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AuthError, CachedAuthorizer, StaticAuthorizer, type Action, type Authorizer, type ClientIdentity } from '../../src/auth/index.ts';

class CountingAuthorizer implements Authorizer {
  readonly allowsEverything = false;
  calls = 0;
  constructor(private readonly decide: (topic: string) => boolean | Promise<boolean>) {}
  authorize(_who: ClientIdentity, _action: Action, topic: string): boolean | Promise<boolean> {
    this.calls++;
    return this.decide(topic);
  }
}

const me = { clientId: 'c1', username: 'u1' };

test('a hit returns a boolean synchronously without asking the inner authorizer', async () => {
  const inner = new CountingAuthorizer(async (topic) => topic.startsWith('ok'));
  const cache = new CachedAuthorizer(inner, 8);
  const first = cache.authorize(me, 'publish', 'ok/1');
  assert.ok(first instanceof Promise);
  assert.equal(await first, true);
  const second = cache.authorize(me, 'publish', 'ok/1');
  assert.equal(second, true, 'a plain boolean, not a Promise');
  assert.equal(inner.calls, 1);
  assert.equal(await cache.authorize(me, 'publish', 'no/1'), false);
  assert.equal(cache.authorize(me, 'publish', 'no/1'), false, 'denials are cached too');
  assert.equal(inner.calls, 2);
});

test('publish and subscribe decisions are cached apart', () => {
  const inner = new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'publish', topic: 'a' }], aclDefault: 'deny' });
  const cache = new CachedAuthorizer(inner, 8);
  assert.equal(cache.authorize(me, 'publish', 'a'), true);
  assert.equal(cache.authorize(me, 'subscribe', 'a'), false);
  assert.equal(cache.size, 2);
});

test('the cache is bounded and evicts the least recently used decision', () => {
  const inner = new CountingAuthorizer(() => true);
  const cache = new CachedAuthorizer(inner, 3);
  for (const t of ['a', 'b', 'c']) cache.authorize(me, 'publish', t);
  cache.authorize(me, 'publish', 'a'); // a is now the most recent
  cache.authorize(me, 'publish', 'd'); // evicts b
  assert.equal(cache.size, 3);
  assert.equal(inner.calls, 4);
  cache.authorize(me, 'publish', 'a');
  cache.authorize(me, 'publish', 'c');
  cache.authorize(me, 'publish', 'd');
  assert.equal(inner.calls, 4, 'a, c, d still cached');
  cache.authorize(me, 'publish', 'b');
  assert.equal(inner.calls, 5, 'b was evicted');
  for (let i = 0; i < 1000; i++) cache.authorize(me, 'publish', `t/${i}`);
  assert.equal(cache.size, 3);
});

test('capacity 0 caches nothing', () => {
  const inner = new CountingAuthorizer(() => true);
  const cache = new CachedAuthorizer(inner, 0);
  cache.authorize(me, 'publish', 'a');
  cache.authorize(me, 'publish', 'a');
  assert.equal(inner.calls, 2);
  assert.equal(cache.size, 0);
});

test('a rejected decision is passed on and not cached', async () => {
  let fail = true;
  const inner = new CountingAuthorizer(async () => {
    if (fail) throw new Error('backend down');
    return true;
  });
  const cache = new CachedAuthorizer(inner, 4);
  await assert.rejects(async () => cache.authorize(me, 'publish', 'a'), /backend down/);
  fail = false;
  assert.equal(await cache.authorize(me, 'publish', 'a'), true);
  assert.equal(inner.calls, 2);
});

test('allowsEverything is passed through and short-circuits', () => {
  const cache = new CachedAuthorizer(new StaticAuthorizer({ acl: [], aclDefault: 'allow' }), 4);
  assert.equal(cache.allowsEverything, true);
  assert.equal(cache.authorize(me, 'publish', 'x'), true);
  assert.equal(cache.size, 0);
});

test('one instance answers for one client only', () => {
  const cache = new CachedAuthorizer(new CountingAuthorizer(() => true), 4);
  cache.authorize(me, 'publish', 'x');
  assert.throws(() => cache.authorize({ clientId: 'c2' }, 'publish', 'x'), (e: unknown) => e instanceof AuthError && e.code === 'AUTH_CACHE_MISUSE');
  cache.clear();
  assert.equal(cache.size, 0);
});
