// MQTT over TLS (MQTT 5.0 section 6.1 context): a server certificate from a test CA, client
// certificates with the CN as username, clients without a certificate refused, and certificates
// reloaded for new connections while open ones carry on.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';

import type { MqttClient } from 'mqtt';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-tls-'));
const f = (name: string) => path.join(dir, name);

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A key and a certificate signed by the test CA. */
function issue(name: string, cn: string, server: boolean): void {
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`);
  writeFileSync(f(`${name}.ext`), server
    ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
    : 'extendedKeyUsage=clientAuth\n');
  openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), '-extfile', f(`${name}.ext`));
}

let ca: Buffer;
let plain: TestBroker; // TLS, no client certificates
let mutual: TestBroker; // client certificates required, CN as username

before(async () => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle Test CA');
  issue('server', 'spindle-server-1', true);
  issue('server2', 'spindle-server-2', true);
  issue('device', 'device-1', false);
  issue('other', 'device-2', false);
  // The first broker serves live copies, replaced in the reload test.
  copyFileSync(f('server.crt'), f('live.crt'));
  copyFileSync(f('server.key'), f('live.key'));
  ca = readFileSync(f('ca.crt'));
  plain = await startBroker({ mqtt: { tls: { port: 0, cert: f('live.crt'), key: f('live.key') } } });
  mutual = await startBroker({
    mqtt: { tls: { port: 0, cert: f('server.crt'), key: f('server.key'), ca: f('ca.crt'), requestCert: true, rejectUnauthorized: true, cnAsUsername: true } },
    auth: {
      aclDefault: 'allow',
      acl: [
        { permission: 'allow', action: 'pubsub', topic: 'devices/%u/#' },
        { permission: 'deny', action: 'pubsub', topic: 'devices/#' },
      ],
    },
  });
});
after(async () => {
  await plain?.stop();
  await mutual?.stop();
});

const tlsUrl = (b: TestBroker) => `mqtts://127.0.0.1:${b.ports.tls}`;
const peerCN = (c: MqttClient) => (c.stream as TLSSocket).getPeerCertificate().subject.CN;

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion} over TLS: connect, subscribe and publish; a TCP client on the same broker takes part`, async () => {
    const sub = await connect(tlsUrl(plain), { protocolVersion, clientId: `tls-sub-${protocolVersion}`, ca });
    assert.equal(peerCN(sub), 'spindle-server-1');
    await sub.subscribeAsync(`tls/${protocolVersion}`, { qos: 1 });
    const tcp = await connect(plain.url, { protocolVersion, clientId: `tls-tcp-${protocolVersion}` });
    const w = nextMessages(sub, 1);
    await tcp.publishAsync(`tls/${protocolVersion}`, 'secure', { qos: 1 });
    assert.equal((await w)[0].payload, 'secure');
    await end(sub, tcp);
  });
}

test('a TLS client that does not trust the server CA fails the handshake', async () => {
  await assert.rejects(connect(tlsUrl(plain), { protocolVersion: 5, clientId: 'tls-untrusting' }));
});

test('with requestCert and cnAsUsername, the client certificate CN is the username (ACL on %u)', async () => {
  const dev = await connect(tlsUrl(mutual), { protocolVersion: 5, clientId: 'cn-dev', ca, cert: readFileSync(f('device.crt')), key: readFileSync(f('device.key')), username: 'someone-else' });
  // devices/%u/# allows the CN's own tree; another device's tree is denied.
  const [granted] = await dev.subscribeAsync('devices/device-1/#', { qos: 1 });
  assert.equal(granted.qos, 1);
  await assert.rejects(dev.subscribeAsync('devices/device-2/#', { qos: 1 }), (err: Error & { packet?: { granted?: number[] } }) => {
    assert.deepEqual(err.packet?.granted, [0x87]);
    return true;
  });
  const other = await connect(tlsUrl(mutual), { protocolVersion: 5, clientId: 'cn-other', ca, cert: readFileSync(f('other.crt')), key: readFileSync(f('other.key')) });
  const [g2] = await other.subscribeAsync('devices/device-2/#', { qos: 1 });
  assert.equal(g2.qos, 1);
  const w = nextMessages(dev, 1);
  await dev.publishAsync('devices/device-1/state', 'mine', { qos: 1 });
  // device-1 may not publish into device-2's tree: nothing reaches device-2.
  await assert.rejects(dev.publishAsync('devices/device-2/state', 'not mine', { qos: 1 }), /Not authorized/);
  assert.equal((await w)[0].payload, 'mine');
  // The refusal was answered (PUBACK 0x87): a marker device-2 publishes in its own tree now comes
  // after anything the refused message could have produced.
  const next = nextMessages(other, 1);
  await other.publishAsync('devices/device-2/marker', 'marker', { qos: 1 });
  assert.equal((await next)[0].topic, 'devices/device-2/marker');
  await end(dev, other);
});

test('with rejectUnauthorized, a TLS client without a certificate is refused', async () => {
  await assert.rejects(connect(tlsUrl(mutual), { protocolVersion: 5, clientId: 'cn-none', ca }));
});

test('with rejectUnauthorized, a client certificate from another CA is refused', async () => {
  // The server certificate is signed by the CA too, but a self-signed client certificate is not.
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('self.key'), '-out', f('self.crt'), '-days', '2', '-subj', '/CN=device-1');
  await assert.rejects(connect(tlsUrl(mutual), { protocolVersion: 5, clientId: 'cn-self', ca, cert: readFileSync(f('self.crt')), key: readFileSync(f('self.key')) }));
});

test('reloadTls: new connections get the new certificate on every worker, open connections stay up', async () => {
  const old = await connect(tlsUrl(plain), { protocolVersion: 5, clientId: 'reload-old', ca });
  assert.equal(peerCN(old), 'spindle-server-1');
  await old.subscribeAsync('reload/t', { qos: 1 });
  copyFileSync(f('server2.crt'), f('live.crt'));
  copyFileSync(f('server2.key'), f('live.key'));
  plain.supervisor.reloadTls();
  // Several connections: the kernel spreads them over both workers; each must serve the new one.
  // reloadTls is a message to each worker: connect until every one serves the new certificate.
  let attempt = 0;
  let cns: unknown[] = [];
  const fresh = await waitFor(async () => {
    attempt++;
    const cs = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => connect(tlsUrl(plain), { protocolVersion: 5, clientId: `reload-new-${attempt}-${i}`, ca })));
    cns = cs.map(peerCN);
    if (cns.every((cn) => cn === 'spindle-server-2')) return cs;
    await end(...cs);
    return null;
  }, { interval: 100, message: 'every worker to serve the new certificate' }).catch((err: Error) => assert.fail(`${err.message}; last: ${cns}`));
  // The old connection is still up and still gets messages.
  assert.ok(old.connected);
  const w = nextMessages(old, 1);
  await fresh[0].publishAsync('reload/t', 'after reload', { qos: 1 });
  assert.equal((await w)[0].payload, 'after reload');
  assert.equal(peerCN(old), 'spindle-server-1');
  await end(old, ...fresh);
});
