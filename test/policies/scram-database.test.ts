// SCRAM-SHA-256 and SCRAM-SHA-512 with the credentials of a database policy on PostgreSQL, end to
// end on both workers with the mqtt.js SCRAM client (test/helpers/scram-client.ts): a query
// returning RFC 5803 text (scram_sha_256, scram_sha_512) and one returning the columns salt,
// iterations, stored_key and server_key (bytea, or base64 text), both accepted by the dry run
// without a password column; a wrong password and an unknown user refused (0x87); keys of the
// other mechanism not used; is_superuser in force after SCRAM (the ACL denies everyone else); a
// changed row applies at the next sign-in (nothing cached); re-authentication from the policy.
// needs: broker, postgresql
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

import postgres from 'postgres';
import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { end } from '../helpers/broker.ts';
import { ScramClient, reauthenticate, scramConnect, scramCredentials } from '../helpers/scram-client.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { PG_URL, uniqueName } from '../store/databases.ts';

let b: AdminBroker;
let urls: string[];
const pg = postgres(PG_URL, { onnotice: () => {} });
const rfc = uniqueName('mqtt_scram');
const keys = uniqueName('mqtt_scram_keys');

before(async () => {
  await pg.unsafe(`CREATE TABLE ${rfc} (username text PRIMARY KEY, scram_sha_256 text, scram_sha_512 text, is_superuser boolean DEFAULT false)`);
  await pg.unsafe(`CREATE TABLE ${keys} (username text PRIMARY KEY, salt bytea, iterations int, stored_key bytea, server_key bytea, salt_b64 text, stored_key_b64 text, server_key_b64 text)`);
  b = await startAdminBroker({ auth: { allowAnonymous: false, users: [], aclDefault: 'deny' }, limits: { authMaxFailures: 0 } });
  urls = await workerUrls(b);
  const datasource = { url: PG_URL.replace('postgres://spindle:spindle@', 'postgres://'), username: 'spindle', password: 'spindle' };
  for (const [name, sql] of [
    ['pg-scram-rfc5803', `SELECT scram_sha_256, scram_sha_512, is_superuser FROM ${rfc} WHERE username = \${username} LIMIT 1`],
    // The rows with bytea columns, then (the next policy) those with base64 text.
    ['pg-scram-keys', `SELECT salt, iterations, stored_key, server_key FROM ${keys} WHERE username = \${username} AND salt IS NOT NULL LIMIT 1`],
    ['pg-scram-text', `SELECT salt_b64 AS salt, iterations, stored_key_b64 AS stored_key, server_key_b64 AS server_key FROM ${keys} WHERE username = \${username} AND salt IS NULL LIMIT 1`],
  ] as const) {
    const add = await b.api('POST', '/auth/add', { body: { name, type: 'database', config: { datasource, sql } } });
    assert.equal(add.status, 200, `${name}: ${add.text}`);
  }
});

after(async () => {
  await b.stop();
  await pg.unsafe(`DROP TABLE IF EXISTS ${rfc}`);
  await pg.unsafe(`DROP TABLE IF EXISTS ${keys}`);
  await pg.end();
});

async function putRfc(username: string, password: string, superuser = false): Promise<void> {
  await pg.unsafe(`INSERT INTO ${rfc} (username, scram_sha_256, scram_sha_512, is_superuser) VALUES ($1, $2, $3, $4)
    ON CONFLICT (username) DO UPDATE SET scram_sha_256 = $2, scram_sha_512 = $3, is_superuser = $4`,
  [username, scramCredentials('SCRAM-SHA-256', password), scramCredentials('SCRAM-SHA-512', password, 8192), superuser]);
}

/** SHA-512 keys of `password` as bytes (salt, iterations, StoredKey, ServerKey). */
function sha512Keys(password: string): [Buffer, number, Buffer, Buffer] {
  const salt = randomBytes(20);
  const salted = pbkdf2Sync(password, salt, 4096, 64, 'sha512');
  const storedKey = createHash('sha512').update(createHmac('sha512', salted).update('Client Key').digest()).digest();
  return [salt, 4096, storedKey, createHmac('sha512', salted).update('Server Key').digest()];
}

