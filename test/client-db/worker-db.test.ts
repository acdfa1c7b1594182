// A worker's copy of the built-in client database, asked through PolicyAuthorizer as the worker
// asks it: publish rules with %u and %c, what a subscription may read (all / some / none) and the
// read check of each delivered topic, the subscribe-filter gate of imported dynamic-security roles,
// anonymous roles, default access, and a change of a role taking effect for a connection's next
// question (its cached decisions dropped). Also the authenticator: password, disabled, client id
// binding, a Mosquitto $7$ hash, and the verified cache dropped when the client changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pbkdf2Sync } from 'node:crypto';

import { StaticAuthorizer, hashPassword, type Authenticator } from '../../src/auth/index.ts';
import { PolicyAuthorizer } from '../../src/policies/worker/policy-authorizer.ts';
import { WorkerPolicies } from '../../src/policies/worker/worker-policies.ts';
import { WorkerClientDb } from '../../src/features/client-db/worker-db.ts';
import { ClientDbAuthenticator } from '../../src/features/client-db/authenticator.ts';
import { orderRoles } from '../../src/features/client-db/manager.ts';
import type { RoleRule, SettingsDoc } from '../../src/features/client-db/types.ts';

const policies = new WorkerPolicies({ post: () => undefined, timeoutMs: 100, maxPending: 10, counters: { authCacheHits: 0, authCacheMisses: 0, aclCacheHits: 0, aclCacheMisses: 0, timeouts: 0, overloaded: 0 } });
const allowAll = new StaticAuthorizer({ acl: [], aclDefault: 'allow' });

function db(roles: Record<string, RoleRule[]>, clients: Record<string, string[]>, settings: SettingsDoc = { anonymousRoles: null, defaultAccess: { publish: 'deny', subscribe: 'deny' } }): WorkerClientDb {
  const d = new WorkerClientDb();
  d.apply({
    full: true,
    roles: Object.entries(roles).map(([name, rules]) => ({ name, rules })),
    clients: Object.entries(clients).map(([username, r]) => ({ username, passwordHash: '$7$1$c2FsdA==$aGFzaA==', enabled: true, roles: r })),
    settings,
  });
  return d;
}

const DEVICE: RoleRule[] = [
  { action: 'publish', permission: 'allow', topic: 'devices/%u/%c/#' },
  { action: 'subscribe', permission: 'deny', topic: 'cmd/secret/#' },
  { action: 'subscribe', permission: 'allow', topic: 'cmd/#' },
];

test('publish rules expand %u and %c; what no rule allows is refused (default deny)', () => {
  const d = db({ device: DEVICE }, { u: ['device'] });
  const who = { clientId: 'c1', username: 'u' };
  const a = new PolicyAuthorizer(policies, allowAll, who, () => '', 16, d);
  assert.equal(a.allowsEverything, false);
  assert.equal(a.authorize(who, 'publish', 'devices/u/c1/temp'), true);
  assert.equal(a.authorize(who, 'publish', 'devices/u/c2/temp'), false);
  assert.equal(a.authorize(who, 'publish', 'elsewhere'), false);
});

test('read scope: a wildcard over a deny is some (each delivery checked), a filter inside the deny none, one inside the allow all', () => {
  const d = db({ device: DEVICE }, { u: ['device'] });
  const who = { clientId: 'c1', username: 'u' };
  const a = new PolicyAuthorizer(policies, allowAll, who, () => '', 16, d);
  assert.equal(a.subscribeScope(who, 'cmd/#'), 'some');
  assert.equal(a.subscribeScope(who, '$share/g/cmd/#'), 'some');
  assert.equal(a.subscribeScope(who, 'cmd/secret/#'), 'none');
  assert.equal(a.subscribeScope(who, 'cmd/reboot'), 'all');
  assert.equal(a.subscribeScope(who, 'other/#'), 'none');
  assert.equal(a.authorize(who, 'subscribe', 'cmd/secret/key'), false, 'a delivered secret');
  assert.equal(a.authorize(who, 'subscribe', 'cmd/reboot'), true);
});

