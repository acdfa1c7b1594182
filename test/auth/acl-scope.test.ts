// What a subscription may read (src/auth/acl-scope.ts): 'all', 'some' or 'none', from ordered
// rules (auth.acl), a Mosquitto ACL file, and both after a chain of policies that ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ScopeWalk } from '../../src/auth/acl-scope.ts';
import { StaticAuthorizer, type AclRule } from '../../src/auth/static-authorizer.ts';
import { aclFileScope, parseAclFile } from '../../src/auth/mosquitto/acl-file.ts';
import { parseFilter } from '../../src/auth/topic-filter.ts';

const U = { clientId: 'c1', username: 'u' };

function scopes(acl: AclRule[], aclDefault: 'allow' | 'deny', filters: string[]): Record<string, string> {
  const a = new StaticAuthorizer({ acl, aclDefault });
  return Object.fromEntries(filters.map((f) => [f, a.subscribeScope(U, f)]));
}

test('auth.acl: a deny inside a granted wildcard makes it "some"; a deny covering the filter makes it "none"', () => {
  const acl: AclRule[] = [
    { permission: 'deny', action: 'subscribe', topic: 'secret/#' },
    { permission: 'allow', action: 'pubsub', topic: '#' },
  ];
  assert.deepEqual(scopes(acl, 'deny', ['#', '+/x', '$share/g/#', 'secret/#', 'secret/x', 'public/#', 'public/x', '$SYS/#']), {
    '#': 'some', '+/x': 'some', '$share/g/#': 'some', 'secret/#': 'none', 'secret/x': 'none', 'public/#': 'all', 'public/x': 'all',
    // No rule reaches $SYS (a leading wildcard matches no $ topic): aclDefault deny.
    '$SYS/#': 'none',
  });
});

test('auth.acl: a narrower allow under a default deny makes a wider filter "some"; rules for other users or publish do not count', () => {
  const acl: AclRule[] = [
    { permission: 'deny', action: 'subscribe', topic: 'a/#', username: 'someone-else' },
    { permission: 'deny', action: 'publish', topic: 'a/secret' },
    { permission: 'allow', action: 'subscribe', topic: 'a/+' },
    { permission: 'allow', action: 'subscribe', topic: 'devices/%c/#' },
  ];
  assert.deepEqual(scopes(acl, 'deny', ['a/#', 'a/+', 'a/b', '#', 'devices/+/t', 'devices/c1/#', 'b/#']), {
    'a/#': 'some', 'a/+': 'all', 'a/b': 'all', '#': 'some', 'devices/+/t': 'some', 'devices/c1/#': 'all', 'b/#': 'none',
  });
});

test('the first rule that covers decides: an allow after a covering deny is never reached', () => {
  const acl: AclRule[] = [
    { permission: 'deny', action: 'subscribe', topic: '#' },
    { permission: 'allow', action: 'subscribe', topic: 'a/#' },
  ];
  assert.deepEqual(scopes(acl, 'allow', ['#', 'a/#']), { '#': 'none', 'a/#': 'none' });
});

test('a Mosquitto ACL file: deny entries first; a read grant covering with a deny inside is "some"', () => {
  const file = parseAclFile(['user u', 'topic deny secret/#', 'topic readwrite #', 'topic write only/#', 'pattern read devices/%c/#', ''].join('\n'));
  const scope = (f: string) => aclFileScope(file, U, parseFilter(f));
  assert.equal(scope('#'), 'some');
  assert.equal(scope('secret/#'), 'none');
  assert.equal(scope('public/#'), 'all');
  const w = parseAclFile(['user u', 'topic write only/#', 'pattern read devices/%c/#', ''].join('\n'));
  assert.equal(aclFileScope(w, U, parseFilter('only/#')), 'none', 'write grants no read');
  assert.equal(aclFileScope(w, U, parseFilter('devices/#')), 'some');
  assert.equal(aclFileScope(w, U, parseFilter('devices/c1/t')), 'all');
});

test('ScopeWalk: overlaps from ACLs asked before carry over (a policy chain that ignored)', () => {
  assert.equal(new ScopeWalk({ allow: false, deny: true }).decide(true), 'some');
  assert.equal(new ScopeWalk({ allow: true, deny: false }).decide(false), 'some');
  assert.equal(new ScopeWalk().decide(false), 'none');
  const a = new StaticAuthorizer({ acl: [], aclDefault: 'allow' });
  assert.equal(a.subscribeScope(U, '#', { allow: false, deny: true }), 'some');
  assert.equal(a.subscribeScope(U, '#'), 'all');
});
