// LDAP policies end to end: a 2-worker broker whose policies are added through the admin API, a
// real OpenLDAP (slapd started by the test on free ports, reached over StartTLS with a test CA),
// and real clients: mosquitto_pub (MQTT 5 and 3.1.1), the raw client for the exact CONNACK codes,
// mqtt.js for PUBACK and SUBACK codes and deliveries. Bind mode admits the right password and
// refuses a wrong one (0x86 / 4); search then bind does the same and leaves an unknown user to the
// static users (none here: refused); a wrong service password is refused at add time naming the
// field; a group mapped to rules lets its members publish to their topic and not to another; a
// subscription to # reads only what the groups may read; the metrics count it all.
// needs: broker, slapd
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';
import type { Slapd } from '../helpers/slapd.ts';
import { GROUP_FILTER, GROUPS, makeCa, PEOPLE, SERVICE, startDirectory, USER_DN, USER_FILTER, type TestCa } from './ldap-helpers.ts';

const run = promisify(execFile);
let ca: TestCa;
let slapd: Slapd;
let broker: AdminBroker;

before(async () => {
  ca = makeCa();
  slapd = await startDirectory(ca);
  broker = await startAdminBroker({ auth: { allowAnonymous: false, users: [], aclDefault: 'deny' }, limits: { authMaxFailures: 0 } });
});
after(async () => {
  await broker.stop();
  await slapd.stop();
});

const directory = () => ({ urls: slapd.url, startTls: true, tls: { caFile: ca.ca } });

async function connack(clientId: string, username: string, password: string, version: 4 | 5): Promise<number> {
  const raw = await rawConnect(broker.ports.tcp!, { clientId, username, password }, version);
  raw.end();
  const p = raw.connack as { reasonCode?: number; returnCode?: number };
  return version === 5 ? p.reasonCode! : p.returnCode!;
}

/** mosquitto_pub's result: 'ok', or what it wrote on stderr. */
function mosquittoPub(version: 'mqttv5' | 'mqttv311', username: string, password: string): Promise<string> {
  const args = ['-h', '127.0.0.1', '-p', String(broker.ports.tcp), '-V', version, '-u', username, '-P', password, '-t', `sensors/${username}/t`, '-m', 'hi'];
  return run('mosquitto_pub', args).then(() => 'ok', (e: { stderr: string }) => e.stderr.trim());
}

