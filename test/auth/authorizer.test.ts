// StaticAuthorizer: first match wins, aclDefault otherwise, username/clientId conditions, %c/%u
// substitution (always literal), publish matching and subscribe covering.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AuthError, StaticAuthorizer, subscriptionFilter, type AclRule } from '../../src/auth/index.ts';

const alice = { clientId: 'c-alice', username: 'alice' };
const anon = { clientId: 'c-anon' };

test('no rules and allow by default: everything is allowed and the broker may skip checks', () => {
  const az = new StaticAuthorizer({ acl: [], aclDefault: 'allow' });
  assert.equal(az.allowsEverything, true);
  assert.equal(az.authorize(anon, 'publish', 'x'), true);
  assert.equal(new StaticAuthorizer({ acl: [], aclDefault: 'deny' }).allowsEverything, false);
  assert.equal(new StaticAuthorizer({ acl: [], aclDefault: 'deny' }).authorize(anon, 'publish', 'x'), false);
  assert.equal(new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'pubsub', topic: '#' }], aclDefault: 'allow' }).allowsEverything, false);
});

test('first matching rule wins', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'deny', action: 'publish', topic: 'a/secret' },
      { permission: 'allow', action: 'publish', topic: 'a/#' },
      { permission: 'allow', action: 'publish', topic: 'a/secret' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(alice, 'publish', 'a/secret'), false);
  assert.equal(az.authorize(alice, 'publish', 'a/open'), true);
  assert.equal(az.authorize(alice, 'publish', 'b'), false, 'default');
});

test('actions: publish, subscribe and pubsub', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'allow', action: 'publish', topic: 'p/#' },
      { permission: 'allow', action: 'subscribe', topic: 's/#' },
      { permission: 'allow', action: 'pubsub', topic: 'ps/#' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(alice, 'publish', 'p/1'), true);
  assert.equal(az.authorize(alice, 'subscribe', 'p/1'), false);
  assert.equal(az.authorize(alice, 'subscribe', 's/1'), true);
  assert.equal(az.authorize(alice, 'publish', 's/1'), false);
  assert.equal(az.authorize(alice, 'publish', 'ps/1'), true);
  assert.equal(az.authorize(alice, 'subscribe', 'ps/+'), true);
});

test('username and clientId conditions', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'allow', action: 'pubsub', topic: 'admin/#', username: 'alice' },
      { permission: 'allow', action: 'pubsub', topic: 'dev/#', clientId: 'c-anon' },
      { permission: 'allow', action: 'pubsub', topic: 'both', username: 'alice', clientId: 'other' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(alice, 'publish', 'admin/x'), true);
  assert.equal(az.authorize(anon, 'publish', 'admin/x'), false);
  assert.equal(az.authorize({ clientId: 'c', username: 'mallory' }, 'publish', 'admin/x'), false);
  assert.equal(az.authorize(anon, 'publish', 'dev/x'), true);
  assert.equal(az.authorize(alice, 'publish', 'dev/x'), false);
  assert.equal(az.authorize(alice, 'publish', 'both'), false, 'both conditions must hold');
});

test('%c and %u are replaced by the client id and username', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'allow', action: 'pubsub', topic: 'clients/%c/#' },
      { permission: 'allow', action: 'pubsub', topic: 'users/%u/#' },
      { permission: 'allow', action: 'publish', topic: 'tele/dev-%c/%u-out' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(alice, 'publish', 'clients/c-alice/x'), true);
  assert.equal(az.authorize(alice, 'publish', 'clients/c-anon/x'), false);
  assert.equal(az.authorize(alice, 'subscribe', 'clients/c-alice/#'), true);
  assert.equal(az.authorize(alice, 'subscribe', 'clients/+/#'), false, 'cannot widen to other clients');
  assert.equal(az.authorize(alice, 'publish', 'users/alice/x'), true);
  assert.equal(az.authorize(anon, 'publish', 'users/undefined/x'), false, '%u never matches a client without username');
  assert.equal(az.authorize(anon, 'publish', 'users//x'), false);
  assert.equal(az.authorize(alice, 'publish', 'tele/dev-c-alice/alice-out'), true);
  assert.equal(az.authorize(anon, 'publish', 'tele/dev-c-anon/-out'), false);
});

