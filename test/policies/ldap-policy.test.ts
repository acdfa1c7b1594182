// The ldap policy (auth and ACL) against a real OpenLDAP (slapd started by the test on free ports,
// helpers/slapd.ts): bind as the user (right password, wrong one, unknown user, an empty password
// never sent, usernames that would change the DN or the filter escaped or name a SASL mechanism), search then bind
// (unknown user ignored, two entries found is an error), the superuser attribute and groups, the
// ACL from group searches and memberOf (rules, read scopes, the group cache), ldaps:// and
// StartTLS with a test CA (and an untrusted one refused), the dry run naming each wrong field, a
// directory down or silent (ignore with error, never an allow), connections the directory drops
// replaced (never reopened in clear), failover between urls, and the pool's bound.
// needs: slapd
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { compileLdapAclPolicy, compileLdapAuthPolicy, parseLdapPolicyConfig } from '../../src/policies/ldap.ts';
import { PolicyConfigError, type AclAnswer, type AuthAnswer, type AuthQuery } from '../../src/policies/types.ts';
import type { Slapd } from '../helpers/slapd.ts';
import { waitFor } from '../helpers/wait.ts';
import { TcpProxy } from '../sources/helpers.ts';
import { closedPort, context, keptLog, record } from './helpers.ts';
import { GROUP_FILTER, GROUPS, makeCa, PEOPLE, SERVICE, startDirectory, USER_DN, USER_FILTER, type TestCa } from './ldap-helpers.ts';

let ca: TestCa;
let slapd: Slapd;

before(async () => {
  ca = makeCa();
  slapd = await startDirectory(ca);
});
after(() => slapd.stop());

const who = (username: string | undefined, password: string | undefined, clientid = 'c1'): AuthQuery => ({
  clientid,
  username,
  password: password === undefined ? undefined : Buffer.from(password),
  peerhost: '10.0.0.7',
});

function auth(config: Record<string, unknown>, log = keptLog().log) {
  return compileLdapAuthPolicy(record('ldap', parseLdapPolicyConfig({ urls: slapd.url, ...config }, 'auth')), context(log));
}

function acl(config: Record<string, unknown>) {
  return compileLdapAclPolicy(record('ldap', parseLdapPolicyConfig({ urls: slapd.url, ...config }, 'acl')), context());
}

async function using<P extends { close(): Promise<void> }, T>(p: P, body: (p: P) => Promise<T>): Promise<T> {
  try {
    return await body(p);
  } finally {
    await p.close();
  }
}

const isError = (a: AuthAnswer | AclAnswer) => a.result === 'ignore' && a.error === true;

test('bind mode: the right password allows, a wrong one and an unknown user deny; no username is ignored', async () => {
  await using(auth({ mode: 'bind', userDn: USER_DN }), async (p) => {
    await p.dryRun();
    assert.deepEqual([...p.params].sort(), ['password', 'username']);
    assert.deepEqual(await p.authenticate(who('alice', 'alice-pw')), { result: 'allow', superuser: false });
    assert.deepEqual(await p.authenticate(who('alice', 'nope')), { result: 'deny', reason: 'invalid credentials' });
    assert.equal((await p.authenticate(who('mallory', 'x'))).result, 'deny', 'OpenLDAP answers invalid credentials for a DN it does not have');
    assert.equal((await p.authenticate(who(undefined, 'alice-pw'))).result, 'ignore');
    const s = p.ldap.stats;
    assert.equal(s.requestsOf('user-bind', 'ok'), 1);
    assert.equal(s.requestsOf('user-bind', 'refused'), 2);
    // Sequential questions share one connection.
    assert.equal(s.requestsOf('connect', 'ok'), 2, 'the dry run\'s and the pool\'s');
    assert.deepEqual(p.ldap.poolCounts(), { idle: 1, busy: 0, opening: 0, waiting: 0 });
  });
});

