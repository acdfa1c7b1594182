// A worker's half of the policies, against the main thread's half played in process (an answer
// function in place of the postMessage round trip): questions batched per tick; answers cached
// per credentials (TTL, bound, emptied on a policy change, never when a policy failed); the
// static users and ACL when every policy ignores; superusers and JWT grants; a chain that does not
// answer in time refuses, never allows.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { StaticAuthenticator, StaticAuthorizer, hashPassword, type AuthRequest } from '../../src/auth/index.ts';
import type { PolicyQuestion, PolicyReply, PolicyState } from '../../src/policies/channel.ts';
import type { AclAnswer, AuthAnswer } from '../../src/policies/types.ts';
import { AnswerCache } from '../../src/policies/worker/answer-cache.ts';
import { PolicyAuthenticator } from '../../src/policies/worker/policy-authenticator.ts';
import { PolicyAuthorizer, SUPERUSER } from '../../src/policies/worker/policy-authorizer.ts';
import { WorkerPolicies, type PolicyCounters } from '../../src/policies/worker/worker-policies.ts';
import { waitFor } from '../helpers/wait.ts';

const ACTIVE: PolicyState = { generation: 2, auth: true, acl: true, authParams: ['username'], aclParams: ['username'], tenants: null };

function counters(): PolicyCounters {
  return { authCacheHits: 0, authCacheMisses: 0, aclCacheHits: 0, aclCacheMisses: 0, timeouts: 0, overloaded: 0 };
}

/** A worker's WorkerPolicies whose questions are answered by `decide` (the main thread's chain). */
function line(decide: (q: PolicyQuestion) => { answer: AuthAnswer | AclAnswer; cacheable?: boolean } | null, options: { timeoutMs?: number; maxPending?: number } = {}) {
  const batches: PolicyQuestion[][] = [];
  const policies: WorkerPolicies = new WorkerPolicies({
    post(questions) {
      batches.push(questions);
      setImmediate(() => {
        const replies: PolicyReply[] = [];
        for (const q of questions) {
          const d = decide(q);
          if (d) replies.push({ id: q.id, answer: d.answer, cacheable: d.cacheable ?? true, generation: policies.state.generation });
        }
        policies.answer(replies);
      });
    },
    timeoutMs: options.timeoutMs ?? 5000,
    maxPending: options.maxPending ?? 1000,
    counters: counters(),
  });
  policies.setState(ACTIVE);
  return { policies, batches };
}

function req(username: string | undefined, password?: string, clientId = 'c1'): AuthRequest {
  return { clientId, username, password: password === undefined ? undefined : Buffer.from(password), remoteAddress: '10.0.0.1', protocolVersion: 5 };
}

const noUsers = () => new StaticAuthenticator({ allowAnonymous: false, users: [] });

test('questions of one tick go in one batch; each gets its own answer', async () => {
  const { policies, batches } = line((q) => ({ answer: q.kind === 'auth' && q.q.username === 'ok' ? { result: 'allow', superuser: false } : { result: 'deny', reason: 'no' } }));
  const auth = new PolicyAuthenticator(policies, new AnswerCache(100, 60_000), noUsers());
  const results = await Promise.all([auth.authenticate(req('ok', 'p')), auth.authenticate(req('bad', 'p')), auth.authenticate(req('ok', 'q'))]);
  assert.deepEqual(results.map((r) => r.ok), [true, false, true]);
  assert.equal(batches.length, 1);
  assert.equal(batches[0].length, 3);
  assert.equal(results[1].ok === false && results[1].reason, 'bad_credentials');
});

test('answers are cached per username and password, until the TTL or a policy change', async () => {
  let asked = 0;
  const { policies } = line(() => {
    asked++;
    return { answer: { result: 'allow', superuser: true } };
  });
  let now = 1000;
  const cache = new AnswerCache(100, 60_000, () => now);
  const auth = new PolicyAuthenticator(policies, cache, noUsers());
  assert.deepEqual(await auth.authenticate(req('u', 'p')), { ok: true, username: 'u', superuser: true, acl: undefined });
  const hit = auth.authenticate(req('u', 'p'));
  assert.ok(!(hit instanceof Promise), 'a cached answer is given at once');
  assert.equal(asked, 1);
  await auth.authenticate(req('u', 'other'));
  assert.equal(asked, 2, 'another password is another question');
  await auth.authenticate(req('u', 'p', 'another-client'));
  assert.equal(asked, 2, 'the client id is not part of the key when no policy reads it');
  now += 61_000;
  await auth.authenticate(req('u', 'p'));
  assert.equal(asked, 3, 'past the TTL the chain is asked again');
  policies.setState({ ...ACTIVE, generation: 3 });
  await auth.authenticate(req('u', 'p'));
  assert.equal(asked, 4, 'a policy change empties the cache');
  assert.equal(policies.counters.authCacheHits, 2);
  assert.equal(policies.counters.authCacheMisses, 4);
});

