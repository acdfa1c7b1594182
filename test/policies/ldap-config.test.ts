// The ldap policy's parts that need no directory: its config (defaults written out and read back
// the same, each mistake naming its field), the escaping of a client's values into DNs (RFC 4514)
// and filters (RFC 4515), the templates' placeholders, group matching by DN and by name, the
// group rules' decisions and read scopes, and the group cache (TTL, shared lookups, failures not
// kept).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ScopeWalk } from '../../src/auth/acl-scope.ts';
import { parseLdapPolicyConfig, readLdapPolicyConfig } from '../../src/policies/ldap-config.ts';
import { GroupCache } from '../../src/policies/ldap-group-cache.ts';
import { decideRules, GroupRules, GroupSet } from '../../src/policies/ldap-group-rules.ts';
import { escapeDnValue, escapeFilterValue, filterShapeProblem, firstRdnValue, LdapTemplate, normalizeDn } from '../../src/policies/ldap-template.ts';
import { PolicyConfigError, type AclQuery } from '../../src/policies/types.ts';
import { CERT_PEM } from './helpers.ts';

const PEOPLE = 'ou=people,dc=example,dc=org';
const GROUPS = 'ou=groups,dc=example,dc=org';

test('ldap config: the defaults written out, the same when parsed again', () => {
  const auth = parseLdapPolicyConfig({ urls: 'ldap://ldap.example.org', mode: 'bind', userDn: `uid=\${username},${PEOPLE}` }, 'auth');
  assert.deepEqual(auth, {
    urls: ['ldap://ldap.example.org'],
    startTls: false,
    tls: null,
    connectTimeout: 5000,
    timeout: 5000,
    poolSize: 4,
    service: null,
    mode: 'bind',
    userDn: `uid=\${username},${PEOPLE}`,
    groups: null,
    superuserGroups: [],
  });
  assert.deepEqual(parseLdapPolicyConfig(auth, 'auth'), auth);
  const acl = parseLdapPolicyConfig({
    urls: ['ldaps://ldap1.example.org:1636/', 'ldaps://ldap2.example.org'],
    tls: { ca: CERT_PEM, rejectUnauthorized: true },
    service: { dn: 'cn=mqtt,dc=example,dc=org', password: 'pw' },
    mode: 'search',
    base: PEOPLE,
    filter: '(&(objectClass=inetOrgPerson)(uid=%u))',
    groups: { attribute: 'memberOf' },
    groupRules: [{ group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }] }],
  }, 'acl');
  assert.deepEqual(acl, {
    urls: ['ldaps://ldap1.example.org:1636', 'ldaps://ldap2.example.org'],
    startTls: false,
    tls: { rejectUnauthorized: true, ca: CERT_PEM },
    connectTimeout: 5000,
    timeout: 5000,
    poolSize: 4,
    service: { dn: 'cn=mqtt,dc=example,dc=org', password: 'pw' },
    mode: 'search',
    base: PEOPLE,
    filter: '(&(objectClass=inetOrgPerson)(uid=%u))',
    scope: 'sub',
    groups: { attribute: 'memberOf' },
    groupRules: [{ group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }] }],
    groupCacheTtl: 60,
    groupCacheSize: 10000,
  });
  assert.deepEqual(parseLdapPolicyConfig(acl, 'acl'), acl);
});

