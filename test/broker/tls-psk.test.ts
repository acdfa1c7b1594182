// TLS-PSK (docs/features/tls-psk.md) with the Mosquitto command-line clients on the other side
// (mosquitto_pub / mosquitto_sub --psk, OpenSSL 3): keys from a Mosquitto psk_file and from the
// built-in client database, the identity as the username reaching the ACL, TLS 1.3 (what
// mosquitto_pub 2.0.11 negotiates) and TLS 1.2 (mqtt.js over Node's OpenSSL, held to 1.2), a
// wrong key and an unknown identity refused and counted, an endpoint with a certificate and PSK
// together, the PSK file read again on SIGHUP (a bad one keeping the old keys), and bad
// configurations refused naming the field. Everything runs with mqtt.io native (the PSK
// endpoint's TLS then runs on Node's OpenSSL, rustls having no PSK) and node.
// needs: broker
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { connect, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ownChild } from '../helpers/children.ts';
import { freePort } from '../helpers/process-broker.ts';
import { waitFor } from '../helpers/wait.ts';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'spindle-psk-'));
const f = (name: string) => path.join(dir, name);

const KEYS = {
  dev1: 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
  // Leading zero bytes and an odd number of digits: read as Mosquitto reads them.
  'sensor-7': '0000ff0102030405060708090a0b0c0d',
  odd: 'abc1234',
} as const;
const DB_KEY = '5eed5eed5eed5eed0123456789abcdef';

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

before(() => {
  writeFileSync(f('psk.txt'), ['# identities of the test devices', '', ...Object.entries(KEYS).map(([id, key]) => `${id}:${key}`), ''].join('\n'));
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle PSK Test CA');
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=spindle-psk');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f('server.crt'), '-extfile', f('server.ext'));
});

interface PskClient {
  identity: string;
  key: string;
}

const pskArgs = (port: number, c: PskClient) => ['-h', '127.0.0.1', '-p', String(port), '--psk', c.key, '--psk-identity', c.identity];
/** How mosquitto_pub says the TLS handshake failed (or, on an endpoint that cut the connection
 * right after it, that the connection was lost). */
const REFUSED = /TLS error|Connection error|protocol error|connection was lost/i;

/** An mqtt.js client over TLS 1.2 with a PSK (Node's OpenSSL, PSK suites only): resolves with
 * the CONNACK's outcome ('ok' or the error). */
async function tls12(port: number, c: PskClient, extra: Record<string, unknown> = {}): Promise<string> {
  const client = await connect(`mqtts://127.0.0.1:${port}`, {
    protocolVersion: 5,
    maxVersion: 'TLSv1.2',
    ciphers: 'PSK',
    pskCallback: () => ({ psk: Buffer.from(c.key, 'hex'), identity: c.identity }),
    // No certificate to check on a PSK handshake.
    checkServerIdentity: () => undefined,
    ...extra,
  } as never).catch((e: Error) => e);
  if (client instanceof Error) return client.message;
  const protocol = (client.stream as import('node:tls').TLSSocket).getProtocol();
  await end(client);
  return protocol === 'TLSv1.2' ? 'ok' : `negotiated ${protocol}`;
}

/** mosquitto_pub through PSK: 'ok', or what it printed. */
function pub(port: number, c: PskClient, topic: string, message: string, extra: string[] = []): Promise<string> {
  return run('mosquitto_pub', [...pskArgs(port, c), '-V', 'mqttv5', '-q', '1', '-t', topic, '-m', message, ...extra]).then(() => 'ok', (e: { stdout: string; stderr: string }) => `${e.stdout}${e.stderr}`.trim());
}

/** mosquitto_sub through PSK that subscribes and leaves (-E): its debug output. */
function subscribeOnce(port: number, c: PskClient, filter: string): Promise<string> {
  return run('mosquitto_sub', [...pskArgs(port, c), '-V', 'mqttv5', '-t', filter, '-E', '-d']).then((r) => r.stdout, (e: { stdout: string; stderr: string; code: number }) => `${e.stdout}${e.stderr} exit ${e.code}`);
}

/** mosquitto_sub through PSK waiting for one message: resolves once it is subscribed, with the
 * message it prints later. */
