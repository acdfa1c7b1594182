// Certificate revocation on the MQTT TLS listeners, against OpenSSL's OCSP responder (started by
// this file on a free port) and CRLs made with `openssl ca -gencrl`, on both TLS transports (the
// native driver's rustls and Node's tls): a CRL refusing a revoked client certificate in the
// handshake (mqtt.js and mosquitto_pub) and read again on SIGHUP; the server certificate's OCSP
// response stapled, as `openssl s_client -status` shows it; the OCSP check of client certificates
// at CONNECT (0x87 for a revoked one), with its responder down under failMode closed (0x88) and
// open (admitted), and its cache; the counts in /prometheus.
// needs: broker, ocsp-responder
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, copyFileSync } from 'node:fs';

import type { MqttClient, IClientOptions } from 'mqtt';

import { connect, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';
import { TestPki, type Issued } from '../helpers/ocsp-pki.ts';

let pki: TestPki;
let server: Issued;
let good: Issued;
let revoked: Issued;
let later: Issued;
let fresh: Issued;

before(async () => {
  pki = await TestPki.create();
  server = pki.issue('server', 'spindle-revocation', { server: true });
  good = pki.issue('good', 'device-good');
  revoked = pki.issue('revoked', 'device-revoked');
  later = pki.issue('later', 'device-later');
  fresh = pki.issue('fresh', 'device-fresh');
  pki.revoke(revoked);
  pki.crl('ca.crl', 'ca.crl.der');
  await pki.startResponder();
});
after(async () => {
  await pki?.stopResponder();
});

const tlsOf = (b: AdminBroker) => `mqtts://127.0.0.1:${b.ports.tls}`;

function clientTls(device: Issued): IClientOptions {
  return { ca: readFileSync(pki.ca), cert: readFileSync(device.cert), key: readFileSync(device.key), rejectUnauthorized: true };
}

/** The CONNACK reason code of a refused mqtt.js CONNECT (undefined when it connected). */
async function connackCode(url: string, options: IClientOptions): Promise<number | undefined> {
  try {
    const c = await connect(url, { reconnectPeriod: 0, ...options });
    await end(c);
    return undefined;
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (typeof code !== 'number') throw err;
    return code;
  }
}

/** Connecting fails below MQTT (the TLS handshake refused the certificate). */
async function refusedInHandshake(url: string, options: IClientOptions): Promise<void> {
  let client: MqttClient | undefined;
  await assert.rejects(async () => {
    client = await connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
  }, (err: Error & { code?: unknown }) => {
    assert.notEqual(typeof err.code, 'number', `refused with a CONNACK (${err.code}), not in the handshake`);
    return true;
  });
  if (client) await end(client);
}

function run(cmd: string, args: string[], input = ''): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout + stderr });
    });
    child.stdin?.end(input);
  });
}

function mosquittoPub(b: AdminBroker, device: Issued, version: 'mqttv311' | 'mqttv5'): Promise<{ code: number; out: string }> {
  return run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tls), '-V', version, '--cafile', pki.ca, '--cert', device.cert, '--key', device.key,
    '-i', `pub-${device.subject.slice(4)}`, '-t', 'revocation/t', '-m', 'hello', '-q', '1']);
}

async function scrape(b: AdminBroker): Promise<string> {
  const r = await b.api('GET', '/prometheus');
  assert.equal(r.status, 200);
  return r.text;
}