test('clients the database does not hold are left to the rest of the chain; with defaults left out, so are its own', () => {
  const d = db({ device: DEVICE }, { u: ['device'] }, { anonymousRoles: null, defaultAccess: {} });
  const stranger = { clientId: 's', username: 'someone' };
  const a = new PolicyAuthorizer(policies, allowAll, stranger, () => '', 16, d);
  assert.equal(a.allowsEverything, true, 'no check at all for a client it does not hold');
  const who = { clientId: 'c1', username: 'u' };
  const b = new PolicyAuthorizer(policies, new StaticAuthorizer({ acl: [{ permission: 'allow', action: 'pubsub', topic: 'static/#' }], aclDefault: 'deny' }), who, () => '', 16, d);
  assert.equal(b.authorize(who, 'publish', 'static/x'), true, 'auth.acl decides what the roles leave');
  assert.equal(b.authorize(who, 'publish', 'other/x'), false);
  assert.equal(b.subscribeScope(who, '#'), 'some', 'the deny of the role makes # partial, auth.acl allows static/#');
});

test('a role change applies to the next question of a connection that cached the old answer', () => {
  const d = db({ device: DEVICE }, { u: ['device'] });
  const who = { clientId: 'c1', username: 'u' };
  const a = new PolicyAuthorizer(policies, allowAll, who, () => '', 16, d);
  assert.equal(a.authorize(who, 'publish', 'news'), false);
  assert.equal(a.authorize(who, 'publish', 'news'), false, 'cached');
  d.apply({ roles: [{ name: 'device', rules: [{ action: 'publish', permission: 'allow', topic: 'news' }, ...DEVICE] }] });
  assert.equal(a.authorize(who, 'publish', 'news'), true);
  d.apply({ clients: [{ username: 'u', passwordHash: '$7$1$c2FsdA==$aGFzaA==', enabled: true, roles: [] }] });
  assert.equal(a.authorize(who, 'publish', 'news'), false, 'the role taken from the client');
});

test('roles in priority order: the first rule of the highest role decides', () => {
  assert.deepEqual(orderRoles([{ name: 'a' }, { name: 'b', priority: 5 }, { name: 'c' }, { name: 'd', priority: 5 }]), ['b', 'd', 'a', 'c']);
  const d = db({ deny: [{ action: 'publish', permission: 'deny', topic: 'x' }], allow: [{ action: 'publish', permission: 'allow', topic: '#' }] }, { u: orderRoles([{ name: 'allow' }, { name: 'deny', priority: 1 }]) });
  const who = { clientId: 'c', username: 'u' };
  const a = new PolicyAuthorizer(policies, allowAll, who, () => '', 16, d);
  assert.equal(a.authorize(who, 'publish', 'x'), false);
  assert.equal(a.authorize(who, 'publish', 'y'), true);
});