async function subscriber(port: number, c: PskClient, filter: string): Promise<{ message: Promise<string> }> {
  // stdbuf: mosquitto_sub's output to a pipe is otherwise held until it exits.
  const child = ownChild(spawn('stdbuf', ['-oL', 'mosquitto_sub', ...pskArgs(port, c), '-V', 'mqttv5', '-q', '1', '-t', filter, '-C', '1', '-W', '20', '-d'], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await Promise.race([
    waitFor(() => /Subscribed \(mid: \d+\): 1\b/.test(out), { message: () => `mosquitto_sub subscribed:\n${out}` }),
    exited.then((code) => { throw new Error(`mosquitto_sub exited (${code}) before subscribing:\n${out}`); }),
  ]);
  return {
    message: exited.then((code) => {
      assert.equal(code, 0, out);
      // The last line is the payload (the lines before are -d's packet log).
      return out.trim().split('\n').filter((l) => !l.startsWith('Client ') && !l.startsWith('Subscribed')).at(-1) ?? '';
    }),
  };
}

async function pskCounts(b: AdminBroker, endpoint: string): Promise<Record<string, number>> {
  const text = (await b.api('GET', '/prometheus')).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^spindle_tls_psk_handshakes_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.endpoint === endpoint) out[labels.result] = Number(m[2]);
  }
  return out;
}

