// End to end: MQTT 5 enhanced authentication with SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
// RFC 7677) against the built-in client database, with a real SCRAM client on the other side
// (test/helpers/scram-client.ts: its own PBKDF2 and HMACs, driven by mqtt.js's AUTH handling):
// sign-in with both mechanisms and the client's roles in force after it; a wrong password, an
// unknown user and a tampered proof refused (0x87, e=invalid-proof) alike; channel binding and
// non-SCRAM data refused; an AUTH of another method a protocol error; a server whose v= the client
// cannot verify; clients with ready SCRAM credentials only; SASLprep of usernames;
// re-authentication that succeeds, fails (DISCONNECT 0x87) and names another method (0x82);
// what is stored (no password, no unsalted digest of it); the metrics. MQTT 3.1.1 password
// sign-in of the same clients is unchanged.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import type { MqttClient } from 'mqtt';

import { connect, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { rawConnect } from '../helpers/raw.ts';
import { ScramClient, reauthenticate, scramConnect, scramCredentials, type Mechanism } from '../helpers/scram-client.ts';

const MECHANISMS: Mechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];
let broker: AdminBroker;

before(async () => {
  broker = await startAdminBroker({ auth: { allowAnonymous: false }, limits: { authMaxFailures: 0 } });
  const role = await broker.api('POST', '/api/client-db/roles', { body: { name: 'scram-dev', rules: [{ action: 'publish', permission: 'allow', topic: 'scram/%u/#' }, { action: 'subscribe', permission: 'allow', topic: 'scram/#' }] } });
  assert.equal(role.status, 200, role.text);
  await addClient({ username: 'sam', password: 'sam-pw', roles: [{ name: 'scram-dev' }] });
});
after(() => broker.stop());