test('an empty password is denied without any bind (an unauthenticated bind would succeed as anonymous)', async () => {
  await using(auth({ mode: 'bind', userDn: USER_DN }), async (p) => {
    assert.equal((await p.authenticate(who('alice', ''))).result, 'deny');
    assert.equal((await p.authenticate(who('alice', undefined))).result, 'deny');
    assert.equal(p.ldap.stats.requests.size, 0, 'nothing was asked of the directory');
  });
});

test('usernames are escaped: a comma cannot add an RDN, a star is no wildcard', async () => {
  await using(auth({ mode: 'bind', userDn: USER_DN }), async (p) => {
    assert.equal((await p.authenticate(who('x,y', 'comma-pw'))).result, 'allow', 'uid=x\\,y,... is its DN');
    assert.equal((await p.authenticate(who('alice,ou=people', 'alice-pw'))).result, 'deny');
  });
  await using(auth({ mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER }), async (p) => {
    assert.equal((await p.authenticate(who('x,y', 'comma-pw'))).result, 'allow');
    assert.equal((await p.authenticate(who('*', 'alice-pw'))).result, 'ignore', 'no uid is a literal star');
    assert.equal((await p.authenticate(who('alice)(uid=*', 'alice-pw'))).result, 'ignore');
  });
  // A template of the username alone (an AD user principal name written by the client): a
  // username that names a SASL mechanism is never taken for a SASL bind.
  await using(auth({ mode: 'bind', userDn: '${username}' }), async (p) => {
    assert.equal((await p.authenticate(who('PLAIN', '\0alice\0alice-pw'))).result, 'deny');
    assert.equal((await p.authenticate(who('EXTERNAL', 'x'))).result, 'deny');
    assert.equal((await p.authenticate(who(`uid=alice,${PEOPLE}`, 'alice-pw'))).result, 'deny', 'escaped: not a DN');
    assert.equal(p.ldap.stats.requestsOf('connect', 'ok'), 1, 'the SASL names never reached the directory');
  });
});

test('search mode: found and bound as its entry; unknown users ignored; two entries for one name is an error', async () => {
  const { log, lines } = keptLog();
  await using(auth({ mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER }, log), async (p) => {
    await p.dryRun();
    assert.deepEqual(await p.authenticate(who('alice', 'alice-pw')), { result: 'allow', superuser: false });
    assert.equal((await p.authenticate(who('alice', 'wrong'))).result, 'deny');
    const unknown = await p.authenticate(who('mallory', 'x'));
    assert.equal(unknown.result, 'ignore');
    assert.ok(!isError(unknown), 'not knowing a user is no failure');
    assert.equal(p.ldap.stats.requestsOf('user-search', 'ok'), 3);
    assert.equal(p.ldap.stats.requestsOf('service-bind', 'ok'), 1, 'searches keep their service-bound connection; users bind on another');
    assert.deepEqual(p.ldap.poolCounts(), { idle: 2, busy: 0, opening: 0, waiting: 0 });
  });
  await using(auth({ mode: 'search', service: SERVICE, base: PEOPLE, filter: '(mail=${username})' }, log), async (p) => {
    const two = await p.authenticate(who('dave@example.org', 'dave-pw'));
    assert.ok(isError(two), JSON.stringify(two));
    assert.match((two as { reason: string }).reason, /finds 2 or more entries/);
    assert.ok(lines.some((l) => l.msg === 'ldap policy: the directory gave no usable answer (the client was ignored)'));
  });
});