test('ldap config: each mistake names its field', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-ldap-config-'));
  const notPem = path.join(dir, 'not.pem');
  writeFileSync(notPem, 'hello');
  const bind = { urls: 'ldap://h', mode: 'bind', userDn: `uid=\${username},${PEOPLE}` };
  const search = { urls: 'ldap://h', mode: 'search', base: PEOPLE, filter: '(uid=${username})' };
  const acl = { ...search, groups: { base: GROUPS, filter: '(member=${dn})' }, groupRules: [{ group: 'g', rules: [{ permission: 'allow', action: 'all', topic: '#' }] }] };
  const cases: [unknown, 'auth' | 'acl', string][] = [
    [null, 'auth', 'config'],
    [{ mode: 'bind', userDn: 'uid=${username}' }, 'auth', 'config.urls'],
    [{ ...bind, urls: 'http://h' }, 'auth', 'config.urls'],
    [{ ...bind, urls: [] }, 'auth', 'config.urls'],
    [{ ...bind, urls: ['ldap://h', 7] }, 'auth', 'config.urls[1]'],
    [{ ...bind, urls: 'ldap://h/dc=example,dc=org' }, 'auth', 'config.urls'],
    [{ ...bind, urls: ['ldap://a', 'ldaps://b'] }, 'auth', 'config.urls'],
    [{ ...bind, urls: 'ldaps://h', startTls: true }, 'auth', 'config.startTls'],
    [{ ...bind, startTls: 'yes' }, 'auth', 'config.startTls'],
    [{ ...bind, tls: { rejectUnauthorized: false } }, 'auth', 'config.tls'],
    [{ ...bind, startTls: true, tls: { rejectUnauthorized: 'no' } }, 'auth', 'config.tls.rejectUnauthorized'],
    [{ ...bind, startTls: true, tls: { ca: 'not a pem' } }, 'auth', 'config.tls.ca'],
    [{ ...bind, startTls: true, tls: { caFile: path.join(dir, 'missing.pem') } }, 'auth', 'config.tls.caFile'],
    [{ ...bind, startTls: true, tls: { caFile: notPem } }, 'auth', 'config.tls.caFile'],
    [{ ...bind, startTls: true, tls: { ca: CERT_PEM, caFile: notPem } }, 'auth', 'config.tls.caFile'],
    [{ ...bind, startTls: true, tls: { verify: true } }, 'auth', 'config.tls.verify'],
    [{ ...bind, timeout: 10 }, 'auth', 'config.timeout'],
    [{ ...bind, connectTimeout: 1.5 }, 'auth', 'config.connectTimeout'],
    [{ ...bind, poolSize: 0 }, 'auth', 'config.poolSize'],
    [{ ...bind, poolSize: 65 }, 'auth', 'config.poolSize'],
    [{ ...bind, service: { dn: 'cn=svc' } }, 'auth', 'config.service.password'],
    [{ ...bind, service: { dn: 'cn=svc', password: '' } }, 'auth', 'config.service.password'],
    [{ ...bind, service: { password: 'x' } }, 'auth', 'config.service.dn'],
    [{ ...bind, mode: 'anonymous' }, 'auth', 'config.mode'],
    [{ ...bind, userDn: undefined }, 'auth', 'config.userDn'],
    [{ ...bind, userDn: `cn=shared,${PEOPLE}` }, 'auth', 'config.userDn'],
    [{ ...bind, userDn: 'uid=${user}' }, 'auth', 'config.userDn'],
    [{ ...bind, userDn: 'uid=%x' }, 'auth', 'config.userDn'],
    [{ ...bind, userDn: 'uid=${dn}' }, 'auth', 'config.userDn'],
    [{ ...bind, base: PEOPLE }, 'auth', 'config.base'],
    [{ ...search, userDn: 'uid=${username}' }, 'auth', 'config.userDn'],
    [{ ...search, base: undefined }, 'auth', 'config.base'],
    [{ ...search, base: 'ou=${username}' }, 'auth', 'config.base'],
    [{ ...search, filter: '(objectClass=person)' }, 'auth', 'config.filter'],
    [{ ...search, filter: 'uid=${username}' }, 'auth', 'config.filter'],
    [{ ...search, filter: '(uid=${username}))(' }, 'auth', 'config.filter'],
    [{ ...search, filter: '(&(uid=${username})' }, 'auth', 'config.filter'],
    [{ ...search, scope: 'subtree' }, 'auth', 'config.scope'],
    [{ ...search, superuserAttribute: 'not an attribute' }, 'auth', 'config.superuserAttribute'],
    [{ ...search, superuserGroups: ['admins'] }, 'auth', 'config.groups'],
    [{ ...search, superuserGroups: 'admins' }, 'auth', 'config.superuserGroups'],
    [{ ...search, groups: { attribute: 'memberOf' }, superuserGroups: [''] }, 'auth', 'config.superuserGroups[0]'],
    [{ ...search, groupRules: [] }, 'auth', 'config.groupRules'],
    [{ ...search, groupCacheTtl: 5 }, 'auth', 'config.groupCacheTtl'],
    [{ ...acl, groups: undefined }, 'acl', 'config.groups'],
    [{ ...acl, groups: { attribute: 'memberOf', base: GROUPS } }, 'acl', 'config.groups.base'],
    [{ ...acl, groups: { attribute: 'member of' } }, 'acl', 'config.groups.attribute'],
    [{ ...acl, groups: { base: GROUPS, filter: '(objectClass=groupOfNames)' } }, 'acl', 'config.groups.filter'],
    [{ ...acl, groups: { base: GROUPS, filter: '(member=${password})' } }, 'acl', 'config.groups.filter'],
    [{ ...acl, groupRules: [] }, 'acl', 'config.groupRules'],
    [{ ...acl, groupRules: [{ group: 'g', rules: [] }] }, 'acl', 'config.groupRules[0].rules'],
    [{ ...acl, groupRules: [{ rules: [{ permission: 'allow', action: 'all', topic: '#' }] }] }, 'acl', 'config.groupRules[0].group'],
    [{ ...acl, groupRules: [{ group: 'g', rules: [{ permission: 'maybe', action: 'all', topic: '#' }] }] }, 'acl', 'config.groupRules[0].rules[0].permission'],
    [{ ...acl, groupRules: [{ group: 'g', rules: [{ permission: 'allow', action: 'read', topic: '#' }] }] }, 'acl', 'config.groupRules[0].rules[0].action'],
    [{ ...acl, groupRules: [{ group: 'g', rules: [{ permission: 'allow', action: 'all', topic: 'a/#/b' }] }] }, 'acl', 'config.groupRules[0].rules[0].topic'],
    [{ ...acl, groupRules: [{ group: 'g', rules: [{ permission: 'allow', action: 'all', topic: 'a/%x' }] }] }, 'acl', 'config.groupRules[0].rules[0].topic'],
    [{ ...acl, groupCacheTtl: -1 }, 'acl', 'config.groupCacheTtl'],
    [{ ...acl, superuserGroups: ['g'] }, 'acl', 'config.superuserGroups'],
  ];
  for (const [raw, kind, field] of cases) {
    assert.throws(() => parseLdapPolicyConfig(raw, kind), (err: unknown) => err instanceof PolicyConfigError && err.field === field, `${JSON.stringify(raw)} -> ${field}`);
  }
  // A CA file is read (and kept as a path).
  const ca = path.join(dir, 'ca.pem');
  writeFileSync(ca, CERT_PEM);
  assert.deepEqual(readLdapPolicyConfig({ ...bind, startTls: true, tls: { caFile: ca } }, 'auth').tls, { rejectUnauthorized: true, caFile: ca });
});