test('the client id is part of the key when a policy reads it', async () => {
  let asked = 0;
  const { policies } = line(() => (asked++, { answer: { result: 'allow', superuser: false } }));
  policies.setState({ ...ACTIVE, authParams: ['clientid', 'username'] });
  const auth = new PolicyAuthenticator(policies, new AnswerCache(100, 60_000), noUsers());
  await auth.authenticate(req('u', 'p', 'a'));
  await auth.authenticate(req('u', 'p', 'b'));
  await auth.authenticate(req('u', 'p', 'a'));
  assert.equal(asked, 2);
});

test('an answer reached while a policy failed is not cached; the cache is bounded', async () => {
  let asked = 0;
  const { policies } = line(() => (asked++, { answer: { result: 'ignore', error: true }, cacheable: false }));
  const cache = new AnswerCache(2, 60_000);
  const auth = new PolicyAuthenticator(policies, cache, noUsers());
  await auth.authenticate(req('u', 'p'));
  await auth.authenticate(req('u', 'p'));
  assert.equal(asked, 2);
  assert.equal(cache.size, 0);
  const { policies: p2 } = line(() => ({ answer: { result: 'deny', reason: 'x' } }));
  const bounded = new AnswerCache(2, 60_000);
  const auth2 = new PolicyAuthenticator(p2, bounded, noUsers());
  for (const u of ['a', 'b', 'c', 'd']) await auth2.authenticate(req(u, 'p'));
  assert.equal(bounded.size, 2);
});

test('every policy ignoring leaves the static users to decide; no credentials and no policies skip the chain', async () => {
  let asked = 0;
  const { policies } = line(() => (asked++, { answer: { result: 'ignore' } }));
  const users = new StaticAuthenticator({ allowAnonymous: true, users: [{ username: 'static', password: await hashPassword('pw') }] });
  const auth = new PolicyAuthenticator(policies, new AnswerCache(100, 60_000), users);
  assert.deepEqual(await auth.authenticate(req('static', 'pw')), { ok: true, username: 'static' });
  assert.equal((await auth.authenticate(req('static', 'wrong'))).ok, false);
  assert.equal(asked, 2);
  assert.deepEqual(await auth.authenticate(req(undefined)), { ok: true }, 'anonymous: straight to the static users');
  assert.equal(asked, 2);
  policies.setState({ ...ACTIVE, auth: false });
  assert.deepEqual(await auth.authenticate(req('static', 'pw')), { ok: true, username: 'static' });
  assert.equal(asked, 2, 'no enabled policy: never asked');
});

test('a chain that does not answer in time, or too many questions waiting, refuse as unavailable', async () => {
  const { policies } = line(() => null, { timeoutMs: 100, maxPending: 2 });
  const auth = new PolicyAuthenticator(policies, new AnswerCache(100, 60_000), new StaticAuthenticator({ allowAnonymous: true, users: [] }));
  const waiting = [auth.authenticate(req('a', 'p')), auth.authenticate(req('b', 'p'))];
  assert.deepEqual(await auth.authenticate(req('c', 'p')), { ok: false, reason: 'unavailable' }, 'past maxPending at once');
  for (const r of await Promise.all(waiting)) assert.deepEqual(r, { ok: false, reason: 'unavailable' });
  assert.equal(policies.counters.timeouts, 2);
  assert.equal(policies.counters.overloaded, 1);
});

test('ACL: the policy decides, ignore falls to the static ACL, decisions cached per connection until a change', async () => {
  let asked = 0;
  const { policies } = line((q) => {
    asked++;
    if (q.kind !== 'acl') return null;
    if (q.q.topic.startsWith('allowed/')) return { answer: { result: 'allow' } };
    if (q.q.topic.startsWith('denied/')) return { answer: { result: 'deny' } };
    return { answer: { result: 'ignore' } };
  });
  const fallback = new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'publish', topic: 'static/#' }], aclDefault: 'deny' });
  const who = { clientId: 'c1', username: 'u' };
  const authz = new PolicyAuthorizer(policies, fallback, who, () => '10.0.0.1', 16);
  assert.equal(authz.allowsEverything, false);
  assert.equal(await authz.authorize(who, 'publish', 'allowed/1'), true);
  assert.equal(await authz.authorize(who, 'publish', 'denied/1'), false);
  assert.equal(await authz.authorize(who, 'publish', 'static/1'), true, 'ignored: the static rule allows');
  assert.equal(await authz.authorize(who, 'publish', 'other'), false, 'ignored: aclDefault deny');
  assert.equal(await authz.authorize(who, 'subscribe', '$share/g/allowed/#'), true, 'a shared subscription asks for its filter');
  assert.equal(asked, 5);
  assert.equal(authz.authorize(who, 'publish', 'allowed/1'), true, 'a plain boolean from the cache');
  assert.equal(authz.authorize(who, 'publish', 'denied/1'), false);
  assert.equal(asked, 5);
  policies.setState({ ...ACTIVE, generation: 9 });
  await authz.authorize(who, 'publish', 'allowed/1');
  assert.equal(asked, 6, 'a policy change drops the decisions');
});