async function pubCode(client: MqttClient, topic: string): Promise<number> {
  try {
    await client.publishAsync(topic, 'x', { qos: 1 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  }
}

async function subCode(client: MqttClient, filter: string): Promise<number> {
  try {
    return (await client.subscribeAsync(filter, { qos: 1 }))[0].qos;
  } catch (err) {
    return (err as { packet?: { granted?: number[] } }).packet?.granted?.[0] ?? -1;
  }
}

async function policyId(kind: 'auth' | 'acl', name: string): Promise<string> {
  const q = await broker.api('POST', `/${kind}/query`, { body: { name } });
  assert.equal(q.status, 200, q.text);
  return q.json.data.find((p: { name: string }) => p.name === name).id;
}

test('bind as the user over StartTLS: mosquitto_pub and raw clients admitted with the right password, refused with a wrong one (0x86 / 4)', async () => {
  const added = await broker.api('POST', '/auth/add', { body: { name: 'directory', type: 'ldap', config: { ...directory(), mode: 'bind', userDn: USER_DN } } });
  assert.equal(added.status, 200, added.text);
  assert.equal(await mosquittoPub('mqttv5', 'alice', 'alice-pw'), 'ok');
  assert.match(await mosquittoPub('mqttv5', 'alice', 'nope'), /Bad user name or password/i);
  assert.match(await mosquittoPub('mqttv311', 'alice', 'nope'), /bad user name or password/i);
  assert.equal(await mosquittoPub('mqttv311', 'bob', 'bob-pw'), 'ok');
  assert.equal(await connack('raw-a', 'alice', 'nope', 5), 0x86);
  assert.equal(await connack('raw-b', 'alice', 'nope', 4), 4);
  assert.equal(await connack('raw-c', 'alice', 'alice-pw', 5), 0);
  assert.equal(await connack('raw-d', 'alice', '', 5), 0x86, 'an empty password never binds');
  const test = await broker.api('POST', '/auth/test', { body: { clientid: 'x', username: 'bob', password: 'bob-pw' } });
  assert.deepEqual(test.json.data, { result: 'allow', superuser: false, cacheable: true });
});

test('search then bind: admitted and refused; an unknown user goes to the static users (none: refused); a wrong service password is refused at add time', async () => {
  const id = await policyId('auth', 'directory');
  const bad = await broker.api('POST', '/auth/update', { body: { id, config: { ...directory(), mode: 'search', service: { ...SERVICE, password: 'wrong' }, base: PEOPLE, filter: USER_FILTER } } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.field, 'config.service');
  const r = await broker.api('POST', '/auth/update', { body: { id, config: { ...directory(), mode: 'search', service: SERVICE, base: PEOPLE, filter: USER_FILTER, superuserAttribute: 'employeeType' } } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.config.service.password, undefined, 'the service password is never answered');
  assert.equal(r.json.data.config.service.dn, SERVICE.dn);
  const c = await connect(broker.url, { username: 'carol', password: 'carol-pw', protocolVersion: 5 });
  await end(c);
  assert.equal(await connack('s-a', 'carol', 'wrong', 5), 0x86);
  assert.equal(await connack('s-b', 'carol', 'wrong', 4), 4);
  assert.equal(await connack('s-c', 'mallory', 'x', 5), 0x86, 'unknown to the directory, and no static user');
  const unknown = await broker.api('POST', '/auth/test', { body: { clientid: 'x', username: 'mallory', password: 'x' } });
  assert.equal(unknown.json.data.result, 'ignore');
  const root = await broker.api('POST', '/auth/test', { body: { clientid: 'x', username: 'bob', password: 'bob-pw' } });
  assert.equal(root.json.data.superuser, true, 'employeeType TRUE');
});

test('a group mapped to rules: publish to its topic allowed, another refused; # reads only what the groups may read', async () => {
  const added = await broker.api('POST', '/acl/add', {
    body: {
      name: 'directory-groups',
      type: 'ldap',
      config: {
        ...directory(),
        mode: 'bind',
        userDn: USER_DN,
        service: SERVICE,
        groups: { base: GROUPS, filter: GROUP_FILTER },
        groupRules: [
          { group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }, { permission: 'allow', action: 'subscribe', topic: 'sensors/#' }] },
          { group: `cn=admins,${GROUPS}`, rules: [{ permission: 'allow', action: 'all', topic: '#' }] },
        ],
      },
    },
  });
  assert.equal(added.status, 200, added.text);
  const alice = await connect(broker.url, { username: 'alice', password: 'alice-pw', protocolVersion: 5 });
  const carol = await connect(broker.url, { username: 'carol', password: 'carol-pw', protocolVersion: 5 });
  const bob = await connect(broker.url, { username: 'bob', password: 'bob-pw', protocolVersion: 5 });
  try {
    assert.equal(await pubCode(alice, 'sensors/alice/temp'), 0);
    assert.equal(await pubCode(alice, 'sensors/bob/temp'), 0x87, 'not her topic');
    assert.equal(await pubCode(alice, 'other/x'), 0x87);
    assert.equal(await pubCode(carol, 'sensors/carol/temp'), 0x87, 'in no group: the static ACL denies');
    assert.equal(await subCode(alice, '#'), 1, 'granted: sensors/# overlaps it');
    assert.equal(await subCode(carol, '#'), 0x87, 'nothing to read');
    const got = nextMessages(alice, 1);
    assert.equal(await pubCode(bob, 'other/x'), 0, 'an admin may publish anywhere');
    assert.equal(await pubCode(bob, 'sensors/bob/temp'), 0);
    assert.deepEqual((await got).map((m) => m.topic), ['sensors/bob/temp'], 'other/x was not delivered to alice');
    await noMessage(alice);
  } finally {
    await end(alice, carol, bob);
  }
  const test = await broker.api('POST', '/acl/test', { body: { clientid: 'x', username: 'alice', action: 'publish', topic: 'sensors/alice/a' } });
  assert.equal(test.json.data.result, 'allow');
});

test('the LDAP metrics: operations by kind and outcome, the pool, the group cache', async () => {
  const auth = await policyId('auth', 'directory');
  const acl = await policyId('acl', 'directory-groups');
  const metrics = (await broker.api('GET', '/prometheus')).text;
  const value = (re: RegExp) => Number(re.exec(metrics)?.[1] ?? NaN);
  assert.ok(value(new RegExp(`spindle_policy_ldap_requests_total\\{kind="auth",policy="${auth}",op="user-bind",result="ok"\\} (\\d+)`)) >= 1, metrics);
  assert.ok(value(new RegExp(`spindle_policy_ldap_requests_total\\{kind="auth",policy="${auth}",op="user-bind",result="refused"\\} (\\d+)`)) >= 1);
  assert.ok(value(new RegExp(`spindle_policy_ldap_requests_total\\{kind="acl",policy="${acl}",op="group-search",result="ok"\\} (\\d+)`)) >= 1);
  assert.ok(value(new RegExp(`spindle_policy_ldap_pool_connections\\{kind="auth",policy="${auth}",state="idle"\\} (\\d+)`)) >= 1);
  assert.ok(value(new RegExp(`spindle_policy_ldap_group_cache_total\\{policy="${acl}",result="hit"\\} (\\d+)`)) >= 1);
  assert.match(metrics, new RegExp(`spindle_policy_ldap_group_cache_users\\{policy="${acl}"\\} [1-9]`));
});