test('a superuser by attribute (employeeType TRUE) or by group, read as the service account or as the user', async () => {
  for (const service of [SERVICE, undefined]) {
    await using(auth({ mode: 'bind', userDn: USER_DN, service, superuserAttribute: 'employeeType' }), async (p) => {
      assert.deepEqual(await p.authenticate(who('bob', 'bob-pw')), { result: 'allow', superuser: true });
      assert.deepEqual(await p.authenticate(who('alice', 'alice-pw')), { result: 'allow', superuser: false });
      assert.equal(p.ldap.stats.requestsOf('entry-read', 'ok'), 2);
    });
    await using(auth({ mode: 'bind', userDn: USER_DN, service, groups: { base: GROUPS, filter: GROUP_FILTER }, superuserGroups: ['admins'] }), async (p) => {
      assert.deepEqual(await p.authenticate(who('bob', 'bob-pw')), { result: 'allow', superuser: true });
      assert.deepEqual(await p.authenticate(who('alice', 'alice-pw')), { result: 'allow', superuser: false });
      assert.equal(p.ldap.stats.requestsOf('group-search', 'ok'), 2);
    });
  }
  await using(auth({ mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER, groups: { attribute: 'memberOf' }, superuserGroups: [`cn=admins,${GROUPS}`] }), async (p) => {
    assert.deepEqual(await p.authenticate(who('bob', 'bob-pw')), { result: 'allow', superuser: true });
    assert.deepEqual(await p.authenticate(who('alice', 'alice-pw')), { result: 'allow', superuser: false });
    assert.equal(p.ldap.stats.requestsOf('group-search', 'ok'), 0, 'memberOf came with the entry');
  });
});

const RULES = [
  { group: 'restricted', rules: [{ permission: 'deny', action: 'all', topic: 'sensors/secret/#' }] },
  { group: `cn=sensors,${GROUPS}`, rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }, { permission: 'allow', action: 'subscribe', topic: 'sensors/#' }] },
  { group: 'admins', rules: [{ permission: 'allow', action: 'all', topic: '#' }] },
];

test('ACL: a group search or memberOf gives the rules; a subscription granted in part carries its overlaps', async () => {
  const configs = [
    { mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER, groups: { base: GROUPS, filter: GROUP_FILTER } },
    { mode: 'bind', userDn: USER_DN, service: SERVICE, groups: { attribute: 'memberOf' } },
  ];
  for (const config of configs) {
    await using(acl({ ...config, groupRules: RULES }), async (p) => {
      await p.dryRun();
      const q = (username: string, action: 'publish' | 'subscribe', topic: string) => p.authorize({ clientid: 'c1', username, peerhost: '10.0.0.7', action, topic });
      assert.deepEqual(await q('alice', 'publish', 'sensors/alice/temp'), { result: 'allow' });
      assert.equal((await q('alice', 'publish', 'sensors/bob/temp')).result, 'ignore', 'no rule: the next ACL decides');
      assert.deepEqual(await q('alice', 'publish', 'sensors/secret/x'), { result: 'deny' });
      assert.deepEqual(await q('alice', 'subscribe', 'sensors/+/temp'), { result: 'allow', overlaps: { allow: false, deny: true } }, 'the deny of sensors/secret/# overlaps it');
      assert.deepEqual(await q('alice', 'subscribe', '#'), { result: 'ignore', reason: 'no rule applies', overlaps: { allow: true, deny: true } });
      assert.deepEqual(await q('bob', 'subscribe', '#'), { result: 'allow' });
      assert.equal((await q('carol', 'publish', 'sensors/carol/x')).result, 'ignore');
      assert.equal((await q('mallory', 'publish', 'x')).result, 'ignore', 'unknown to the directory');
      assert.equal((await p.authorize({ clientid: 'c1', peerhost: '10.0.0.7', action: 'publish', topic: 'x' })).result, 'ignore');
      // Each user's groups were asked once: the rest came from the cache.
      assert.deepEqual(p.ldap.stats.groupCache, { hit: 4, miss: 4 });
      assert.equal(p.ldap.cachedUsers(), 4);
    });
  }
});

test('ACL with groupCacheTtl 0 asks the directory every time; without a service account it searches anonymously', async () => {
  await using(acl({ mode: 'bind', userDn: USER_DN, service: SERVICE, groups: { base: GROUPS, filter: GROUP_FILTER }, groupRules: RULES, groupCacheTtl: 0 }), async (p) => {
    for (let i = 0; i < 3; i++) assert.equal((await p.authorize({ clientid: 'c', username: 'alice', peerhost: 'h', action: 'publish', topic: 'sensors/alice/t' })).result, 'allow');
    assert.equal(p.ldap.stats.requestsOf('group-search', 'ok'), 3);
  });
  // The test directory shows anonymous searches nothing, as most do: the group base is not
  // there for them (noSuchObject), a failure, not an empty list of groups.
  await using(acl({ mode: 'bind', userDn: USER_DN, groups: { base: GROUPS, filter: GROUP_FILTER }, groupRules: RULES }), async (p) => {
    const started = Date.now();
    const a = await p.authorize({ clientid: 'c', username: 'alice', peerhost: 'h', action: 'publish', topic: 'sensors/alice/t' });
    assert.ok(isError(a), JSON.stringify(a));
    assert.ok(Date.now() - started < 3000, `answered in ${Date.now() - started} ms`);
    assert.equal(p.ldap.stats.requestsOf('group-search', 'error'), 1);
  });
});