async function pubCode(client: MqttClient, topic: string): Promise<number> {
  try {
    await client.publishAsync(topic, 'x', { qos: 1 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  }
}

test('RFC 5803 columns: both mechanisms sign in on both workers; a wrong password and an unknown user are refused with 0x87; is_superuser applies after SCRAM', async () => {
  await putRfc('paula', 'paula-pw');
  await putRfc('root', 'root-pw', true);
  for (const [w, url] of urls.entries()) {
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
      const s = await scramConnect(url, new ScramClient(mechanism, 'paula', 'paula-pw'), { clientId: `paula-${w}-${mechanism}` });
      assert.equal(s.reasonCode, 0, `worker ${w} ${mechanism}: ${s.data}`);
      assert.equal(s.verified, true);
      if (mechanism === 'SCRAM-SHA-512') assert.match(s.packets.find((p) => p.cmd === 'auth')!.properties.authenticationData.toString(), /,i=8192$/);
      // auth.aclDefault deny: paula is no superuser.
      assert.equal(await pubCode(s.client, 'any/topic'), 0x87);
      await end(s.client);
      const wrong = await scramConnect(url, new ScramClient(mechanism, 'paula', 'nope'));
      assert.deepEqual([wrong.reasonCode, wrong.data], [0x87, 'e=invalid-proof']);
      const ghost = await scramConnect(url, new ScramClient(mechanism, 'nobody-here', 'x'));
      assert.deepEqual([ghost.reasonCode, ghost.data], [0x87, 'e=invalid-proof']);
    }
    const root = await scramConnect(url, new ScramClient('SCRAM-SHA-512', 'root', 'root-pw'), { clientId: `root-${w}` });
    assert.equal(root.verified, true);
    assert.equal(await pubCode(root.client, 'any/topic'), 0, 'the superuser skips the ACL');
    await end(root.client);
  }
});

test('salt, iterations, stored_key, server_key columns (bytea, or base64 text): the key length picks the mechanism', async () => {
  const [salt, iterations, storedKey, serverKey] = sha512Keys('kim-pw');
  await pg.unsafe(`INSERT INTO ${keys} (username, salt, iterations, stored_key, server_key) VALUES ($1, $2, $3, $4, $5)`, ['kim', salt, iterations, storedKey, serverKey]);
  const text = scramCredentials('SCRAM-SHA-256', 'tex-pw').split(/[$:]/);
  await pg.unsafe(`INSERT INTO ${keys} (username, iterations, salt_b64, stored_key_b64, server_key_b64) VALUES ($1, $2, $3, $4, $5)`, ['tex', Number(text[1]), text[2], text[3], text[4]]);
  for (const url of urls) {
    const kim = await scramConnect(url, new ScramClient('SCRAM-SHA-512', 'kim', 'kim-pw'));
    assert.equal(kim.reasonCode, 0, kim.data);
    assert.equal(kim.verified, true);
    await end(kim.client);
    // kim's keys are SHA-512's: SCRAM-SHA-256 finds none for kim.
    const other = await scramConnect(url, new ScramClient('SCRAM-SHA-256', 'kim', 'kim-pw'));
    assert.equal(other.reasonCode, 0x87);
    const tex = await scramConnect(url, new ScramClient('SCRAM-SHA-256', 'tex', 'tex-pw'));
    assert.equal(tex.reasonCode, 0, tex.data);
    assert.equal(tex.verified, true);
    await end(tex.client);
  }
});

test('a changed row applies at the next sign-in and re-authentication (nothing cached)', async () => {
  await putRfc('chris', 'old-pw');
  const s = await scramConnect(b.url, new ScramClient('SCRAM-SHA-256', 'chris', 'old-pw'), { clientId: 'chris' });
  assert.equal(s.verified, true);
  const same = await reauthenticate(s, new ScramClient('SCRAM-SHA-256', 'chris', 'old-pw'));
  assert.deepEqual([same.cmd, same.reasonCode, same.verified], ['auth', 0, true]);
  await putRfc('chris', 'new-pw');
  const old = await scramConnect(b.url, new ScramClient('SCRAM-SHA-256', 'chris', 'old-pw'));
  assert.equal(old.reasonCode, 0x87);
  const stale = await reauthenticate(s, new ScramClient('SCRAM-SHA-256', 'chris', 'old-pw'));
  assert.deepEqual([stale.cmd, stale.reasonCode], ['disconnect', 0x87]);
  const fresh = await scramConnect(b.url, new ScramClient('SCRAM-SHA-256', 'chris', 'new-pw'));
  assert.equal(fresh.verified, true);
  await end(fresh.client);
  const prom = (await b.api('GET', '/prometheus')).text;
  assert.match(prom, /spindle_auth_scram_total\{mechanism="SCRAM-SHA-256",result="success"\} [1-9]/);
});