test('ldap escaping: a DN value per RFC 4514, a filter value per RFC 4515', () => {
  assert.equal(escapeDnValue('alice'), 'alice');
  assert.equal(escapeDnValue('a,ou=admins'), 'a\\,ou\\=admins');
  assert.equal(escapeDnValue('x+y"z;<>\\'), 'x\\+y\\"z\\;\\<\\>\\\\');
  assert.equal(escapeDnValue(' #lead and trail '), '\\ #lead and trail\\ ');
  assert.equal(escapeDnValue('#x'), '\\#x');
  assert.equal(escapeDnValue('nul\0'), 'nul\\00');
  assert.equal(escapeDnValue('élise'), 'élise');
  assert.equal(escapeFilterValue('alice'), 'alice');
  assert.equal(escapeFilterValue('*'), '\\2a');
  assert.equal(escapeFilterValue('a)(uid=*'), 'a\\29\\28uid=\\2a');
  assert.equal(escapeFilterValue('back\\slash\0'), 'back\\5cslash\\00');
});

test('ldap templates: ${name} and %-forms, each escaped for where it goes', () => {
  const dn = LdapTemplate.parse('uid=${username},ou=%c,dc=example', 'dn', ['username', 'clientid'], 'f');
  assert.deepEqual([...dn.params].sort(), ['clientid', 'username']);
  assert.equal(dn.fill({ username: 'a,b', clientid: 'c+1' }), 'uid=a\\,b,ou=c\\+1,dc=example');
  const filter = LdapTemplate.parse('(&(member=%d)(cn=100%%)(uid=${username}))', 'filter', ['username', 'dn'], 'f');
  assert.equal(filter.fill({ username: '*', dn: 'uid=x\\,y,dc=e' }), '(&(member=uid=x\\5c,y,dc=e)(cn=100%)(uid=\\2a))');
  assert.throws(() => LdapTemplate.parse('uid=%', 'dn', ['username'], 'config.userDn'), /config.userDn: unknown placeholder/);
  assert.equal(filterShapeProblem('(uid=a\\29)'), undefined);
  assert.match(filterShapeProblem('(a=1)(b=2)') ?? '', /balance/);
});

