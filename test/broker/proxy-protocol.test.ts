// PROXY protocol behind a real HAProxy, with both I/O paths (mqtt.io native and node): v1
// (send-proxy) and v2 (send-proxy-v2) in front of the TCP listener, the TLS listener (HAProxy in
// TCP mode passes TLS through: the header comes before the handshake) and the WebSocket one (v2,
// read by uWebSockets.js); HAProxy terminating TLS and sending send-proxy-v2-ssl-cn to a plain TCP
// endpoint, the CN reaching authentication (as the username, and as a policy's
// ${cert_common_name} with ${sni}). Clients (mqtt.js, mosquitto_sub) connect to HAProxy from
// 127.0.0.2 (and .4, .6, .7) while HAProxy connects to the broker from 127.0.0.3: the broker must
// see the client's address in the admin API, a ban, the authentication lockout and an ACL policy
// reading ${peerhost}. Raw sockets bring what HAProxy never sends: a missing, malformed or
// untrusted header, each closed and counted (spindle_proxy_protocol_errors_total).
// needs: broker, haproxy
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import mqttPacket from 'mqtt-packet';

import { hashPassword } from '../../src/auth/password.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { ownChild } from '../helpers/children.ts';
import { startHaproxy, type Haproxy } from '../helpers/haproxy.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort } from '../helpers/ports.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-proxy-'));
const f = (name: string) => path.join(dir, name);

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function issue(name: string, cn: string, server: boolean): void {
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`);
  writeFileSync(f(`${name}.ext`), server ? 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:broker.example\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n');
  openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), '-extfile', f(`${name}.ext`));
}

let ca: Buffer;

before(() => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle Proxy Test CA');
  issue('server', 'spindle-server', true);
  issue('device', 'device-1', false);
  // HAProxy wants the certificate and its key in one file.
  writeFileSync(f('haproxy.pem'), readFileSync(f('server.crt'), 'utf8') + readFileSync(f('server.key'), 'utf8'));
  ca = readFileSync(f('ca.crt'));
});

/** mqtt.js over a TCP connection from `from` (mqtt.js' own TCP stream cannot bind its address). */
function connectFrom(port: number, from: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = new mqtt.MqttClient(() => net.connect({ port, host: '127.0.0.1', localAddress: from }), { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5000, ...options });
  return new Promise((resolve, reject) => {
    client.once('connect', () => resolve(client));
    client.once('error', (err) => {
      client.end(true);
      reject(err);
    });
    client.once('close', () => reject(new Error('closed before CONNACK')));
  });
}

/** The CONNACK reason code a client from `from` gets through `port` (0: connected, then ended). */
async function connackFrom(port: number, from: string, options: IClientOptions = {}): Promise<number> {
  try {
    await end(await connectFrom(port, from, options));
    return 0;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    throw err;
  }
}

/** A raw TCP connection from `from` to the broker: sends `bytes`, answers what came back before
 * the broker closed it (or a timeout). */
function rawExchange(port: number, from: string, bytes: Buffer, keepMs = 3000): Promise<{ closed: boolean; received: Buffer }> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ closed: false, received: Buffer.concat(chunks) });
    }, keepMs);
    s.on('connect', () => s.write(bytes));
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, received: Buffer.concat(chunks) });
    });
  });
}

const CONNECT = mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'raw-proxy', keepalive: 30 } as mqttPacket.IConnectPacket);

function v2Header(src: string, sport: number): Buffer {
  const h = Buffer.alloc(28);
  Buffer.from('0d0a0d0a000d0a515549540a', 'hex').copy(h, 0);
  h[12] = 0x21; // v2, PROXY
  h[13] = 0x11; // AF_INET, STREAM
  h.writeUInt16BE(12, 14);
  Buffer.from(src.split('.').map(Number)).copy(h, 16);
  Buffer.from([127, 0, 0, 1]).copy(h, 20);
  h.writeUInt16BE(sport, 24);
  h.writeUInt16BE(1883, 26);
  return h;
}

interface ConnectionItem {
  clientId: string;
  username: string | null;
  ip: string;
  port: number;
  proxyAddress: string | null;
  transport: string;
}

async function connection(b: AdminBroker, clientId: string): Promise<ConnectionItem> {
  return waitFor(async () => {
    const r = await b.api('POST', '/mqtt/connection', { body: { clientId, page: 1, size: 10 } });
    return (r.json.data as ConnectionItem[]).find((c) => c.clientId === clientId);
  }, { message: `${clientId} in the connection list` });
}

async function runtime(b: AdminBroker, clientId: string): Promise<Record<string, any>> {
  const r = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId } });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

async function proxyErrors(b: AdminBroker, endpoint: string, reason: string): Promise<number> {
  const r = await b.api('GET', '/prometheus');
  const m = new RegExp(`spindle_proxy_protocol_errors_total\\{endpoint="${endpoint}",reason="${reason}"\\} (\\d+)`).exec(r.text);
  return m ? Number(m[1]) : 0;
}

/** The policy service: answers the authentication and ACL questions of the HTTP policies, and
 * keeps what it was asked. */
function policyService(): Promise<{ url: string; asked: Record<string, string>[]; close(): Promise<void> }> {
  const asked: Record<string, string>[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const q = JSON.parse(body || '{}') as Record<string, string>;
      asked.push({ path: req.url ?? '', ...q });
      let result = 'ignore';
      // Authentication: a client whose balancer verified a certificate of CN device-1.
      if (req.url === '/auth' && q.username === 'dev-user') result = q.cn === 'device-1' ? 'allow' : 'deny';
      // ACL by address: addr/# only from 127.0.0.2.
      if (req.url === '/acl' && q.topic?.startsWith('addr/')) result = q.peerhost === '127.0.0.2' ? 'allow' : 'deny';
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ result }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    asked,
    close: () => new Promise<void>((r) => server.close(() => r())),
  })));
}

/** mosquitto_sub (Mosquitto's client) from `from`: the first message on `topic`. */
function mosquittoSub(port: number, from: string, clientId: string, topic: string): { done: Promise<string> } {
  const child = ownChild(spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '-A', from, '-i', clientId, '-t', topic, '-C', '1', '-W', '20', '-V', 'mqttv5'], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { done: once(child, 'exit').then(([code]) => (code === 0 ? out.trim() : Promise.reject(new Error(`mosquitto_sub exited ${code}: ${out}`)))) };
}

for (const io of ['native', 'node'] as const) {
  describe(`mqtt.io ${io}`, () => {
    let b: AdminBroker;
    let hp: Haproxy;
    let cnPort: number;
    let policyPort: number;
    let optionalPort: number;

    before(async () => {
      b = await startAdminBroker({
        mqtt: {
          io,
          tcp: { proxyProtocol: 'required', proxyProtocolTrusted: ['127.0.0.3'] },
          tls: { port: 0, cert: f('server.crt'), key: f('server.key'), proxyProtocol: 'required', proxyProtocolTrusted: ['127.0.0.3/32'] },
          ws: { proxyProtocol: 'required', proxyProtocolTrusted: ['127.0.0.0/30'] },
        },
        auth: {
          allowAnonymous: true,
          users: [{ username: 'alice', password: await hashPassword('alice-pw', 'bcrypt', 4) }],
          acl: [
            { permission: 'allow', action: 'pubsub', topic: 'devices/%u/#' },
            { permission: 'deny', action: 'pubsub', topic: 'devices/#' },
          ],
        },
        limits: { authMaxFailures: 2, authFailureWindow: 60, authLockout: 60 },
      });
      [cnPort, policyPort, optionalPort] = [await freePort(), await freePort(), await freePort()];
      const add = async (body: Record<string, unknown>) => {
        const r = await b.api('POST', '/api/endpoints/add', { body });
        assert.equal(r.status, 200, r.text);
      };
      await add({ id: 'cn', port: cnPort, proxyProtocol: 'required', proxyProtocolTrusted: ['127.0.0.3'], proxyProtocolCnAsUsername: true });
      await add({ id: 'policy', port: policyPort, proxyProtocol: 'required', proxyProtocolTrusted: ['127.0.0.3'] });
      await add({ id: 'optional', port: optionalPort, proxyProtocol: 'optional', proxyProtocolTrusted: ['127.0.0.3'] });
      const p = b.ports;
      const terminate = `ssl crt ${f('haproxy.pem')} ca-file ${f('ca.crt')} verify optional`;
      hp = await startHaproxy({
        v1: { server: `127.0.0.1:${p.tcp} send-proxy` },
        v2: { server: `127.0.0.1:${p.tcp} send-proxy-v2` },
        tlsV2: { server: `127.0.0.1:${p.tls} send-proxy-v2` },
        tlsV1: { server: `127.0.0.1:${p.tls} send-proxy` },
        ws: { server: `127.0.0.1:${p.ws} send-proxy-v2` },
        cn: { bind: terminate, server: `127.0.0.1:${cnPort} send-proxy-v2-ssl-cn proxy-v2-options authority` },
        policy: { bind: terminate, server: `127.0.0.1:${policyPort} send-proxy-v2-ssl-cn proxy-v2-options authority` },
        // A balancer the broker does not trust.
        stranger: { server: `127.0.0.1:${p.tcp} send-proxy-v2`, source: '127.0.0.5' },
      });
    });
    after(async () => {
      await hp?.stop();
      await b?.stop();
    });

    test('v1 and v2 in front of the TCP listener: the broker sees the client, the admin API both addresses', async () => {
      const sub = await connectFrom(hp.ports.v1, '127.0.0.2', { clientId: `v1-${io}` });
      await sub.subscribeAsync('pp/tcp', { qos: 1 });
      const c = await connection(b, `v1-${io}`);
      assert.equal(c.ip, '127.0.0.2');
      assert.equal(c.proxyAddress, '127.0.0.3');
      assert.notEqual(c.port, 0);
      const rt = await runtime(b, `v1-${io}`);
      assert.equal(rt.ip, '127.0.0.2');
      assert.deepEqual({ address: rt.proxy.address, version: rt.proxy.version }, { address: '127.0.0.3', version: 1 });
      // Mosquitto's client through the v2 frontend, from another address.
      const mosq = mosquittoSub(hp.ports.v2, '127.0.0.4', `mosq-${io}`, 'pp/tcp');
      const m = await connection(b, `mosq-${io}`);
      assert.deepEqual([m.ip, m.proxyAddress], ['127.0.0.4', '127.0.0.3']);
      assert.equal((await runtime(b, `mosq-${io}`)).proxy.version, 2);
      const got = nextMessages(sub, 1);
      const pub = await connectFrom(hp.ports.v2, '127.0.0.4', { clientId: `v2-pub-${io}` });
      await pub.publishAsync('pp/tcp', 'through haproxy', { qos: 1 });
      assert.equal((await got)[0].payload, 'through haproxy');
      assert.equal(await mosq.done, 'through haproxy');
      await end(sub, pub);
    });

    for (const [frontend, version] of [['tlsV2', 2], ['tlsV1', 1]] as const) {
      test(`v${version} in front of the TLS listener: the header before the handshake`, async () => {
        const id = `tls-${version}-${io}`;
        const client = await connect(`mqtts://127.0.0.1:${hp.ports[frontend]}`, { protocolVersion: 5, clientId: id, ca, servername: 'localhost', localAddress: '127.0.0.2' } as IClientOptions);
        const c = await connection(b, id);
        assert.deepEqual([c.ip, c.proxyAddress, c.transport], ['127.0.0.2', '127.0.0.3', 'tls']);
        assert.equal((await runtime(b, id)).proxy.version, version);
        await client.publishAsync('pp/tls', 'ok', { qos: 1 });
        await end(client);
      });
    }

    test('HAProxy terminates TLS: the CN of the certificate it verified is the username (ACL on %u)', async () => {
      const id = `cn-${io}`;
      const dev = await connect(`mqtts://127.0.0.1:${hp.ports.cn}`, { protocolVersion: 5, clientId: id, ca, servername: 'broker.example', cert: readFileSync(f('device.crt')), key: readFileSync(f('device.key')), username: 'someone-else', localAddress: '127.0.0.2' } as IClientOptions);
      const rt = await runtime(b, id);
      assert.equal(rt.username, 'device-1');
      assert.equal(rt.ip, '127.0.0.2');
      assert.deepEqual(rt.proxy, { address: '127.0.0.3', port: rt.proxy.port, version: 2, serverName: 'broker.example', ssl: true, certificateCN: 'device-1', certificateVerified: true });
      const [granted] = await dev.subscribeAsync('devices/device-1/#', { qos: 1 });
      assert.equal(granted.qos, 1);
      await assert.rejects(dev.subscribeAsync('devices/device-2/#', { qos: 1 }), (err: Error & { packet?: { granted?: number[] } }) => {
        assert.deepEqual(err.packet?.granted, [0x87]);
        return true;
      });
      // Without a certificate the header carries no CN: the client is who it says (anonymous here).
      const anon = await connect(`mqtts://127.0.0.1:${hp.ports.cn}`, { protocolVersion: 5, clientId: `${id}-anon`, ca, servername: 'broker.example', localAddress: '127.0.0.2' } as IClientOptions);
      const art = await runtime(b, `${id}-anon`);
      assert.equal(art.username, null);
      assert.deepEqual([art.proxy.ssl, art.proxy.certificateCN, art.proxy.certificateVerified], [true, null, false]);
      await end(dev, anon);
    });

    test('policies see the balancer-verified CN and SNI (${cert_common_name}, ${sni}) and the client address (${peerhost})', async () => {
      const svc = await policyService();
      const ids: string[] = [];
      try {
        for (const [kind, url, body] of [
          ['auth', `${svc.url}/auth`, { username: '${username}', password: '${password}', peerhost: '${peerhost}', sni: '${sni}', cn: '${cert_common_name}' }],
          ['acl', `${svc.url}/acl`, { peerhost: '${peerhost}', topic: '${topic}', action: '${action}' }],
        ] as const) {
          const r = await b.api('POST', `/${kind}/add`, { body: { name: `pp-${kind}-${io}`, type: 'http', config: { url, body } } });
          assert.equal(r.status, 200, r.text);
        }
        for (const kind of ['auth', 'acl']) {
          const r = await b.api('POST', `/${kind}/query`, { body: { page: 1, size: 100 } });
          ids.push(...(r.json.data as { id: string; name: string }[]).filter((p) => p.name.startsWith('pp-')).map((p) => `${kind}:${p.id}`));
        }
        const options = { protocolVersion: 5, ca, servername: 'broker.example', username: 'dev-user', password: 'any', localAddress: '127.0.0.2' } as const;
        const dev = await connect(`mqtts://127.0.0.1:${hp.ports.policy}`, { ...options, clientId: `pol-${io}`, cert: readFileSync(f('device.crt')), key: readFileSync(f('device.key')) } as IClientOptions);
        const q = svc.asked.find((a) => a.path === '/auth' && a.username === 'dev-user')!;
        assert.deepEqual([q.cn, q.sni, q.peerhost], ['device-1', 'broker.example', '127.0.0.2']);
        // No certificate, no CN: the policy denies (0x86).
        await assert.rejects(connect(`mqtts://127.0.0.1:${hp.ports.policy}`, { ...options, clientId: `pol-none-${io}` } as IClientOptions), (err: { code?: number }) => err.code === 0x86);
        // The ACL policy by address: addr/# only from 127.0.0.2.
        await dev.publishAsync('addr/x', 'from .2', { qos: 1 });
        const other = await connectFrom(hp.ports.v2, '127.0.0.4', { clientId: `pol-other-${io}` });
        await assert.rejects(other.publishAsync('addr/x', 'from .4', { qos: 1 }), /Not authorized/);
        assert.ok(svc.asked.some((a) => a.path === '/acl' && a.peerhost === '127.0.0.4' && a.topic === 'addr/x'));
        await end(dev, other);
      } finally {
        for (const id of ids) {
          const [kind, policy] = id.split(':');
          await b.api('POST', `/${kind}/delete`, { body: { id: policy } });
        }
        await svc.close();
      }
    });

    test('a ban of the client address refuses it through HAProxy; another address passes', async () => {
      const r = await b.api('POST', '/api/banned', { body: { as: 'peerhost_net', who: '127.0.0.2/32', reason: 'proxy test' } });
      assert.equal(r.status, 200, r.text);
      try {
        assert.equal(await connackFrom(hp.ports.v1, '127.0.0.2', { clientId: `banned-${io}` }), 0x8a);
        assert.equal(await connackFrom(hp.ports.v2, '127.0.0.4', { clientId: `free-${io}` }), 0);
      } finally {
        await b.api('DELETE', `/api/banned/peerhost_net/${encodeURIComponent('127.0.0.2/32')}`, { headers: { 'content-type': 'application/json' } });
      }
    });

    test('the authentication lockout counts the client address, not the balancer', async () => {
      const from6 = (password: string) => connackFrom(hp.ports.v2, '127.0.0.6', { clientId: `lock-${io}`, username: 'alice', password });
      assert.equal(await from6('wrong'), 0x86);
      assert.equal(await from6('wrong'), 0x86);
      // Locked out: even the right password.
      assert.equal(await from6('alice-pw'), 0x8a);
      // Another client behind the same balancer is not.
      assert.equal(await connackFrom(hp.ports.v2, '127.0.0.7', { clientId: `lock-other-${io}`, username: 'alice', password: 'alice-pw' }), 0);
    });

    test('WebSocket: a PROXY v2 header read by uWebSockets.js; none, or from a stranger, refused with 400', async () => {
      const id = `ws-${io}`;
      const client = await connect(`ws://127.0.0.1:${hp.ports.ws}/mqtt`, { protocolVersion: 5, clientId: id, wsOptions: { localAddress: '127.0.0.2' } } as IClientOptions);
      const c = await connection(b, id);
      assert.deepEqual([c.ip, c.proxyAddress, c.transport], ['127.0.0.2', '127.0.0.3', 'ws']);
      await end(client);
      const upgrade = (from: string) => new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: b.ports.ws, path: '/mqtt', localAddress: from, headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'mqtt' } });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve(`${res.statusCode} ${text}`));
        });
        req.on('upgrade', () => reject(new Error('upgraded')));
        req.on('error', reject);
        req.end();
      });
      const missing = await proxyErrors(b, 'ws', 'missing');
      // 127.0.0.1 is a trusted balancer (127.0.0.0/30) that sent no header.
      assert.match(await upgrade('127.0.0.1'), /^400 proxyProtocol: a PROXY protocol v2 header is required/);
      assert.equal(await proxyErrors(b, 'ws', 'missing'), missing + 1);
      assert.match(await upgrade('127.0.0.5'), /^400 proxyProtocol: PROXY protocol header from a source outside proxyProtocolTrusted/);
      assert.ok(await proxyErrors(b, 'ws', 'untrusted') >= 1);
    });

    test('raw sockets: a header missing, malformed, too large or from a stranger closes the connection and is counted', async () => {
      const port = b.ports.tcp!;
      const before = {
        missing: await proxyErrors(b, 'tcp', 'missing'),
        malformed: await proxyErrors(b, 'tcp', 'malformed'),
        too_large: await proxyErrors(b, 'tcp', 'too_large'),
        untrusted: await proxyErrors(b, 'tcp', 'untrusted'),
        closed: await proxyErrors(b, 'tcp', 'closed'),
      };
      const cases: [string, string, Buffer, keyof typeof before][] = [
        ['a CONNECT without a header, from the balancer', '127.0.0.3', CONNECT, 'missing'],
        ['a v1 line with a bad address', '127.0.0.3', Buffer.concat([Buffer.from('PROXY TCP4 10.1.2 10.0.0.1 1 2\r\n'), CONNECT]), 'malformed'],
        ['a v2 header with a bad version', '127.0.0.3', Buffer.concat([Buffer.from('0d0a0d0a000d0a515549540a1111000c', 'hex'), Buffer.alloc(12), CONNECT]), 'malformed'],
        ['a v2 header over 4096 bytes', '127.0.0.3', Buffer.from('0d0a0d0a000d0a515549540a2111ffff', 'hex'), 'too_large'],
        ['a good header from a stranger', '127.0.0.5', Buffer.concat([v2Header('10.1.2.3', 4444), CONNECT]), 'untrusted'],
        ['a stranger without a header', '127.0.0.1', CONNECT, 'untrusted'],
      ];
      const expected = { ...before };
      for (const [what, from, bytes, reason] of cases) {
        const r = await rawExchange(port, from, bytes);
        assert.ok(r.closed, `${what}: closed`);
        assert.equal(r.received.length, 0, `${what}: no CONNACK`);
        expected[reason]++;
      }
      // Half a header, then the peer closes.
      await rawExchange(port, '127.0.0.3', Buffer.from('PROXY TCP4 10.'), 200);
      expected.closed++;
      await waitFor(async () => {
        for (const reason of Object.keys(expected) as (keyof typeof before)[]) if ((await proxyErrors(b, 'tcp', reason)) !== expected[reason]) return false;
        return true;
      }, { message: `proxy errors ${JSON.stringify(expected)}` });
      const m = await b.api('GET', '/prometheus');
      assert.match(m.text, /svc_endpoint_connection_errors_total\{[^}]*endpoint="tcp"[^}]*error_code="proxy_missing"[^}]*\} [1-9]/);
      // A good header from the balancer: the CONNACK comes, and the client is the header's.
      const good = rawExchange(port, '127.0.0.3', Buffer.concat([v2Header('10.1.2.3', 4444), CONNECT]), 2000);
      const c = await connection(b, 'raw-proxy');
      assert.deepEqual([c.ip, c.port, c.proxyAddress], ['10.1.2.3', 4444, '127.0.0.3']);
      assert.deepEqual([...(await good).received.subarray(0, 4)], [0x20, 0x02, 0x00, 0x00], 'CONNACK accepted');
    });

    test("'optional': direct clients without a header, headers only from the trusted balancer", async () => {
      const direct = await connectFrom(optionalPort, '127.0.0.2', { clientId: `direct-${io}` });
      const c = await connection(b, `direct-${io}`);
      assert.deepEqual([c.ip, c.proxyAddress], ['127.0.0.2', null]);
      await end(direct);
      const untrusted = await proxyErrors(b, 'optional', 'untrusted');
      const r = await rawExchange(optionalPort, '127.0.0.2', Buffer.concat([v2Header('10.9.9.9', 1), CONNECT]));
      assert.ok(r.closed && r.received.length === 0, 'a header from a direct client is refused');
      await waitFor(async () => (await proxyErrors(b, 'optional', 'untrusted')) === untrusted + 1, { message: 'counted as untrusted' });
      const ok = await rawExchange(optionalPort, '127.0.0.3', Buffer.concat([v2Header('10.9.9.9', 1), CONNECT]), 500);
      assert.deepEqual([...ok.received.subarray(0, 4)], [0x20, 0x02, 0x00, 0x00]);
    });

    test('a balancer outside proxyProtocolTrusted is refused', async () => {
      const untrusted = await proxyErrors(b, 'tcp', 'untrusted');
      await assert.rejects(connectFrom(hp.ports.stranger, '127.0.0.2', { clientId: `stranger-${io}` }));
      await waitFor(async () => (await proxyErrors(b, 'tcp', 'untrusted')) > untrusted, { message: 'counted as untrusted' });
    });
  });
}