test('ldaps:// and StartTLS with the test CA (a file or PEM); a CA that did not sign the directory\'s certificate is refused', async () => {
  const { readFileSync } = await import('node:fs');
  const variants = [
    { urls: slapd.ldapsUrl, tls: { caFile: ca.ca } },
    { urls: slapd.url, startTls: true, tls: { ca: readFileSync(ca.ca, 'utf8') } },
  ];
  for (const v of variants) {
    await using(auth({ ...v, mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER }), async (p) => {
      await p.dryRun();
      assert.equal((await p.authenticate(who('alice', 'alice-pw'))).result, 'allow', JSON.stringify(v));
      assert.equal((await p.authenticate(who('alice', 'nope'))).result, 'deny');
    });
    await using(auth({ ...v, tls: { caFile: ca.otherCa }, mode: 'bind', userDn: USER_DN }), async (p) => {
      await assert.rejects(p.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.tls', JSON.stringify(v));
      const a = await p.authenticate(who('alice', 'alice-pw'));
      assert.ok(isError(a), 'an untrusted directory is never asked the password');
      assert.equal(p.ldap.stats.requestsOf('user-bind', 'ok') + p.ldap.stats.requestsOf('user-bind', 'refused'), 0);
    });
  }
  // Not verified when told so.
  await using(auth({ urls: slapd.ldapsUrl, tls: { rejectUnauthorized: false }, mode: 'bind', userDn: USER_DN }), async (p) => {
    assert.equal((await p.authenticate(who('alice', 'alice-pw'))).result, 'allow');
  });
});

test('the dry run names the wrong field: service account, base, filter, group base, url', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ mode: 'search', service: { dn: SERVICE.dn, password: 'wrong' }, base: PEOPLE, filter: USER_FILTER }, 'config.service'],
    [{ mode: 'search', service: SERVICE, base: 'ou=nobody,dc=example,dc=org', filter: USER_FILTER }, 'config.base'],
    [{ mode: 'search', service: SERVICE, base: PEOPLE, filter: '(uid=${username})(x=1)' }, 'config.filter'],
    [{ mode: 'search', service: SERVICE, base: PEOPLE, filter: '(~uid=${username})' }, 'config.filter'],
    [{ mode: 'bind', userDn: USER_DN, service: SERVICE, groups: { base: 'ou=nogroups,dc=example,dc=org', filter: GROUP_FILTER }, superuserGroups: ['admins'] }, 'config.groups.base'],
    [{ urls: `ldap://127.0.0.1:${await closedPort()}`, mode: 'bind', userDn: USER_DN }, 'config.urls'],
  ];
  for (const [config, field] of cases) {
    let raw: Record<string, unknown>;
    try {
      raw = parseLdapPolicyConfig({ urls: slapd.url, ...config }, 'auth');
    } catch (err) {
      // Some mistakes are seen before any directory is asked.
      assert.ok(err instanceof PolicyConfigError && err.field === field, `${JSON.stringify(config)}: ${String(err)}`);
      continue;
    }
    const p = compileLdapAuthPolicy(record('ldap', raw), context());
    await using(p, () => assert.rejects(p.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === field, `${JSON.stringify(config)} -> ${field}`));
  }
});