test('wildcards in a client id or username are literal, and a / splits levels as written', () => {
  const az = new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'pubsub', topic: 'clients/%c/in' }], aclDefault: 'deny' });
  const sneaky = { clientId: '+' };
  assert.equal(az.authorize(sneaky, 'publish', 'clients/victim/in'), false);
  assert.equal(az.authorize(sneaky, 'subscribe', 'clients/+/in'), false);
  const hash = { clientId: '#' };
  assert.equal(az.authorize(hash, 'subscribe', 'clients/#'), false);
  const slash = { clientId: 'a/b' };
  assert.equal(az.authorize(slash, 'publish', 'clients/a/b/in'), true);
  const deny = new StaticAuthorizer({ acl: [{ permission: 'deny', action: 'publish', topic: 'clients/%c/secret' }], aclDefault: 'allow' });
  assert.equal(deny.authorize(slash, 'publish', 'clients/a/b/secret'), false, 'a deny rule still applies');
  const literal = new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'publish', topic: 'rate/100%%' }], aclDefault: 'deny' });
  assert.equal(literal.authorize(anon, 'publish', 'rate/100%'), true);
});

test('subscribe: the requested filter must be covered by the rule', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'allow', action: 'subscribe', topic: 'a/#' },
      { permission: 'allow', action: 'subscribe', topic: 'b/+' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(anon, 'subscribe', 'a/+/b'), true);
  assert.equal(az.authorize(anon, 'subscribe', 'b/x'), true);
  assert.equal(az.authorize(anon, 'subscribe', 'b/#'), false);
  assert.equal(az.authorize(anon, 'subscribe', '#'), false);
});

test('subscribe: a deny rule applies only to filters it covers', () => {
  const az = new StaticAuthorizer({
    acl: [
      { permission: 'deny', action: 'subscribe', topic: 'a/secret/#' },
      { permission: 'allow', action: 'subscribe', topic: '#' },
    ],
    aclDefault: 'deny',
  });
  assert.equal(az.authorize(anon, 'subscribe', 'a/secret/x'), false);
  assert.equal(az.authorize(anon, 'subscribe', 'a/public'), true);
  assert.equal(az.authorize(anon, 'subscribe', '$SYS/#'), false, '# does not cover $ topics');
});

test('shared subscriptions are checked on the filter they carry', () => {
  assert.equal(subscriptionFilter('$share/g1/a/b'), 'a/b');
  assert.equal(subscriptionFilter('$queue/a/#'), 'a/#');
  assert.equal(subscriptionFilter('a/b'), 'a/b');
  const az = new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'subscribe', topic: 'jobs/#' }], aclDefault: 'deny' });
  assert.equal(az.authorize(anon, 'subscribe', '$share/workers/jobs/+'), true);
  assert.equal(az.authorize(anon, 'subscribe', '$share/workers/other'), false);
});

test('malformed rules are refused with AUTH_CONFIG_INVALID', () => {
  const bad = (rule: Partial<AclRule>) => () => new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'pubsub', topic: 'a', ...rule } as AclRule], aclDefault: 'deny' });
  assert.throws(bad({ topic: 'a/#/b' }), (e: unknown) => e instanceof AuthError && e.code === 'AUTH_CONFIG_INVALID' && e.message.includes('acl[0].topic'));
  assert.throws(bad({ topic: 'a/%z' }), /placeholder/);
  assert.throws(bad({ topic: 'a/+%c' }), /whole level/);
  assert.throws(bad({ action: 'read' as AclRule['action'] }), /acl\[0\]\.action/);
  assert.throws(bad({ permission: 'maybe' as AclRule['permission'] }), /acl\[0\]\.permission/);
});
