// MQTT bridges over TLS (a test CA, a client certificate the remote requires) and WebSocket, with
// credentials, against a real Mosquitto that refuses anonymous clients; wrong credentials show in
// the runtime as the last error while the bridge keeps trying.
// needs: broker, mosquitto
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { startMosquitto, type Mosquitto } from '../helpers/mosquitto.ts';
import { waitFor } from '../helpers/wait.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-bridge-tls-'));
const f = (name: string) => path.join(dir, name);
const USER = { username: 'bridge', password: 'bridge-password' };

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function issue(name: string, cn: string, server: boolean): void {
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`);
  writeFileSync(f(`${name}.ext`), server ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n');
  openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), '-extfile', f(`${name}.ext`));
}

let remote: Mosquitto;
let tlsPort: number;
let wsPort: number;
before(async () => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Bridge Test CA');
  issue('server', 'mosquitto', true);
  issue('client', 'spindle-bridge', false);
  execFileSync('mosquitto_passwd', ['-b', '-c', f('passwd'), USER.username, USER.password], { stdio: 'pipe' });
  // Everything under r/ (the bridges' remote prefix); nothing else.
  writeFileSync(f('acl'), `user ${USER.username}\ntopic readwrite r/#\n`);
  remote = await startMosquitto({
    allowAnonymous: false,
    extraPorts: 2,
    extra: ([tls, ws]) => [
      `password_file ${f('passwd')}`,
      `acl_file ${f('acl')}`,
      `listener ${tls} 127.0.0.1`,
      `cafile ${f('ca.crt')}`,
      `certfile ${f('server.crt')}`,
      `keyfile ${f('server.key')}`,
      'require_certificate true',
      `listener ${ws} 127.0.0.1`,
      'protocol websockets',
    ],
  });
  [tlsPort, wsPort] = remote.extraPorts;
});
after(async () => {
  await remote?.stop();
});

async function runtime(b: AdminBroker, name: string): Promise<any> {
  return (await b.api('POST', '/bridge/runtime', { body: { name } })).json.data[0];
}

test('over TLS with a client certificate and credentials, and over WebSocket: messages both ways', async () => {
  const tls = { ca: f('ca.crt'), cert: f('client.crt'), key: f('client.key') };
  const b = await startAdminBroker({
    bridges: [
      { name: 'tls', url: `mqtts://127.0.0.1:${tlsPort}`, protocolVersion: 5, ...USER, tls, reconnectPeriod: 200, forwards: [{ filter: 'tls/#', remotePrefix: 'r/' }, { filter: 'denied/#' }], subscriptions: [{ filter: 'tlsdown/#', remotePrefix: 'r/' }] },
      { name: 'ws', url: `ws://127.0.0.1:${wsPort}/mqtt`, ...USER, reconnectPeriod: 200, forwards: [{ filter: 'ws/#', remotePrefix: 'r/' }] },
    ],
  });
  const remoteClient = await connect(remote.url, { ...USER, clientId: 'tls-remote' });
  const localSub = await connect(b.url);
  const localPub = await connect(b.url);
  try {
    for (const name of ['tls', 'ws']) {
      await waitFor(async () => {
        const r = await runtime(b, name);
        return r.state === 'connected' && r.subscribed;
      }, { message: `bridge ${name} connected` });
    }
    await remoteClient.subscribeAsync('r/#', { qos: 1 });
    await localSub.subscribeAsync('tlsdown/#', { qos: 1 });
    const out = nextMessages(remoteClient, 2);
    await localPub.publishAsync('tls/a', 'over tls', { qos: 1 });
    await localPub.publishAsync('ws/a', 'over ws', { qos: 1 });
    assert.deepEqual((await out).map((m) => [m.topic, m.payload]).sort(), [['r/tls/a', 'over tls'], ['r/ws/a', 'over ws']]);
    const inbound = nextMessages(localSub, 1);
    await remoteClient.publishAsync('r/tlsdown/x', 'back over tls', { qos: 1 });
    assert.deepEqual((await inbound).map((m) => [m.topic, m.payload]), [['tlsdown/x', 'back over tls']]);

    // The remote's ACL refuses a topic (MQTT 5 PUBACK 0x87): dropped and counted, not retried,
    // and what follows still goes.
    const after = nextMessages(remoteClient, 1);
    await localPub.publishAsync('denied/x', 'refused', { qos: 1 });
    await localPub.publishAsync('tls/b', 'after the refusal', { qos: 1 });
    assert.deepEqual((await after).map((m) => m.topic), ['r/tls/b']);
    const rt = await waitFor(async () => {
      const r = await runtime(b, 'tls');
      return r.dropped.refused === 1 && r.queued === 0 && r;
    }, { message: 'the refusal counted, nothing left queued' });
    assert.match(rt.lastError, /denied\/x.*not authori[sz]ed/i);
    assert.equal(rt.messagesOut, 2); // tls/a and tls/b (ws/a went over the other bridge)
  } finally {
    await end(remoteClient, localSub, localPub);
    await b.stop();
  }
});

test('wrong credentials: the bridge keeps trying, the refusal is its last error', async () => {
  const b = await startAdminBroker();
  try {
    const add = await b.api('POST', '/bridge/add', { body: { name: 'badpw', url: remote.url, username: USER.username, password: 'wrong', reconnectPeriod: 200, forwards: [{ filter: 'x/#' }] } });
    assert.equal(add.status, 200, add.text);
    const r = await waitFor(async () => {
      const rt = await runtime(b, 'badpw');
      return rt.lastError !== null && rt;
    }, { message: 'the refusal reported' });
    assert.equal(r.state, 'connecting');
    assert.match(r.lastError, /not authori[sz]ed|bad user ?name or password/i);
    const metrics = (await b.api('GET', '/prometheus')).text;
    assert.match(metrics, /spindle_bridge_connected\{bridge="badpw"\} 0/);
  } finally {
    await b.stop();
  }
});