async function addClient(body: Record<string, unknown>): Promise<Record<string, any>> {
  const r = await broker.api('POST', '/api/client-db/clients', { body });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

/** The PUBACK reason of a QoS 1 publish (0: accepted). */
async function pubCode(client: MqttClient, topic: string): Promise<number> {
  try {
    await client.publishAsync(topic, 'x', { qos: 1 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  }
}

test('SCRAM-SHA-256 and SCRAM-SHA-512: a client made with a password signs in; CONNACK has the method and a v= the client verifies; its roles apply', async () => {
  for (const mechanism of MECHANISMS) {
    const s = await scramConnect(broker.url, new ScramClient(mechanism, 'sam', 'sam-pw'), { clientId: `sam-${mechanism}` });
    assert.equal(s.reasonCode, 0, `${mechanism}: ${s.data}`);
    assert.equal(s.verified, true, `${mechanism}: ${s.data}`);
    const connack = s.packets.find((p) => p.cmd === 'connack')!;
    assert.equal(connack.properties.authenticationMethod, mechanism);
    const auth = s.packets.filter((p) => p.cmd === 'auth');
    assert.equal(auth.length, 1);
    assert.equal(auth[0].reasonCode, 0x18);
    assert.match(auth[0].properties.authenticationData.toString(), /^r=[^,]+,s=[A-Za-z0-9+/=]+,i=4096$/);
    // The client is "sam" for the ACL: its role's rules, with %u.
    assert.equal(await pubCode(s.client, 'scram/sam/t'), 0);
    assert.equal(await pubCode(s.client, 'scram/other/t'), 0x87);
    await end(s.client);
  }
  // The same client signs in with its password (argon2id), in MQTT 3.1.1 and 5, as before.
  for (const protocolVersion of [4, 5] as const) await end(await connect(broker.url, { username: 'sam', password: 'sam-pw', protocolVersion }));
});

test('a wrong password, an unknown user and a tampered proof get CONNACK 0x87 with e=invalid-proof; an unknown user is shown a steady salt like a real client', async () => {
  for (const mechanism of MECHANISMS) {
    const wrong = await scramConnect(broker.url, new ScramClient(mechanism, 'sam', 'not-it'));
    assert.equal(wrong.reasonCode, 0x87);
    assert.equal(wrong.data, 'e=invalid-proof');
    assert.equal(wrong.packets.find((p) => p.cmd === 'connack')!.properties.authenticationMethod, mechanism);

    const salts: string[] = [];
    for (let i = 0; i < 2; i++) {
      const ghost = await scramConnect(broker.url, new ScramClient(mechanism, 'ghost', 'whatever'));
      assert.equal(ghost.reasonCode, 0x87);
      assert.equal(ghost.data, 'e=invalid-proof');
      const first = ghost.packets.find((p) => p.cmd === 'auth')!.properties.authenticationData.toString();
      assert.match(first, /,i=4096$/);
      salts.push(/,s=([^,]+),/.exec(first)![1]);
    }
    assert.equal(salts[0], salts[1], 'the same made-up salt each time');
    assert.equal(Buffer.from(salts[0], 'base64').length, 16, 'as long as a real salt');

    const tampered = new ScramClient(mechanism, 'sam', 'sam-pw');
    tampered.tamper = (final) => final.replace(/p=(.)/, (_, c: string) => `p=${c === 'A' ? 'B' : 'A'}`);
    const t = await scramConnect(broker.url, tampered);
    assert.equal(t.reasonCode, 0x87);
    assert.equal(t.data, 'e=invalid-proof');

    const otherNonce = new ScramClient(mechanism, 'sam', 'sam-pw');
    otherNonce.tamper = (final) => final.replace(/,r=[^,]+,/, ',r=someone-elses-nonce,');
    const n = await scramConnect(broker.url, otherNonce);
    assert.equal(n.reasonCode, 0x87);
    assert.equal(n.data, 'e=other-error');
  }
});

test('channel binding asked for (p=) and data that is not SCRAM are refused with 0x87 and their e=; an AUTH of another method is a protocol error (0x82)', async () => {
  const cb = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-256', 'sam', 'sam-pw', undefined, 'p=tls-server-end-point,,'));
  assert.equal(cb.reasonCode, 0x87);
  assert.equal(cb.data, 'e=channel-binding-not-supported');

  const raw = await rawConnect(broker.ports.tcp!, { clientId: 'not-scram', properties: { authenticationMethod: 'SCRAM-SHA-512', authenticationData: Buffer.from('hello') } }, 5);
  assert.equal((raw.connack as { reasonCode: number }).reasonCode, 0x87);
  assert.equal((raw.connack as { properties: { authenticationData: Buffer } }).properties.authenticationData.toString(), 'e=other-error');
  await raw.closed();

  const c = await RawClient.open(broker.url, 5);
  const scram = new ScramClient('SCRAM-SHA-256', 'sam', 'sam-pw');
  c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'switcher', clean: true, keepalive: 0, properties: { authenticationMethod: 'SCRAM-SHA-256', authenticationData: scram.first() } } as never);
  const challenge = await c.next('auth');
  assert.equal(challenge.reasonCode, 0x18);
  // [MQTT-4.12.0-5] every AUTH carries the method of the CONNECT.
  c.send({ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'SCRAM-SHA-512', authenticationData: scram.final(challenge.properties.authenticationData) } } as never);
  const refused = await c.next('connack');
  assert.equal(refused.reasonCode, 0x82);
  await c.waitClosed();
});

test('the client verifies the server: credentials whose ServerKey is not the password\'s pass the proof but give a v= the client refuses', async () => {
  for (const mechanism of MECHANISMS) {
    const username = `liar-${mechanism}`;
    const forged = scramCredentials(mechanism, 'liar-pw', 4096, randomBytes(16), randomBytes(mechanism === 'SCRAM-SHA-256' ? 32 : 64));
    await addClient({ username, scram: [forged] });
    const s = await scramConnect(broker.url, new ScramClient(mechanism, username, 'liar-pw'));
    assert.equal(s.reasonCode, 0, 'the broker accepted the proof');
    assert.match(s.data!, /^v=/);
    assert.equal(s.verified, false, 'the client did not accept the server signature');
  }
});