test('a wrong service password, a directory down and one that never answers: ignore with error, never an allow', async () => {
  await using(auth({ mode: 'search', service: { dn: SERVICE.dn, password: 'wrong' }, base: PEOPLE, filter: USER_FILTER }), async (p) => {
    const a = await p.authenticate(who('alice', 'alice-pw'));
    assert.ok(isError(a), JSON.stringify(a));
    assert.match((a as { reason: string }).reason, /service account/);
    assert.equal(p.ldap.stats.requestsOf('service-bind', 'refused'), 1);
  });
  await using(auth({ urls: `ldap://127.0.0.1:${await closedPort()}`, mode: 'bind', userDn: USER_DN }), async (p) => {
    assert.ok(isError(await p.authenticate(who('alice', 'alice-pw'))));
    assert.equal(p.ldap.stats.requestsOf('connect', 'error'), 1);
  });
  // A server that takes connections and never answers: the operation times out, its connection
  // is closed (never reused), and the question is an error.
  const sockets: net.Socket[] = [];
  const silent = net.createServer((s) => sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const port = (silent.address() as net.AddressInfo).port;
    await using(auth({ urls: `ldap://127.0.0.1:${port}`, mode: 'bind', userDn: USER_DN, timeout: 300 }), async (p) => {
      const started = Date.now();
      const a = await p.authenticate(who('alice', 'alice-pw'));
      assert.ok(isError(a), JSON.stringify(a));
      assert.ok(Date.now() - started < 3000);
      assert.equal(p.ldap.stats.requestsOf('user-bind', 'error'), 1);
      assert.deepEqual(p.ldap.poolCounts(), { idle: 0, busy: 0, opening: 0, waiting: 0 }, 'the timed-out connection is not kept');
    });
  } finally {
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test('connections the directory drops are never reused (ldapts would reopen them in clear): a new one, with StartTLS', async () => {
  const proxy = new TcpProxy({ host: '127.0.0.1', port: Number(new URL(slapd.url).port) });
  const port = await proxy.start();
  try {
    await using(auth({ urls: `ldap://127.0.0.1:${port}`, startTls: true, tls: { caFile: ca.ca }, mode: 'bind', userDn: USER_DN, poolSize: 1 }), async (p) => {
      assert.equal((await p.authenticate(who('alice', 'alice-pw'))).result, 'allow');
      await proxy.stop();
      await waitFor(() => p.ldap.poolCounts().idle === 0, { message: 'the dropped connection is closed' });
      assert.ok(isError(await p.authenticate(who('alice', 'alice-pw'))), 'the directory unreachable: an error');
      await proxy.start(port);
      assert.equal((await p.authenticate(who('alice', 'alice-pw'))).result, 'allow');
      assert.equal((await p.authenticate(who('alice', 'nope'))).result, 'deny');
      assert.equal(p.ldap.stats.requestsOf('connect', 'ok'), 2, 'a second connection, upgraded again');
    });
  } finally {
    await proxy.stop();
  }
});

test('failover: the first url down, the second answers and is tried first from then on', async () => {
  await using(auth({ urls: [`ldap://127.0.0.1:${await closedPort()}`, slapd.url], mode: 'bind', userDn: USER_DN, poolSize: 1 }), async (p) => {
    assert.equal((await p.authenticate(who('alice', 'alice-pw'))).result, 'allow');
    assert.equal(p.ldap.stats.requestsOf('connect', 'error'), 1);
    assert.equal(p.ldap.stats.requestsOf('connect', 'ok'), 1);
  });
});

test('the pool: never more connections than poolSize; questions wait for one, in time or refused', async () => {
  await using(auth({ mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER, poolSize: 2 }), async (p) => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => p.authenticate(who(i % 2 === 0 ? 'alice' : 'bob', i % 2 === 0 ? 'alice-pw' : 'bob-pw'))));
    assert.ok(answers.every((a) => a.result === 'allow'), JSON.stringify(answers));
    assert.equal(p.ldap.stats.requestsOf('connect', 'ok'), 2);
    assert.ok(p.ldap.stats.waits.served > 0);
    assert.deepEqual(p.ldap.poolCounts(), { idle: 2, busy: 0, opening: 0, waiting: 0 });
  });
});
