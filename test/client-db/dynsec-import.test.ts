// Reading a Mosquitto dynamic-security.json into the client database's import: a client's roles
// flattened in the plugin's order (its own by priority, then each group's by the group's priority),
// ACLs ordered by priority with literals before patterns, each ACL type mapped, unsubscribe ACLs
// and clients without a password reported, defaults and the anonymous group, '%' taken literally,
// and a malformed file refused naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { fromDynsec } from '../../src/features/client-db/dynsec-import.ts';
import { DomainError } from '../../src/errors/domain-error.ts';

const ROLE = (rolename: string, acls: unknown[] = []) => ({ rolename, acls });

test('roles flattened in the order the plugin checks them; ACLs mapped and ordered', () => {
  const { data, skipped } = fromDynsec({
    defaultACLAccess: { publishClientSend: true, publishClientReceive: false, subscribe: true, unsubscribe: true },
    clients: [
      { username: 'u', password: 'aGFzaA==', salt: 'c2FsdA==', iterations: 7, clientid: 'cid', disabled: true, textname: 'U', roles: [{ rolename: 'low', priority: 1 }, { rolename: 'high', priority: 5 }] },
      { username: 'nopw', roles: [] },
    ],
    groups: [
      { groupname: 'g-low', roles: [{ rolename: 'g1' }], clients: [{ username: 'u', priority: 1 }] },
      { groupname: 'g-high', roles: [{ rolename: 'g2', priority: 1 }, { rolename: 'high', priority: 9 }], clients: [{ username: 'u', priority: 3 }] },
    ],
    anonymousGroup: 'g-high',
    roles: [
      ROLE('low'),
      ROLE('high', [
        { acltype: 'subscribePattern', topic: 'p/#', allow: true },
        { acltype: 'subscribeLiteral', topic: 'l/+', allow: false },
        { acltype: 'publishClientSend', topic: 'first/%x', allow: true, priority: 3 },
        { acltype: 'publishClientReceive', topic: 'r/#', allow: false },
        { acltype: 'unsubscribePattern', topic: '#', allow: true },
      ]),
      ROLE('g1'),
      ROLE('g2'),
    ],
  });
  const u = data.clients.find((c) => c.username === 'u')!;
  assert.deepEqual(u.roles.map((r) => r.name), ['high', 'low', 'g2', 'g1'], 'own roles by priority, then g-high (3) before g-low (1); high counted once');
  assert.equal(u.passwordHash, '$7$7$c2FsdA==$aGFzaA==');
  assert.equal(u.clientId, 'cid');
  assert.equal(u.enabled, false);
  assert.equal(u.textName, 'U');
  const high = data.roles.find((r) => r.name === 'high')!;
  assert.deepEqual(high.rules, [
    { action: 'publish', permission: 'allow', topic: 'first/%%x' },
    { action: 'subscribe-filter', permission: 'deny', topic: 'l/+', literal: true },
    { action: 'subscribe-filter', permission: 'allow', topic: 'p/#' },
    { action: 'subscribe', permission: 'deny', topic: 'r/#' },
  ]);
  assert.deepEqual(data.settings, { anonymousRoles: ['high', 'g2'], defaultAccess: { publish: 'allow', subscribe: 'deny', subscribeFilter: 'allow' } });
  assert.equal(skipped.length, 2);
  assert.match(skipped[0], /unsubscribePattern/);
  assert.match(skipped[1], /nopw has no password/);
});

test('without defaults or an anonymous group: the plugin\'s defaults, anonymous clients get the defaults only', () => {
  const { data } = fromDynsec({ clients: [], roles: [] });
  assert.deepEqual(data.settings, { anonymousRoles: [], defaultAccess: { publish: 'deny', subscribe: 'allow', subscribeFilter: 'deny' } });
});

test('a malformed file is refused naming the field', () => {
  const refused = (config: unknown, field: string) => assert.throws(() => fromDynsec(config), (err: DomainError) => err.status === 400 && err.field === field);
  refused([], 'config');
  refused({ roles: [ROLE('r', [{ acltype: 'publishEverything', topic: '#', allow: true }])] }, 'config.roles[0].acls[0].acltype');
  refused({ roles: [], clients: [{ username: 'u', password: 'x', salt: 'y', roles: [{ rolename: 'missing' }] }] }, 'config.clients[0].roles[0].rolename');
  refused({ roles: [ROLE('r'), ROLE('r')] }, 'config.roles[1].rolename');
  refused({ roles: [], groups: [], anonymousGroup: 'nope' }, 'config.anonymousGroup');
});