test('dynamic-security semantics: subscribe-filter rules gate the SUBSCRIBE, read rules and the default decide deliveries', () => {
  const roles = {
    r: [
      { action: 'subscribe', permission: 'deny', topic: 'secret/#' },
      { action: 'subscribe-filter', permission: 'allow', topic: 'lit/+', literal: true },
      { action: 'subscribe-filter', permission: 'allow', topic: 'pub/#' },
      { action: 'subscribe-filter', permission: 'allow', topic: '#' },
    ] as RoleRule[],
    narrow: [{ action: 'subscribe-filter', permission: 'allow', topic: 'pub/#' }] as RoleRule[],
  };
  const settings: SettingsDoc = { anonymousRoles: ['narrow'], defaultAccess: { publish: 'deny', subscribe: 'allow', subscribeFilter: 'deny' } };
  const d = db(roles, { u: ['r'] }, settings);
  const who = { clientId: 'c', username: 'u' };
  const a = new PolicyAuthorizer(policies, allowAll, who, () => '', 16, d);
  assert.equal(a.subscribeScope(who, '#'), 'some', 'granted; secret/# deliveries are refused');
  assert.equal(a.authorize(who, 'subscribe', 'secret/x'), false);
  assert.equal(a.authorize(who, 'subscribe', 'public/x'), true, 'default publishClientReceive allow');
  assert.equal(a.subscribeScope(who, 'lit/+'), 'all');
  assert.equal(a.subscribeScope(who, 'secret/#'), 'some', 'the filter check grants it (as Mosquitto does); every delivery is refused');
  assert.equal(a.subscribeScope(who, 'lit/x'), 'all', 'granted by the # pattern; lit/+ as text applies to the filter lit/+ only');
  const anon = { clientId: 'anon' };
  const b = new PolicyAuthorizer(policies, allowAll, anon, () => '', 16, d);
  assert.equal(b.allowsEverything, false, 'anonymous clients have roles');
  assert.equal(b.subscribeScope(anon, 'pub/a'), 'all');
  assert.equal(b.subscribeScope(anon, 'other'), 'none', 'default subscribe deny');
  assert.equal(b.subscribeScope(anon, 'lit/+'), 'none', 'a literal rule of another role does not apply');
});

test('authenticator: password, disabled, client id binding, a Mosquitto $7$ hash, the verified cache dropped on a change', async () => {
  const d = new WorkerClientDb();
  const salt = Buffer.from('0123456789abcdef');
  const pbkdf2 = `$7$101$${salt.toString('base64')}$${pbkdf2Sync('mosq-pw', salt, 101, 64, 'sha512').toString('base64')}`;
  d.apply({ full: true, clients: [
    { username: 'a', passwordHash: await hashPassword('a-pw'), enabled: true, roles: [] },
    { username: 'off', passwordHash: await hashPassword('x'), enabled: false, roles: [] },
    { username: 'bound', passwordHash: await hashPassword('b'), clientId: 'only-me', enabled: true, roles: [] },
    { username: 'm', passwordHash: pbkdf2, enabled: true, roles: [] },
  ], roles: [] });
  const next: Authenticator = { authenticate: () => ({ ok: false, reason: 'not_authorized' }) };
  const auth = new ClientDbAuthenticator(d, next, true);
  const ask = (username: string, password: string, clientId = 'c') => auth.authenticate({ clientId, username, password: Buffer.from(password), remoteAddress: '', protocolVersion: 5 });
  assert.deepEqual(await ask('a', 'a-pw'), { ok: true, username: 'a' });
  assert.deepEqual(await ask('a', 'nope'), { ok: false, reason: 'bad_credentials' });
  assert.deepEqual(await ask('off', 'x'), { ok: false, reason: 'not_authorized' });
  assert.deepEqual(await ask('bound', 'b', 'other'), { ok: false, reason: 'not_authorized' });
  assert.deepEqual(await ask('bound', 'b', 'only-me'), { ok: true, username: 'bound' });
  assert.deepEqual(await ask('m', 'mosq-pw'), { ok: true, username: 'm' });
  assert.deepEqual(await ask('m', 'other'), { ok: false, reason: 'bad_credentials' });
  assert.deepEqual(await ask('stranger', 'x'), { ok: false, reason: 'not_authorized' }, 'passed on to the next');
  const hits = d.counters.authCacheHits;
  const cached = ask('a', 'a-pw');
  assert.ok(!(cached instanceof Promise), 'answered from the cache, at once');
  assert.equal(d.counters.authCacheHits, hits + 1);
  d.apply({ clients: [{ username: 'a', passwordHash: await hashPassword('new'), enabled: true, roles: [] }] });
  assert.deepEqual(await ask('a', 'a-pw'), { ok: false, reason: 'bad_credentials' });
  assert.deepEqual(await ask('a', 'new'), { ok: true, username: 'a' });
});