for (const io of ['native', 'node'] as const) {
  describe(`mqtt.io ${io}`, () => {
    let broker: AdminBroker;
    let tlsPort: number;

    before(async () => {
      broker = await startAdminBroker({
        mqtt: { io, tls: { port: 0, psk: { file: f('psk.txt'), fromClientDb: true, identityHint: 'spindle', identityAsUsername: true } } },
        auth: { allowAnonymous: false, aclDefault: 'deny', acl: [{ permission: 'allow', action: 'pubsub', topic: 'devices/%u/#' }] },
      });
      tlsPort = broker.ports.tls!;
      const role = await broker.api('POST', '/api/client-db/roles', { body: { name: 'device', rules: [{ action: 'all', permission: 'allow', topic: 'db/%u/#' }] } });
      assert.equal(role.status, 200, role.text);
    });
    after(() => broker?.stop());

    test('keys from a psk_file: mosquitto_sub receives what mosquitto_pub sends, the identity as the username in the ACL', async () => {
      const dev1 = { identity: 'dev1', key: KEYS.dev1 };
      const sub = await subscriber(tlsPort, dev1, 'devices/dev1/#');
      // The CONNECT's own username is not used: the identity is.
      assert.equal(await pub(tlsPort, dev1, 'devices/dev1/temp', '21.5', ['-u', 'someone-else']), 'ok');
      assert.equal(await sub.message, '21.5');
      // devices/%u/#: another identity's tree is refused (SUBACK 0x87 = 135).
      assert.match(await subscribeOnce(tlsPort, dev1, 'devices/sensor-7/#'), /Subscribed \(mid: \d+\): 135\b/);
      assert.match(await subscribeOnce(tlsPort, dev1, 'devices/dev1/#'), /Subscribed \(mid: \d+\): 0\b/);
    });

    test('keys with leading zero bytes and an odd number of digits mean what they mean to Mosquitto', async () => {
      assert.equal(await pub(tlsPort, { identity: 'sensor-7', key: KEYS['sensor-7'] }, 'devices/sensor-7/t', 'zeros'), 'ok');
      assert.equal(await pub(tlsPort, { identity: 'odd', key: KEYS.odd }, 'devices/odd/t', 'odd'), 'ok');
    });

    test('TLS 1.2 with a PSK suite: accepted with the key, refused with another key or an unknown identity', async () => {
      assert.equal(await tls12(tlsPort, { identity: 'dev1', key: KEYS.dev1 }), 'ok');
      assert.notEqual(await tls12(tlsPort, { identity: 'dev1', key: 'ffff0000ffff0000' }), 'ok');
      assert.notEqual(await tls12(tlsPort, { identity: 'stranger', key: KEYS.dev1 }), 'ok');
    });

    test('a wrong key and an unknown identity are refused, and counted', async () => {
      const before = await pskCounts(broker, 'tls');
      assert.match(await pub(tlsPort, { identity: 'dev1', key: 'ffff0000ffff0000' }, 'devices/dev1/x', 'x'), REFUSED);
      assert.match(await pub(tlsPort, { identity: 'stranger', key: KEYS.dev1 }, 'devices/stranger/x', 'x'), REFUSED);
      assert.notEqual(await tls12(tlsPort, { identity: 'dev1', key: 'ffff0000ffff0000' }), 'ok');
      assert.notEqual(await tls12(tlsPort, { identity: 'stranger', key: KEYS.dev1 }), 'ok');
      assert.equal(await pub(tlsPort, { identity: 'dev1', key: KEYS.dev1 }, 'devices/dev1/x', 'x'), 'ok');
      const now = await pskCounts(broker, 'tls');
      assert.deepEqual({ ok: now.ok - before.ok, unknown_identity: now.unknown_identity - before.unknown_identity, failed: now.failed - before.failed }, { ok: 1, unknown_identity: 2, failed: 2 });
    });

    test('keys from the client database: its username is the identity, its role the ACL; disabled or rekeyed, the old key is refused', async () => {
      const add = await broker.api('POST', '/api/client-db/clients', { body: { username: 'db-dev', password: 'unused-pw', pskKey: DB_KEY, roles: [{ name: 'device' }] } });
      assert.equal(add.status, 200, add.text);
      assert.equal(add.json.data.pskKey, undefined);
      assert.equal(add.json.data.hasPskKey, true);
      const me = { identity: 'db-dev', key: DB_KEY };
      const sub = await subscriber(tlsPort, me, 'db/db-dev/#');
      assert.equal(await pub(tlsPort, me, 'db/db-dev/state', 'on'), 'ok');
      assert.equal(await sub.message, 'on');
      // The role's rules, not auth.acl: devices/db-dev/# is not granted to it.
      assert.match(await subscribeOnce(tlsPort, me, 'devices/db-dev/#'), /Subscribed \(mid: \d+\): 135\b/);
      // Disabled: its key is no key.
      assert.equal((await broker.api('PUT', '/api/client-db/clients/db-dev', { body: { enabled: false } })).status, 200);
      assert.match(await pub(tlsPort, me, 'db/db-dev/state', 'off'), REFUSED);
      // A new key: the old one refused, the new one accepted.
      const rekey = await broker.api('PUT', '/api/client-db/clients/db-dev', { body: { enabled: true, pskKey: 'c0ffee00c0ffee00' } });
      assert.equal(rekey.status, 200, rekey.text);
      assert.match(await pub(tlsPort, me, 'db/db-dev/state', 'old'), REFUSED);
      assert.equal(await pub(tlsPort, { identity: 'db-dev', key: 'c0ffee00c0ffee00' }, 'db/db-dev/state', 'new'), 'ok');
      // The export carries the key as it was given (a shared secret, recoverable by an admin).
      const exported = await broker.api('GET', '/api/client-db/export');
      assert.equal(exported.json.data.clients.find((c: { username: string }) => c.username === 'db-dev').pskKey, 'c0ffee00c0ffee00');
      const bad = await broker.api('PUT', '/api/client-db/clients/db-dev', { body: { pskKey: '0xabc' } });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.field, 'pskKey');
    });

    test('an endpoint with a certificate and PSK: a certificate client and a PSK client; an unknown identity still refused', async () => {
      const port = await freePort();
      const add = await broker.api('POST', '/api/endpoints/add', { body: { id: 'dual', port, sslConfig: { cert: f('server.crt'), key: f('server.key'), psk: { file: f('psk.txt'), identityAsUsername: true } } } });
      assert.equal(add.status, 200, add.text);
      const viaCert = await connect(`mqtts://127.0.0.1:${port}`, { protocolVersion: 5, ca: readFileSync(f('ca.crt')), username: 'nobody', password: 'x' }).catch((e: Error) => e);
      // A certificate client signs in with a username and password: none here, so refused by
      // the auth, after a TLS handshake that worked (a CONNACK came back).
      assert.match(String(viaCert), /Bad User Name or Password|Not authorized/i);
      assert.equal(await pub(port, { identity: 'dev1', key: KEYS.dev1 }, 'devices/dev1/dual', 'tls 1.3'), 'ok');
      assert.equal(await tls12(port, { identity: 'dev1', key: KEYS.dev1 }), 'ok');
      // TLS 1.3 goes on to the certificate for an unknown identity: the connection is cut all the
      // same once the handshake is done. TLS 1.2 fails it.
      assert.match(await pub(port, { identity: 'stranger', key: KEYS.dev1 }, 'devices/stranger/x', 'x'), REFUSED);
      assert.notEqual(await tls12(port, { identity: 'stranger', key: KEYS.dev1 }), 'ok');
      assert.deepEqual(await pskCounts(broker, 'dual'), { ok: 2, unknown_identity: 2, failed: 0 });
      assert.equal((await broker.api('POST', '/api/endpoints/remove', { body: { port } })).status, 200);
    });
  });
}