test('ldap groups: matched by DN (case and spaces aside) or by the value of their first RDN', () => {
  assert.equal(normalizeDn('CN=Sensors, OU=Groups ,dc=Example,dc=org'), 'cn=sensors,ou=groups,dc=example,dc=org');
  assert.equal(firstRdnValue('cn=Sensors,ou=groups,dc=example,dc=org'), 'sensors');
  assert.equal(firstRdnValue('cn=a\\,b,ou=g'), 'a,b');
  assert.equal(firstRdnValue('cn=caf\\c3\\a9,ou=g'), 'café');
  const set = new GroupSet(['cn=admins,ou=groups,dc=example,dc=org', 'operators']);
  assert.equal(set.anyOf(['CN=Admins, ou=groups, dc=example, dc=org']), true);
  assert.equal(set.anyOf(['cn=Operators,ou=other,dc=example,dc=org']), true);
  assert.equal(set.anyOf(['cn=admins,ou=other,dc=example,dc=org']), false);
  assert.equal(set.anyOf([]), false);
});

test('ldap group rules: the groups\' rules in their configured order; the first that applies decides; a subscription\'s overlaps', () => {
  const rules = new GroupRules([
    { group: 'cn=restricted,ou=groups,dc=example,dc=org', rules: [{ permission: 'deny', action: 'all', topic: 'sensors/secret/#' }] },
    { group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }, { permission: 'allow', action: 'subscribe', topic: 'sensors/#' }] },
    { group: 'admins', rules: [{ permission: 'allow', action: 'all', topic: '#' }] },
  ]);
  const q = (action: 'publish' | 'subscribe', topic: string): AclQuery => ({ clientid: 'c1', username: 'alice', peerhost: '10.0.0.1', action, topic });
  const sensor = rules.rulesOf(['cn=sensors,ou=groups,dc=example,dc=org']);
  assert.equal(sensor.length, 2);
  assert.equal(decideRules(sensor, q('publish', 'sensors/alice/temp'), undefined), 'allow');
  assert.equal(decideRules(sensor, q('publish', 'sensors/bob/temp'), undefined), undefined);
  let walk = new ScopeWalk();
  assert.equal(decideRules(sensor, q('subscribe', 'sensors/+/temp'), walk), 'allow');
  assert.equal(walk.overlaps(), undefined, 'covered whole: all');
  walk = new ScopeWalk();
  assert.equal(decideRules(sensor, q('subscribe', '#'), walk), undefined, '# is not covered by sensors/#');
  assert.deepEqual(walk.overlaps(), { allow: true, deny: false }, 'but sensors/# overlaps it: granted in part');
  // The restricted group comes first: its deny overlaps the allow of sensors/#.
  const both = rules.rulesOf(['cn=sensors,ou=groups,dc=example,dc=org', 'cn=Restricted,ou=groups,dc=example,dc=org']);
  walk = new ScopeWalk();
  assert.equal(decideRules(both, q('subscribe', 'sensors/#'), walk), 'allow');
  assert.deepEqual(walk.overlaps(), { allow: false, deny: true });
  assert.equal(decideRules(both, q('publish', 'sensors/secret/x'), undefined), 'deny');
  assert.deepEqual(rules.rulesOf(['cn=other,dc=example,dc=org']), []);
});

test('ldap group cache: kept for its TTL, one lookup for the questions asking meanwhile, a failure not kept', async () => {
  let now = 1000;
  const counts = { hit: 0, miss: 0 };
  const cache = new GroupCache<string[]>(2, 5000, counts, () => now);
  let loads = 0;
  const load = async () => {
    loads++;
    return ['g'];
  };
  const [a, b] = await Promise.all([cache.get('alice', load), cache.get('alice', load)]);
  assert.deepEqual([a, b, loads], [['g'], ['g'], 1]);
  assert.deepEqual(await cache.get('alice', load), ['g']);
  assert.equal(loads, 1);
  now += 5001;
  await cache.get('alice', load);
  assert.equal(loads, 2, 'expired: asked again');
  await assert.rejects(cache.get('bob', () => Promise.reject(new Error('down'))), /down/);
  assert.deepEqual(await cache.get('bob', load), ['g'], 'a failure was not kept');
  await cache.get('carol', load);
  assert.equal(cache.size, 2, 'bounded: the least recently used out');
  assert.deepEqual(counts, { hit: 1, miss: 6 }, 'a question that joins a running lookup is a miss');
  const none = new GroupCache<string[]>(10, 0, { hit: 0, miss: 0 });
  await none.get('x', load);
  await none.get('x', load);
  assert.equal(none.size, 0);
});