test('ready SCRAM credentials only (no password hash): SCRAM signs in, a password CONNECT is refused; the API shows the mechanisms, never the keys; SASLprep\'d usernames', async () => {
  const made = await addClient({ username: 'IX', scram: [scramCredentials('SCRAM-SHA-512', 'ix-pw', 10000)], roles: [{ name: 'scram-dev' }] });
  assert.equal(made.passwordType, 'none');
  assert.deepEqual(made.scramMechanisms, ['SCRAM-SHA-512']);
  assert.equal(made.scram, undefined);
  const s = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-512', 'IX', 'ix-pw'));
  assert.equal(s.reasonCode, 0, s.data);
  assert.equal(s.verified, true);
  assert.match(s.packets.find((p) => p.cmd === 'auth')!.properties.authenticationData.toString(), /,i=10000$/);
  await end(s.client);
  // RFC 4013: a soft hyphen maps to nothing, so "I\u00ADX" is the client "IX".
  const prepped = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-512', 'I\u00ADX', 'ix-pw'));
  assert.equal(prepped.reasonCode, 0, prepped.data);
  assert.equal(await pubCode(prepped.client, 'scram/IX/t'), 0, 'its username is IX');
  await end(prepped.client);
  // No SCRAM-SHA-256 credentials: that mechanism fails like a wrong password.
  const other = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-256', 'IX', 'ix-pw'));
  assert.equal(other.reasonCode, 0x87);
  const raw = await rawConnect(broker.ports.tcp!, { clientId: 'ix-pw', username: 'IX', password: 'ix-pw' }, 5);
  assert.equal((raw.connack as { reasonCode: number }).reasonCode, 0x86);
  raw.end();
  // Refusals name the field.
  for (const [body, field] of [
    [{ username: 'bad1', scram: ['SCRAM-SHA-256$100:c2FsdA==$a2V5:a2V5'] }, 'scram[0]'],
    [{ username: 'bad2', password: 'p', scram: [scramCredentials('SCRAM-SHA-256', 'p')] }, 'scram'],
    [{ username: 'bad3', scram: [scramCredentials('SCRAM-SHA-256', 'p'), scramCredentials('SCRAM-SHA-256', 'q')] }, 'scram[1]'],
  ] as const) {
    const r = await broker.api('POST', '/api/client-db/clients', { body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, field, r.text);
  }
});

test('re-authentication: AUTH 0x19 then 0x18 then AUTH 0x00 with a verified v=; after a password change the old one ends with DISCONNECT 0x87; another method is a protocol error', async () => {
  await addClient({ username: 'rita', password: 'rita-pw', roles: [{ name: 'scram-dev' }] });
  const s = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-256', 'rita', 'rita-pw'), { clientId: 'rita-1' });
  assert.equal(s.verified, true);
  const again = await reauthenticate(s, new ScramClient('SCRAM-SHA-256', 'rita', 'rita-pw'));
  assert.deepEqual([again.cmd, again.reasonCode, again.verified], ['auth', 0, true]);
  assert.equal(await pubCode(s.client, 'scram/rita/after'), 0, 'the connection goes on');

  // Another user's credentials cannot take over the connection.
  const someoneElse = await reauthenticate(s, new ScramClient('SCRAM-SHA-256', 'sam', 'sam-pw'));
  assert.deepEqual([someoneElse.cmd, someoneElse.reasonCode], ['disconnect', 0x87]);

  const s2 = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-512', 'rita', 'rita-pw'), { clientId: 'rita-2' });
  assert.equal(s2.verified, true);
  const r = await broker.api('PUT', '/api/client-db/clients/rita', { body: { password: 'rita-new' } });
  assert.equal(r.status, 200, r.text);
  const stale = await reauthenticate(s2, new ScramClient('SCRAM-SHA-512', 'rita', 'rita-pw'));
  assert.deepEqual([stale.cmd, stale.reasonCode], ['disconnect', 0x87]);

  const s3 = await scramConnect(broker.url, new ScramClient('SCRAM-SHA-512', 'rita', 'rita-new'), { clientId: 'rita-3' });
  assert.equal(s3.verified, true);
  const fresh = await reauthenticate(s3, new ScramClient('SCRAM-SHA-512', 'rita', 'rita-new'));
  assert.deepEqual([fresh.cmd, fresh.reasonCode, fresh.verified], ['auth', 0, true]);
  // [MQTT-4.12.1-1] the method of the CONNECT, and no other.
  const switched = await reauthenticate(s3, new ScramClient('SCRAM-SHA-256', 'rita', 'rita-new'), 'SCRAM-SHA-256');
  assert.deepEqual([switched.cmd, switched.reasonCode], ['disconnect', 0x82]);

  // A client that signed in with a password has no method to re-authenticate with.
  const plain = await connect(broker.url, { username: 'rita', password: 'rita-new', protocolVersion: 5 });
  const signIn = { client: plain, packets: [] as never[], reasonCode: 0, data: undefined, verified: false };
  plain.on('packetreceive', (p) => (signIn.packets as unknown[]).push(p));
  const none = await reauthenticate(signIn, new ScramClient('SCRAM-SHA-256', 'rita', 'rita-new'));
  assert.deepEqual([none.cmd, none.reasonCode], ['disconnect', 0x82]);
});

test('what is stored: SCRAM salted keys and an argon2id hash; never the password, nor an unsalted digest of it', async () => {
  await addClient({ username: 'vault', password: 'vault-secret-pw' });
  // The client database's record as the store holds it.
  const store = (broker.supervisor as unknown as { nodeStore: { store: { getAdmin<T>(kind: string, id: string): Promise<T | undefined> } } }).nodeStore.store;
  const doc = await store.getAdmin<{ passwordHash: string; scram: string[] }>('client-db-client', 'vault');
  assert.ok(doc);
  const text = JSON.stringify(doc);
  assert.match(doc.passwordHash, /^\$argon2id\$/);
  assert.deepEqual(doc.scram.map((s) => s.split('$')[0]), MECHANISMS);
  for (const s of doc.scram) assert.match(s, /^SCRAM-SHA-(256|512)\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
  const password = Buffer.from('vault-secret-pw');
  for (const form of [password.toString(), password.toString('base64'), password.toString('hex')]) assert.ok(!text.includes(form), `the password as ${form}`);
  for (const hash of ['sha1', 'sha256', 'sha512', 'md5']) {
    const d = createHash(hash).update(password).digest();
    assert.ok(!text.includes(d.toString('base64')) && !text.includes(d.toString('hex')), `an unsalted ${hash} of the password`);
  }
  const exported = (await broker.api('GET', '/api/client-db/export')).json.data.clients.find((c: { username: string }) => c.username === 'vault');
  assert.deepEqual(exported.scram, doc.scram, 'export carries the credentials, for an import');
  const view = (await broker.api('GET', '/api/client-db/clients/vault')).json.data;
  assert.deepEqual(view.scramMechanisms, MECHANISMS);
  assert.equal(view.scram, undefined);
  // Setting a ready hash drops the SCRAM credentials made from the old password.
  const r = await broker.api('PUT', '/api/client-db/clients/vault', { body: { passwordHash: doc.passwordHash } });
  assert.deepEqual(r.json.data.scramMechanisms, []);
});

test('metrics count SCRAM results per mechanism, re-authentications and timeouts', async () => {
  const metrics = (await broker.api('GET', '/prometheus')).text;
  for (const mechanism of MECHANISMS) {
    for (const result of ['success', 'invalid_proof', 'unknown_user']) assert.match(metrics, new RegExp(`spindle_auth_scram_total\\{mechanism="${mechanism}",result="${result}"\\} [1-9]`), `${mechanism} ${result}`);
  }
  assert.match(metrics, /spindle_auth_scram_total\{mechanism="SCRAM-SHA-256",result="bad_message"\} [1-9]/);
  assert.match(metrics, /spindle_auth_reauth_total\{result="success"\} [1-9]/);
  assert.match(metrics, /spindle_auth_reauth_total\{result="failure"\} [1-9]/);
  assert.match(metrics, /spindle_auth_exchange_timeouts_total 0/);
});