describe('reload and refusals', () => {
  let broker: AdminBroker;
  const live = f('live-psk.txt');

  before(async () => {
    writeFileSync(live, `dev1:${KEYS.dev1}\n`);
    broker = await startAdminBroker({
      mqtt: { tls: { port: 0, psk: { file: live, identityAsUsername: true } } },
      auth: { allowAnonymous: false, aclDefault: 'allow' },
    });
  });
  after(() => broker?.stop());

  test('SIGHUP reads the psk_file again on every worker; a bad file keeps the old keys', async () => {
    const port = broker.ports.tls!;
    const dev2 = { identity: 'dev2', key: 'd2d2d2d2d2d2d2d2' };
    assert.match(await pub(port, dev2, 'a/b', 'x'), REFUSED);
    writeFileSync(live, `dev1:${KEYS.dev1}\ndev2:${dev2.key}\n`);
    broker.supervisor.reloadTls();
    // A worker takes its messages in order: once each answered the metrics call that follows,
    // each has read the file again.
    await pskCounts(broker, 'tls');
    // Several connections, spread over both workers by the kernel, all accepted.
    for (let i = 0; i < 6; i++) assert.equal(await pub(port, dev2, 'a/b', `x${i}`), 'ok');
    writeFileSync(live, `dev1:${KEYS.dev1}\ndev3:not-hex\n`);
    broker.supervisor.reloadTls();
    await pskCounts(broker, 'tls');
    // The bad file was refused: dev2's key is still there, dev3 is not.
    for (let i = 0; i < 6; i++) assert.equal(await pub(port, dev2, 'a/b', `y${i}`), 'ok');
    assert.match(await pub(port, { identity: 'dev3', key: 'abcd' }, 'a/b', 'x'), REFUSED);
  });

  test('bad PSK settings are refused naming the field', async () => {
    writeFileSync(f('bad-psk.txt'), `good:${KEYS.dev1}\nno key here\n`);
    const port = await freePort();
    const cases: [unknown, string, RegExp][] = [
      [{ port, sslConfig: { psk: { file: f('bad-psk.txt') } } }, 'sslConfig.psk.file', /line 2: expected "identity:hexkey"/],
      [{ port, sslConfig: { psk: { file: f('missing.txt') } } }, 'sslConfig.psk.file', /cannot read/],
      [{ port, sslConfig: { psk: {} } }, 'sslConfig.psk', /file or fromClientDb/],
      [{ port, useWebsocket: true, sslConfig: { psk: { fromClientDb: true } } }, 'sslConfig.psk', /WebSocket/],
      [{ port, sslConfig: {} }, 'sslConfig.cert', /is required/],
      [{ port, sslConfig: { cert: f('server.crt') } }, 'sslConfig.key', /is required/],
      [{ port, sslConfig: { psk: { fromClientDb: true }, requestCert: true } }, 'sslConfig.requestCert', /server certificate/],
      [{ port, sslConfig: { psk: { fromClientDb: true, extra: 1 } } }, 'sslConfig.psk.extra', /./],
    ];
    for (const [body, field, message] of cases) {
      const r = await broker.api('POST', '/api/endpoints/add', { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
      assert.match(r.json.message, message);
    }
    // An update that would make the PSK endpoint a WebSocket one is refused the same way.
    const r = await broker.api('POST', '/api/endpoints/update', { body: { port: broker.ports.tls, useWebsocket: true } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, 'sslConfig.psk');
  });

  test('an endpoint without authentication (enableAuth false) still takes the PSK identity as the username', async () => {
    const port = await freePort();
    const add = await broker.api('POST', '/api/endpoints/add', { body: { id: 'open-psk', port, enableAuth: false, sslConfig: { psk: { file: f('psk.txt'), identityAsUsername: true } } } });
    assert.equal(add.status, 200, add.text);
    const sub = await subscriber(port, { identity: 'dev1', key: KEYS.dev1 }, 'open/#');
    const r = await broker.api('POST', '/api/mqtt/connection', { body: { port } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data.map((c: { username?: string }) => c.username), ['dev1']);
    assert.equal(await pub(port, { identity: 'dev1', key: KEYS.dev1 }, 'open/x', 'done'), 'ok');
    assert.equal(await sub.message, 'done');
  });

  test('mqtt.js without a key cannot use a PSK-only endpoint (no certificate to fall back on)', async () => {
    const err = await connect(`mqtts://127.0.0.1:${broker.ports.tls}`, { protocolVersion: 5, rejectUnauthorized: false }).then(async (c) => {
      await end(c);
      return null;
    }, (e: Error) => e);
    assert.ok(err instanceof Error);
  });
});
