// Mosquitto ACL files: parsing (topic/user/pattern lines, optional access word, topics with
// spaces, comments) and decisions (anonymous block, per-user blocks, %c/%u patterns, deny first,
// not granted = denied), alone and behind the auth.acl rules of StaticAuthorizer.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseAclFile, aclFileAllows, StaticAuthorizer, MosquittoFileError, type AclFile } from '../../src/auth/index.ts';
import { PolicyAuthorizer } from '../../src/policies/worker/policy-authorizer.ts';
import { WorkerPolicies } from '../../src/policies/worker/worker-policies.ts';
import { parseFilter } from '../../src/auth/topic-filter.ts';

const FILE = `
# anonymous clients
topic read public/#
topic write public/anon-inbox

user alice
topic readwrite alice/#
topic deny alice/secret
topic read shared/+/status
topic write with space/topic name

user bob
# bob reads everything in building/, but not the vault
topic read building/#
topic deny building/vault/#
topic bob/%c

pattern write devices/%c/state
pattern read users/%u/#
pattern readwrite $SYS/broker/connection/%c/state
`;

function allows(acl: AclFile, who: { clientId: string; username?: string }, action: 'publish' | 'subscribe', topic: string): boolean {
  return aclFileAllows(acl, who, action === 'publish', action === 'publish' ? topic.split('/') : parseFilter(topic));
}

test('parsing: blocks, access words, default readwrite, topics with spaces', () => {
  const acl = parseAclFile(FILE);
  assert.deepEqual(acl.anonymous.map((r) => [r.access, r.pattern.source]), [['read', 'public/#'], ['write', 'public/anon-inbox']]);
  assert.deepEqual(acl.users.get('alice')!.map((r) => [r.access, r.pattern.source]), [
    ['readwrite', 'alice/#'], ['deny', 'alice/secret'], ['read', 'shared/+/status'], ['write', 'with space/topic name'],
  ]);
  // A `topic` line has no placeholders: %c is literal (escaped in the compiled pattern).
  assert.deepEqual(acl.users.get('bob')!.map((r) => [r.access, r.pattern.source, r.line]), [
    ['read', 'building/#', 14], ['deny', 'building/vault/#', 15], ['readwrite', 'bob/%%c', 16],
  ]);
  assert.equal(acl.patterns.length, 3);
});

test('anonymous clients get the lines before the first user line, and patterns without %u', () => {
  const acl = parseAclFile(FILE);
  const anon = { clientId: 'anon-1' };
  assert.equal(allows(acl, anon, 'subscribe', 'public/#'), true);
  assert.equal(allows(acl, anon, 'subscribe', 'public/news'), true);
  assert.equal(allows(acl, anon, 'publish', 'public/news'), false, 'read does not grant write');
  assert.equal(allows(acl, anon, 'publish', 'public/anon-inbox'), true);
  assert.equal(allows(acl, anon, 'subscribe', 'public/anon-inbox'), true);
  assert.equal(allows(acl, anon, 'subscribe', 'alice/x'), false);
  assert.equal(allows(acl, anon, 'publish', 'devices/anon-1/state'), true, '%c pattern');
  assert.equal(allows(acl, anon, 'subscribe', 'users/anon-1/#'), false, 'a %u pattern never applies without a username');
});

test('a user gets its own block (not the anonymous one) and the patterns', () => {
  const acl = parseAclFile(FILE);
  const alice = { clientId: 'c1', username: 'alice' };
  assert.equal(allows(acl, alice, 'publish', 'alice/a/b'), true);
  assert.equal(allows(acl, alice, 'subscribe', 'alice/x'), true);
  assert.equal(allows(acl, alice, 'subscribe', 'alice/+'), false, 'alice/+ could receive the denied alice/secret');
  assert.equal(allows(acl, alice, 'publish', 'alice/secret'), false, 'deny wins over the broader readwrite');
  assert.equal(allows(acl, alice, 'subscribe', 'alice/secret'), false);
  assert.equal(allows(acl, alice, 'subscribe', 'alice/#'), false, 'a subscription that could receive a denied topic is refused');
  assert.equal(allows(acl, alice, 'subscribe', 'alice/other/#'), true);
  assert.equal(allows(acl, alice, 'subscribe', 'public/#'), false, 'the anonymous block is not hers');
  assert.equal(allows(acl, alice, 'subscribe', 'shared/+/status'), true);
  assert.equal(allows(acl, alice, 'subscribe', 'shared/#'), false, 'the rule filter must cover the whole request');
  assert.equal(allows(acl, alice, 'publish', 'with space/topic name'), true);
  assert.equal(allows(acl, alice, 'subscribe', 'users/alice/inbox'), true, '%u pattern');
  assert.equal(allows(acl, alice, 'subscribe', 'users/bob/inbox'), false);
  assert.equal(allows(acl, alice, 'publish', 'devices/c1/state'), true, '%c pattern');
  assert.equal(allows(acl, alice, 'publish', 'devices/c2/state'), false);
  assert.equal(allows(acl, alice, 'publish', '$SYS/broker/connection/c1/state'), true);
  assert.equal(allows(acl, alice, 'subscribe', '$SYS/#'), false);

  const bob = { clientId: 'c2', username: 'bob' };
  assert.equal(allows(acl, bob, 'subscribe', 'building/1/temp'), true);
  assert.equal(allows(acl, bob, 'subscribe', 'building/vault/door'), false);
  assert.equal(allows(acl, bob, 'subscribe', 'building/+/door'), false, 'overlaps the denied building/vault/#');
  assert.equal(allows(acl, bob, 'publish', 'building/1/temp'), false, 'read only');
  assert.equal(allows(acl, bob, 'publish', 'bob/%c'), true, 'literal %c in a topic line');
  assert.equal(allows(acl, bob, 'publish', 'bob/c2'), false);

  const stranger = { clientId: 'c3', username: 'eve' };
  assert.equal(allows(acl, stranger, 'publish', 'public/anon-inbox'), false, 'users without a block get only the patterns');
  assert.equal(allows(acl, stranger, 'publish', 'devices/c3/state'), true);
});

