// The same clients get the same answers from Debian's Mosquitto 2.0 with its dynamic-security
// plugin and from Spindle with the dynamic-security.json Mosquitto wrote imported: clients, groups
// and roles made with mosquitto_ctrl; then, against each broker, connects accepted or refused
// (right and wrong password, a bound client id, a disabled client, an unknown user), publishes
// allowed or denied (as a subscriber sees them), subscriptions granted or refused, and what
// wildcard subscribers receive where a publishClientReceive deny lies inside their filter (that
// last part needs the engine's per-delivery read check). The subscription answers need the
// engine's SUBSCRIBE to ask Authorizer.subscribeScope (the read side of issue 27).
// needs: broker, mosquitto
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { MqttClient } from 'mqtt';

import { connect, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { startMosquitto, type Mosquitto } from '../helpers/mosquitto.ts';
import { waitFor } from '../helpers/wait.ts';

const PLUGIN = '/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so';
let mosq: Mosquitto;
let spindle: AdminBroker;
let dynsecFile: string;

function ctrl(...args: string[]): void {
  execFileSync('mosquitto_ctrl', ['-h', '127.0.0.1', '-p', String(mosq.port), '-u', 'admin', '-P', 'admin-pw', 'dynsec', ...args], { stdio: 'pipe', timeout: 10_000 });
}

before(async () => {
  mosq = await startMosquitto({
    allowAnonymous: false,
    extra: (_ports, dir) => {
      dynsecFile = path.join(dir, 'dynamic-security.json');
      execFileSync('mosquitto_ctrl', ['dynsec', 'init', dynsecFile, 'admin', 'admin-pw'], { stdio: 'pipe' });
      return [`plugin ${PLUGIN}`, `plugin_opt_config_file ${dynsecFile}`];
    },
  });
  // An observer that may do anything, a sensor role, a reader role given through a group.
  ctrl('createRole', 'everything');
  ctrl('addRoleACL', 'everything', 'publishClientSend', '#', 'allow');
  ctrl('addRoleACL', 'everything', 'subscribePattern', '#', 'allow');
  ctrl('createClient', 'observer', '-p', 'observer-pw');
  ctrl('addClientRole', 'observer', 'everything');
  ctrl('createRole', 'sensor');
  ctrl('addRoleACL', 'sensor', 'publishClientSend', 'sensors/#', 'allow');
  ctrl('addRoleACL', 'sensor', 'publishClientSend', 'sensors/locked/#', 'deny', '10');
  ctrl('addRoleACL', 'sensor', 'subscribePattern', 'cmd/#', 'allow');
  ctrl('addRoleACL', 'sensor', 'subscribeLiteral', 'status/+', 'allow');
  ctrl('addRoleACL', 'sensor', 'publishClientReceive', 'cmd/secret/#', 'deny');
  ctrl('createRole', 'reader');
  ctrl('addRoleACL', 'reader', 'subscribePattern', '#', 'allow');
  ctrl('addRoleACL', 'reader', 'publishClientReceive', 'private/#', 'deny');
  ctrl('createGroup', 'readers');
  ctrl('addGroupRole', 'readers', 'reader');
  ctrl('createClient', 'alice', '-p', 'alice-pw');
  ctrl('addClientRole', 'alice', 'sensor');
  ctrl('createClient', 'bob', '-p', 'bob-pw');
  ctrl('addGroupClient', 'readers', 'bob');
  ctrl('createClient', 'carol', '-p', 'carol-pw', '-c', 'carol-id');
  ctrl('addClientRole', 'carol', 'sensor');
  ctrl('createClient', 'dave', '-p', 'dave-pw');
  ctrl('addClientRole', 'dave', 'sensor');
  ctrl('disableClient', 'dave');
  ctrl('createRole', 'narrow');
  ctrl('addRoleACL', 'narrow', 'subscribePattern', 'a/+', 'allow');
  ctrl('createClient', 'erin', '-p', 'erin-pw');
  ctrl('addClientRole', 'erin', 'narrow');
  // Mosquitto writes the file after each change.
  await waitFor(() => readFileSync(dynsecFile, 'utf8').includes('"erin"'), { message: 'dynamic-security.json written' });

  spindle = await startAdminBroker({ auth: { allowAnonymous: false }, limits: { authMaxFailures: 0 } });
  const imported = await spindle.api('POST', '/api/client-db/import/mosquitto', { body: { mode: 'replace', config: JSON.parse(readFileSync(dynsecFile, 'utf8')) } });
  assert.equal(imported.status, 200, imported.text);
  assert.equal(imported.json.data.clients, 7);
});
after(async () => {
  await spindle?.stop();
  await mosq?.stop();
});

interface Broker {
  name: string;
  url: string;
}
const brokers = (): Broker[] => [{ name: 'mosquitto', url: mosq.url }, { name: 'spindle', url: spindle.url }];

/** Accepted, or refused with its CONNACK reason code. */
async function tryConnect(url: string, username: string, password: string, clientId: string): Promise<{ answer: string; code: number }> {
  try {
    const c = await connect(url, { username, password, clientId, protocolVersion: 5 });
    await end(c);
    return { answer: 'accepted', code: 0 };
  } catch (err) {
    return { answer: 'refused', code: (err as { code?: number }).code ?? -1 };
  }
}

async function subCode(client: MqttClient, filter: string): Promise<string> {
  try {
    const g = (await client.subscribeAsync(filter, { qos: 0 }))[0].qos;
    return g < 0x80 ? 'granted' : 'refused';
  } catch {
    return 'refused';
  }
}

/** What `receiver` gets of the `topics` the observer publishes (then a marker on `marker`, which
 * `receiver` must be able to read: everything before it has arrived). */
async function received(url: string, receiver: MqttClient, publisher: MqttClient, topics: string[], marker: string): Promise<string[]> {
  const got: string[] = [];
  const onMessage = (t: string) => got.push(t);
  receiver.on('message', onMessage);
  for (const t of topics) await publisher.publishAsync(t, 'x', { qos: 1 }).catch(() => undefined);
  await publisher.publishAsync(marker, 'end', { qos: 1 });
  await waitFor(() => got.includes(marker), { message: `${url}: the marker ${marker} arrives` });
  receiver.off('message', onMessage);
  return got.filter((t) => t !== marker);
}

test('connects: the same clients are accepted and refused by both', async () => {
  const cases: [string, string, string][] = [
    ['alice', 'alice-pw', 'a-1'],
    ['alice', 'wrong', 'a-2'],
    ['carol', 'carol-pw', 'carol-id'],
    ['carol', 'carol-pw', 'not-carol'],
    ['dave', 'dave-pw', 'd-1'],
    ['nobody', 'x', 'n-1'],
  ];
  const answers: Record<string, string[]> = {};
  const codes: Record<string, number[]> = {};
  for (const b of brokers()) {
    const got = await Promise.all(cases.map(([u, p, id]) => tryConnect(b.url, u, p, id === 'carol-id' ? id : `${id}-${b.name}`)));
    answers[b.name] = got.map((g) => g.answer);
    codes[b.name] = got.map((g) => g.code);
  }
  assert.deepEqual(answers.mosquitto, ['accepted', 'refused', 'accepted', 'refused', 'refused', 'refused']);
  assert.deepEqual(answers.spindle, answers.mosquitto);
  // The known difference (docs/features/client-db.md): Mosquitto 2.0.11 answers 0x87 to every
  // refusal; Spindle 0x86 to a wrong password or an unknown user, 0x87 to a client id mismatch or
  // a disabled client.
  assert.deepEqual(codes.mosquitto, [0, 0x87, 0, 0x87, 0x87, 0x87]);
  assert.deepEqual(codes.spindle, [0, 0x86, 0, 0x87, 0x87, 0x86]);
});

test('publishes and subscriptions: the same are allowed and refused by both (the subscriptions need the SUBSCRIBE handler to ask subscribeScope)', async () => {
  const answers: Record<string, unknown> = {};
  for (const b of brokers()) {
    const observer = await connect(b.url, { username: 'observer', password: 'observer-pw', clientId: `obs-${b.name}`, protocolVersion: 5 });
    await observer.subscribeAsync('#', { qos: 1 });
    const alice = await connect(b.url, { username: 'alice', password: 'alice-pw', clientId: `alice-${b.name}`, protocolVersion: 5 });
    const published = await received(b.url, observer, alice, ['sensors/1', 'sensors/locked/1', 'other/1', 'cmd/x'], 'sensors/marker');
    const subs = [await subCode(alice, 'cmd/#'), await subCode(alice, 'cmd/a/b'), await subCode(alice, 'status/+'), await subCode(alice, 'status/x'), await subCode(alice, 'other/#'), await subCode(alice, '#')];
    const bob = await connect(b.url, { username: 'bob', password: 'bob-pw', clientId: `bob-${b.name}`, protocolVersion: 5 });
    const bobSubs = [await subCode(bob, '#'), await subCode(bob, 'private/#'), await subCode(bob, 'anything/else')];
    const erin = await connect(b.url, { username: 'erin', password: 'erin-pw', clientId: `erin-${b.name}`, protocolVersion: 5 });
    const erinSubs = [await subCode(erin, 'a/+'), await subCode(erin, 'a/x'), await subCode(erin, 'a/#'), await subCode(erin, '+/x'), await subCode(erin, 'a/+/b')];
    answers[b.name] = { published, subs, bobSubs, erinSubs };
    await end(observer, alice, bob, erin);
  }
  assert.deepEqual(answers.mosquitto, {
    published: ['sensors/1'],
    subs: ['granted', 'granted', 'granted', 'refused', 'refused', 'refused'],
    bobSubs: ['granted', 'granted', 'granted'],
    erinSubs: ['granted', 'granted', 'refused', 'refused', 'refused'],
  });
  assert.deepEqual(answers.spindle, answers.mosquitto);
});

test('wildcard subscribers: a publishClientReceive deny inside the filter is not delivered, by both (needs the per-delivery read check)', async () => {
  const answers: Record<string, unknown> = {};
  for (const b of brokers()) {
    const observer = await connect(b.url, { username: 'observer', password: 'observer-pw', clientId: `obs2-${b.name}`, protocolVersion: 5 });
    const bob = await connect(b.url, { username: 'bob', password: 'bob-pw', clientId: `bob2-${b.name}`, protocolVersion: 5 });
    await bob.subscribeAsync('#', { qos: 1 });
    const bobGot = await received(b.url, bob, observer, ['public/x', 'private/x', 'private/a/b'], 'public/marker');
    const alice = await connect(b.url, { username: 'alice', password: 'alice-pw', clientId: `alice2-${b.name}`, protocolVersion: 5 });
    await alice.subscribeAsync('cmd/#', { qos: 1 });
    const aliceGot = await received(b.url, alice, observer, ['cmd/go', 'cmd/secret/key'], 'cmd/marker');
    answers[b.name] = { bobGot, aliceGot };
    await end(observer, bob, alice);
  }
  assert.deepEqual(answers.mosquitto, { bobGot: ['public/x'], aliceGot: ['cmd/go'] });
  assert.deepEqual(answers.spindle, answers.mosquitto);
});