/** The value of a sample of `name` with these labels (in any order; 0 when there is none). */
function sample(text: string, name: string, labels: string): number {
  const wanted = labels.split(',');
  const line = text.split('\n').find((l) => {
    if (!l.startsWith(`${name}{`)) return false;
    const have = l.slice(name.length + 1, l.lastIndexOf('}')).split(',');
    return wanted.every((w) => have.includes(w)) && have.length === wanted.length;
  });
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const baseTls = () => ({ port: 0, cert: server.cert, key: server.key, ca: pki.ca, requestCert: true, rejectUnauthorized: true });

for (const io of ['native', 'node'] as const) {
  test(`mqtt.io ${io}: a CRL refuses a revoked client certificate in the handshake; it is read again on SIGHUP; the server's OCSP response is stapled`, async () => {
    // The broker reads a copy, replaced below.
    copyFileSync(pki.f('ca.crl'), pki.f(`live-${io}.crl`));
    const b = await startAdminBroker({ mqtt: { io, tls: { ...baseTls(), crl: pki.f(`live-${io}.crl`), ocspStapling: { enabled: true } } } });
    try {
      // Not revoked: in, and a message goes through (mqtt.js).
      const ok = await connect(tlsOf(b), { protocolVersion: 5, clientId: `crl-good-${io}`, ...clientTls(good) });
      assert.ok(ok.connected);
      await end(ok);
      // Revoked: the handshake fails (mqtt.js, and mosquitto_pub in both versions).
      await refusedInHandshake(tlsOf(b), { protocolVersion: 5, clientId: `crl-revoked-${io}`, ...clientTls(revoked) });
      for (const v of ['mqttv311', 'mqttv5'] as const) {
        const bad = await mosquittoPub(b, revoked, v);
        assert.notEqual(bad.code, 0, `mosquitto_pub ${v} with a revoked certificate: ${bad.out}`);
        const fine = await mosquittoPub(b, good, v);
        assert.equal(fine.code, 0, `mosquitto_pub ${v} with a good certificate: ${fine.out}`);
      }
      const refusals = await waitFor(async () => {
        const n = sample(await scrape(b), 'spindle_tls_revoked_total', `by="crl",endpoint="tls"`);
        return n >= 3 ? n : null;
      }, { message: 'the three refused handshakes counted' });
      assert.equal(refusals, 3);

      // SIGHUP (reloadTls): `later` revoked in a new CRL is refused by every worker from then on.
      const before = await connect(tlsOf(b), { protocolVersion: 5, clientId: `crl-before-${io}`, ...clientTls(later) });
      pki.revoke(later);
      copyFileSync(pki.crl(`next-${io}.crl`), pki.f(`live-${io}.crl`));
      b.supervisor.reloadTls();
      let attempt = 0;
      await waitFor(async () => {
        // Several at once: the kernel spreads them over both workers.
        const tries = await Promise.allSettled([0, 1, 2, 3].map((i) => connect(tlsOf(b), { protocolVersion: 5, clientId: `crl-after-${io}-${attempt}-${i}`, reconnectPeriod: 0, connectTimeout: 5000, ...clientTls(later) })));
        attempt++;
        const made = tries.filter((t): t is PromiseFulfilledResult<MqttClient> => t.status === 'fulfilled').map((t) => t.value);
        await end(...made);
        return made.length === 0;
      }, { interval: 100, message: 'every worker to refuse the certificate the new CRL revokes' });
      // The connection made before stays up.
      assert.ok(before.connected);
      await end(before);

      // Stapling: `openssl s_client -status` sees the responder's answer for the server certificate.
      const stapled = await waitFor(async () => {
        const r = await run('openssl', ['s_client', '-connect', `127.0.0.1:${b.ports.tls}`, '-status', '-CAfile', pki.ca, '-cert', good.cert, '-key', good.key], 'Q\n');
        return r.out.includes('OCSP Response Status: successful') ? r.out : null;
      }, { interval: 200, message: 'the staple fetched and served' });
      assert.match(stapled, /OCSP Response Status: successful \(0x0\)/);
      assert.match(stapled, /Cert Status: good/);
      assert.match(stapled, /Verify return code: 0 \(ok\)/);
      const staples = await b.api('GET', '/api/tls/ocsp-staples');
      assert.equal(staples.status, 200);
      assert.deepEqual(staples.json.data.map((s: { endpoint: string; state: string; stapled: boolean; certStatus: string; responder: string }) => [s.endpoint, s.state, s.stapled, s.certStatus, s.responder]), [['tls', 'stapled', true, 'good', pki.ocspUrl]]);
      const text = await scrape(b);
      assert.equal(sample(text, 'spindle_ocsp_staple_valid', 'endpoint="tls"'), 1);
      assert.ok(sample(text, 'spindle_ocsp_requests_total', 'kind="staple",result="good"') >= 1);
      assert.ok(sample(text, 'spindle_ocsp_staple_expiry_timestamp_seconds', 'endpoint="tls"') > Date.now() / 1000);
    } finally {
      await b.stop();
    }
  });

  test(`mqtt.io ${io}: the OCSP check of client certificates refuses a revoked one (0x87, 3.1.1: 5); with the responder down, failMode closed refuses (0x88) and open admits`, async () => {
    await pki.startResponder();
    const check = (failMode: 'open' | 'closed', cacheSeconds: number) => ({ mqtt: { io, tls: { ...baseTls(), ocspClientCheck: { enabled: true, failMode, cacheSeconds, timeoutMs: 2000 } } } });
    const closed = await startAdminBroker(check('closed', 0));
    const open = await startAdminBroker(check('open', 0));
    // Each worker keeps a cache of its own: one worker, so that every client meets the same.
    const cached = await startAdminBroker({ ...check('closed', 300), workers: 1 });
    try {
      for (const b of [closed, open, cached]) {
        assert.equal(await connackCode(tlsOf(b), { protocolVersion: 5, clientId: `ocsp-good-${io}`, ...clientTls(good) }), undefined);
        assert.equal(await connackCode(tlsOf(b), { protocolVersion: 5, clientId: `ocsp-revoked-${io}`, ...clientTls(revoked) }), 0x87);
        assert.equal(await connackCode(tlsOf(b), { protocolVersion: 4, clientId: `ocsp-revoked4-${io}`, ...clientTls(revoked) }), 5);
      }
      // mosquitto_pub sees the refusal too.
      const bad = await mosquittoPub(closed, revoked, 'mqttv5');
      assert.notEqual(bad.code, 0);
      assert.match(bad.out, /not authori[sz]ed/i);
      assert.equal((await mosquittoPub(closed, good, 'mqttv311')).code, 0);

      // The responder goes down.
      await pki.stopResponder();
      assert.equal(await connackCode(tlsOf(closed), { protocolVersion: 5, clientId: `ocsp-down-closed-${io}`, ...clientTls(fresh) }), 0x88);
      assert.equal(await connackCode(tlsOf(closed), { protocolVersion: 4, clientId: `ocsp-down-closed4-${io}`, ...clientTls(good) }), 3);
      assert.equal(await connackCode(tlsOf(open), { protocolVersion: 5, clientId: `ocsp-down-open-${io}`, ...clientTls(fresh) }), undefined);
      // With a cache, what was asked before is still known: good in, revoked out.
      assert.equal(await connackCode(tlsOf(cached), { protocolVersion: 5, clientId: `ocsp-cached-good-${io}`, ...clientTls(good) }), undefined);
      assert.equal(await connackCode(tlsOf(cached), { protocolVersion: 5, clientId: `ocsp-cached-revoked-${io}`, ...clientTls(revoked) }), 0x87);

      const closedText = await scrape(closed);
      assert.ok(sample(closedText, 'spindle_tls_revoked_total', 'by="ocsp",endpoint="tls"') >= 3);
      assert.ok(sample(closedText, 'spindle_ocsp_client_checks_total', 'cached="false",endpoint="tls",result="failed_closed"') >= 2);
      assert.ok(sample(closedText, 'spindle_ocsp_requests_total', 'kind="client",result="revoked"') >= 3);
      assert.ok(sample(closedText, 'spindle_ocsp_requests_total', 'kind="client",result="unreachable"') >= 2);
      const openText = await scrape(open);
      assert.ok(sample(openText, 'spindle_ocsp_client_checks_total', 'cached="false",endpoint="tls",result="failed_open"') >= 1);
      const cachedText = await scrape(cached);
      assert.ok(sample(cachedText, 'spindle_ocsp_client_checks_total', 'cached="true",endpoint="tls",result="any"') >= 1);
    } finally {
      await Promise.all([closed.stop(), open.stop(), cached.stop()]);
      await pki.startResponder();
    }
  });
}

test('bad revocation settings are refused naming the field (admin API, and the configuration file at start)', async () => {
  const b = await startAdminBroker();
  try {
    const tls = { cert: server.cert, key: server.key, ca: pki.ca, requestCert: true, rejectUnauthorized: true };
    const add = (fields: Record<string, unknown>) => b.api('POST', '/api/endpoints/add', { body: { port: 65001, ...fields } });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ sslConfig: { ...tls, crl: pki.f('missing.crl') } }, 'sslConfig.crl', /no such file/],
      [{ sslConfig: { ...tls, crl: server.cert } }, 'sslConfig.crl', /no CRL in it/],
      [{ sslConfig: { ...tls, crl: server.key.replace('.key', '.csr') } }, 'sslConfig.crl', /no CRL in it/],
      [{ sslConfig: { ...tls, requestCert: false, crl: pki.f('ca.crl') } }, 'sslConfig.crl', /requestCert/],
      [{ useWebsocket: true, sslConfig: { ...tls, crl: pki.f('ca.crl') } }, 'sslConfig.crl', /uWebSockets\.js/],
      [{ useWebsocket: true, sslConfig: { ...tls, ocspStapling: { enabled: true } } }, 'sslConfig.ocspStapling', /uWebSockets\.js/],
      [{ sslConfig: { ...tls, ocspStapling: { enabled: true, responderUrl: 'ftp://127.0.0.1/' } } }, 'sslConfig.ocspStapling.responderUrl', /http or https/],
      [{ sslConfig: { ...tls, ocspClientCheck: { enabled: true, responderUrl: 'not a url' } } }, 'sslConfig.ocspClientCheck.responderUrl', /not a URL/],
      [{ sslConfig: { ...tls, rejectUnauthorized: false, ocspClientCheck: { enabled: true } } }, 'sslConfig.ocspClientCheck', /rejectUnauthorized/],
      [{ sslConfig: { ...tls, ocspClientCheck: { enabled: true, failMode: 'maybe' } } }, 'sslConfig.ocspClientCheck.failMode', /./],
    ];
    for (const [fields, field, message] of cases) {
      const r = await add(fields);
      assert.equal(r.status, 400, `${JSON.stringify(fields)}: ${r.text}`);
      assert.equal(r.json.field ?? r.json.data?.field, field, r.text);
      assert.match(r.json.message, message);
    }
    // A certificate without an AIA responder, with no responderUrl: stapling cannot ask anyone.
    const bare = pki.issue('bare', 'bare-server', { server: true, ocsp: false });
    const r = await add({ sslConfig: { ...tls, cert: bare.cert, key: bare.key, ocspStapling: { enabled: true } } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.message, /names no OCSP responder/);
  } finally {
    await b.stop();
  }
  await assert.rejects(startAdminBroker({ mqtt: { tls: { ...baseTls(), crl: server.cert } } }), /mqtt\.tls\.crl/);
});