test('malformed lines are errors naming the line; an empty file grants nothing', () => {
  const bad: [string, RegExp][] = [
    ['topoc read a/b', /expected "topic", "pattern" or "user", not "topoc"/],
    ['user', /"user" needs a username/],
    ['topic', /"topic" needs a topic/],
    ['topic read a/#/b', /not a valid topic filter/],
    ['pattern write a/%x', /not a valid topic filter: unknown placeholder/],
  ];
  for (const [line, message] of bad) {
    assert.throws(() => parseAclFile(`# x\n\n${line}`, 'acl'), (err: unknown) => {
      assert.ok(err instanceof MosquittoFileError);
      assert.equal(err.code, 'MOSQUITTO_ACL_INVALID');
      assert.match(err.message, /^acl line 3: /);
      assert.match(err.message, message);
      return true;
    }, line);
  }
  const empty = parseAclFile('# nothing\n');
  assert.equal(allows(empty, { clientId: 'a' }, 'publish', 'a'), false);
  // 'read' alone is the topic (no access word then): Mosquitto reads it the same way.
  assert.deepEqual(parseAclFile('topic read').anonymous.map((r) => [r.access, r.pattern.source]), [['readwrite', 'read']]);
});

test('StaticAuthorizer: auth.acl rules first, then the ACL file decides (aclDefault unused); $share filters', () => {
  const acl = parseAclFile(FILE);
  const holder = { current: acl, generation: 0 };
  const authz = new StaticAuthorizer({
    acl: [{ permission: 'deny', action: 'subscribe', topic: 'public/private' }, { permission: 'allow', action: 'publish', topic: 'ops/#' }],
    aclDefault: 'allow',
    mosquittoAcl: holder,
  });
  assert.equal(authz.allowsEverything, false);
  const anon = { clientId: 'x' };
  assert.equal(authz.authorize(anon, 'subscribe', 'public/private'), false, 'the auth.acl rule decides first');
  assert.equal(authz.authorize(anon, 'publish', 'ops/restart'), true, 'granted by auth.acl, not by the file');
  assert.equal(authz.authorize(anon, 'subscribe', 'public/news'), true, 'the file grants');
  assert.equal(authz.authorize(anon, 'subscribe', '$share/g/public/news'), true, 'shared subscription: the real filter');
  assert.equal(authz.authorize(anon, 'publish', 'elsewhere'), false, 'not granted by the file: denied although aclDefault is allow');
});

test('a reloaded ACL (new generation) empties the per-connection cache', () => {
  const holder = { current: parseAclFile('topic read a/#'), generation: 0 };
  const who = { clientId: 'x' };
  const noPolicies = new WorkerPolicies({ post: () => {}, timeoutMs: 1000, maxPending: 10, counters: { authCacheHits: 0, authCacheMisses: 0, aclCacheHits: 0, aclCacheMisses: 0, timeouts: 0, overloaded: 0 } });
  const cached = new PolicyAuthorizer(noPolicies, new StaticAuthorizer({ acl: [], aclDefault: 'deny', mosquittoAcl: holder }), who, () => '', 16);
  assert.equal(cached.authorize(who, 'subscribe', 'a/b'), true);
  assert.equal(cached.authorize(who, 'subscribe', 'b/c'), false);
  holder.current = parseAclFile('topic read b/#');
  holder.generation++;
  assert.equal(cached.authorize(who, 'subscribe', 'a/b'), false);
  assert.equal(cached.authorize(who, 'subscribe', 'b/c'), true);
});