test('ACL: a failed policy or an unanswered question is not cached; a timeout refuses', async () => {
  let mode: 'fail' | 'silent' | 'allow' = 'fail';
  let asked = 0;
  const { policies } = line(() => {
    asked++;
    if (mode === 'silent') return null;
    return mode === 'fail' ? { answer: { result: 'ignore', error: true }, cacheable: false } : { answer: { result: 'allow' } };
  }, { timeoutMs: 100 });
  const who = { clientId: 'c1' };
  const authz = new PolicyAuthorizer(policies, new StaticAuthorizer({ acl: [], aclDefault: 'allow' }), who, () => '', 16);
  assert.equal(await authz.authorize(who, 'publish', 't'), true, 'the failed policy counts as ignore: aclDefault allow');
  mode = 'silent';
  assert.equal(await authz.authorize(who, 'publish', 't'), false, 'no answer: refused');
  mode = 'allow';
  assert.equal(await authz.authorize(who, 'publish', 't'), true);
  assert.equal(asked, 3, 'neither the failed nor the unanswered decision was cached');
});

test('ACL: policies added while connected apply to the connection; superusers and JWT grants', async () => {
  const { policies } = line(() => ({ answer: { result: 'deny' } }));
  policies.setState({ ...ACTIVE, acl: false });
  const who = { clientId: 'c1', username: 'u' };
  const authz = new PolicyAuthorizer(policies, new StaticAuthorizer({ acl: [], aclDefault: 'allow' }), who, () => '', 16);
  assert.equal(authz.allowsEverything, true, 'nothing to check yet');
  policies.setState({ ...ACTIVE, generation: 5 });
  assert.equal(authz.allowsEverything, false, 'an ACL policy appeared');
  assert.equal(await authz.authorize(who, 'publish', 'x'), false);
  assert.equal(SUPERUSER.allowsEverything, true);

  const granted = { clientId: 'dev-1', username: 'u', acl: [
    { permission: 'deny' as const, action: 'publish' as const, topic: 'devices/%c/secret' },
    { permission: 'allow' as const, action: 'all' as const, topic: 'devices/%c/#' },
    { permission: 'allow' as const, action: 'subscribe' as const, topic: 'broadcast/+' },
  ] };
  const jwt = new PolicyAuthorizer(policies, new StaticAuthorizer({ acl: [], aclDefault: 'allow' }), granted, () => '', 16);
  assert.equal(jwt.authorize(granted, 'publish', 'devices/dev-1/temp'), true, 'granted, no question asked');
  assert.equal(jwt.authorize(granted, 'publish', 'devices/dev-1/secret'), false);
  assert.equal(jwt.authorize(granted, 'subscribe', 'devices/dev-1/#'), true);
  assert.equal(jwt.authorize(granted, 'subscribe', 'broadcast/+'), true);
  assert.equal(await jwt.authorize(granted, 'subscribe', 'broadcast/#'), false, 'not covered by a grant: the policy (deny) decides');
  assert.equal(await jwt.authorize(granted, 'publish', 'devices/dev-2/temp'), false, '%c is this client');
});

test('a timed-out question answered late is ignored', async () => {
  const late: PolicyQuestion[] = [];
  const policies = new WorkerPolicies({ post: (qs) => late.push(...qs), timeoutMs: 100, maxPending: 10, counters: counters() });
  policies.setState(ACTIVE);
  const asked = policies.ask('acl', { clientid: 'c', peerhost: '', action: 'publish', topic: 't' });
  assert.equal(await asked, null);
  await waitFor(() => late.length === 1);
  policies.answer([{ id: late[0].id, answer: { result: 'allow' }, cacheable: true, generation: 2 }]);
  assert.equal(policies.counters.timeouts, 1);
});

test('a cached allow does not outlive its validUntil (a JWT\'s exp)', async () => {
  let asked = 0;
  let now = 10_000;
  const { policies } = line(() => (asked++, { answer: { result: 'allow', superuser: false, validUntil: now + 1000 } }));
  const auth = new PolicyAuthenticator(policies, new AnswerCache(100, 60_000, () => now), noUsers());
  await auth.authenticate(req('u', 'token'));
  await auth.authenticate(req('u', 'token'));
  assert.equal(asked, 1);
  now += 1001;
  await auth.authenticate(req('u', 'token'));
  assert.equal(asked, 2, 'past the token\'s exp the chain is asked again (within the 60 s TTL)');
});