test('the endpoint API refuses PROXY protocol settings that cannot work, naming the field', async () => {
  const b = await startAdminBroker({});
  try {
    const port = await freePort();
    const cases: [Record<string, unknown>, string][] = [
      [{ port, proxyProtocol: 'required' }, 'proxyProtocolTrusted'],
      [{ port, proxyProtocol: 'optional', proxyProtocolTrusted: ['10.0.0.0/8', '10.0.0.0/33'] }, 'proxyProtocolTrusted[1]'],
      [{ port, proxyProtocol: 'maybe', proxyProtocolTrusted: ['10.0.0.0/8'] }, 'proxyProtocol'],
      [{ port, useWebsocket: true, sslConfig: { cert: f('server.crt'), key: f('server.key') }, proxyProtocol: 'required', proxyProtocolTrusted: ['10.0.0.0/8'] }, 'proxyProtocol'],
      [{ port, useWebsocket: true, proxyProtocol: 'required', proxyProtocolTrusted: ['10.0.0.0/8'], proxyProtocolCnAsUsername: true }, 'proxyProtocolCnAsUsername'],
      [{ port, proxyProtocolCnAsUsername: true }, 'proxyProtocolCnAsUsername'],
    ];
    for (const [body, field] of cases) {
      const r = await b.api('POST', '/api/endpoints/add', { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
    }
    // On, then changed in place, then off ('off' is kept as none).
    let r = await b.api('POST', '/api/endpoints/add', { body: { port, proxyProtocol: 'required', proxyProtocolTrusted: ['10.0.0.0/8'] } });
    assert.equal(r.status, 200, r.text);
    r = await b.api('POST', '/api/endpoints/update', { body: { port, proxyProtocol: 'optional' } });
    assert.deepEqual([r.json.data?.proxyProtocol ?? r.json.proxyProtocol, r.json.data?.proxyProtocolTrusted ?? r.json.proxyProtocolTrusted], ['optional', ['10.0.0.0/8']], r.text);
    r = await b.api('POST', '/api/endpoints/update', { body: { port, proxyProtocol: 'off' } });
    assert.equal(r.status, 200, r.text);
    assert.equal((r.json.data ?? r.json).proxyProtocol, undefined, r.text);
  } finally {
    await b.stop();
  }
});
