// The admin API over HTTPS (docs/operating/admin-https.md): curl --cacert and fetch (with the test
// CA trusted) against it, the session cookie Secure over HTTPS and not over the plain port of
// admin.tls.plain 'on', plain HTTP refused on the HTTPS port and redirected (308) by
// admin.tls.plain 'redirect', the certificate of an MQTT endpoint (admin.tls.fromEndpoint), a
// reload serving a new certificate to new connections while an open one keeps the old, a bad
// certificate refused at start and at reload, and SIGHUP doing the reload in a `spindle` process.
// needs: broker
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';

import { ADMIN_PASSWORD, startBroker, type TestBroker } from '../helpers/broker.ts';
import { freePort, startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { waitFor } from '../helpers/wait.ts';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'spindle-https-'));
const f = (name: string) => path.join(dir, name);
const BASIC = `admin:${ADMIN_PASSWORD}`;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function issue(name: string, cn: string): void {
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`);
  writeFileSync(f(`${name}.ext`), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), '-extfile', f(`${name}.ext`));
}

let ca: Buffer;

before(() => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle HTTPS Test CA');
  issue('one', 'admin-one');
  issue('two', 'admin-two');
  issue('mqtt', 'mqtt-endpoint');
  copyFileSync(f('one.crt'), f('live.crt'));
  copyFileSync(f('one.key'), f('live.key'));
  ca = readFileSync(f('ca.crt'));
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The CN of the certificate the server showed. */
  cn: string;
}

/** One HTTPS request trusting the test CA (a new connection unless `agent` keeps one). */
function request(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; agent?: https.Agent } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: options.method ?? 'GET', headers: options.headers, ca, agent: options.agent ?? false }, (res) => {
      const cn = (res.socket as TLSSocket).getPeerCertificate().subject.CN as string;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), cn }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const login = (base: string) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD, cookie: true }) });

describe('own certificate, plain HTTP redirected', () => {
  let b: TestBroker;
  let base: string;

  before(async () => {
    // A port of its own (not 0): a reload then listens beside the old socket (SO_REUSEPORT).
    b = await startBroker({ admin: { enabled: true, port: await freePort(), tls: { cert: f('live.crt'), key: f('live.key'), plain: 'redirect', plainPort: 0 } } });
    base = `https://127.0.0.1:${b.admin!.port}`;
  });
  after(() => b?.stop());

  test('curl --cacert reaches the API; curl without the CA refuses the certificate', async () => {
    const { stdout } = await run('curl', ['-sS', '--fail', '--cacert', f('ca.crt'), '-u', BASIC, `${base}/api/session`]);
    assert.deepEqual(JSON.parse(stdout).data, { username: 'admin', role: 'admin' });
    await assert.rejects(run('curl', ['-sS', '--fail', '-u', BASIC, `${base}/api/session`]), (e: { stderr: string }) => /certificate/i.test(e.stderr));
  });

  test('fetch, with the test CA trusted (NODE_EXTRA_CA_CERTS), signs in and reads with the token', async () => {
    const script = `
      const base = process.argv[1];
      const r = await fetch(base + '/public/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: process.argv[2] }) });
      const { token } = await r.json();
      const s = await fetch(base + '/api/session', { headers: { authorization: 'Bearer ' + token } });
      console.log(JSON.stringify({ status: s.status, body: await s.json() }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, base, ADMIN_PASSWORD], { env: { ...process.env, NODE_EXTRA_CA_CERTS: f('ca.crt') } });
    const answer = JSON.parse(stdout);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.data.username, 'admin');
  });

  test('the console sign-in cookie is Secure over HTTPS (and HttpOnly, SameSite=Strict); so is its clearing', async () => {
    const r = await request(`${base}/public/login`, login(base));
    assert.equal(r.status, 200, r.body);
    const cookie = String(r.headers['set-cookie']);
    assert.match(cookie, /^spindle_session=[^;]+;.*; HttpOnly; SameSite=Strict; Secure$/);
    const out = await request(`${base}/public/logout`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    assert.match(String(out.headers['set-cookie']), /Max-Age=0;.*; Secure$/);
  });

  test('plain HTTP: refused on the HTTPS port, redirected (308, method, path and query kept) on the plain port', async () => {
    await assert.rejects(run('curl', ['-sS', '--max-time', '5', `http://127.0.0.1:${b.admin!.port}/api/session`]));
    const plain = b.admin!.plainPort!;
    assert.ok(plain > 0 && plain !== b.admin!.port);
    const { stdout } = await run('curl', ['-sS', '-i', '-X', 'POST', `http://127.0.0.1:${plain}/public/login?x=1`]);
    assert.match(stdout, /^HTTP\/1\.1 308 /);
    assert.match(stdout, new RegExp(`\\r\\nlocation: https://127\\.0\\.0\\.1:${b.admin!.port}/public/login\\?x=1\\r\\n`, 'i'));
    // Following it with curl: the API over HTTPS answers (a login keeps its POST and body).
    const followed = await run('curl', ['-sS', '-L', '--cacert', f('ca.crt'), '-H', 'content-type: application/json', '-d', JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }), `http://localhost:${plain}/public/login`]);
    assert.ok(JSON.parse(followed.stdout).token);
  });

  test('reload: a new certificate for new connections, an open one keeps the old; a bad one keeps the current', async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
    const first = await request(`${base}/api/session`, { agent, headers: { authorization: `Basic ${Buffer.from(BASIC).toString('base64')}` } });
    assert.equal(first.cn, 'admin-one');
    copyFileSync(f('two.crt'), f('live.crt'));
    copyFileSync(f('two.key'), f('live.key'));
    await b.admin!.reloadTls();
    assert.equal((await request(`${base}/api/session`)).cn, 'admin-two');
    // The kept-alive connection still answers, with the certificate it was opened with.
    const again = await request(`${base}/api/session`, { agent, headers: { authorization: `Basic ${Buffer.from(BASIC).toString('base64')}` } });
    assert.equal(again.status, 200);
    assert.equal(again.cn, 'admin-one');
    agent.destroy();
    // A key that is not the certificate's: refused, the current certificate stays.
    copyFileSync(f('one.key'), f('live.key'));
    await b.admin!.reloadTls();
    assert.equal((await request(`${base}/api/session`)).cn, 'admin-two');
    copyFileSync(f('two.key'), f('live.key'));
  });
});

describe("an MQTT endpoint's certificate, plain HTTP served too", () => {
  let b: TestBroker;

  before(async () => {
    copyFileSync(f('mqtt.crt'), f('endpoint.crt'));
    copyFileSync(f('mqtt.key'), f('endpoint.key'));
    b = await startBroker({
      mqtt: { tls: { port: 0, cert: f('endpoint.crt'), key: f('endpoint.key') } },
      admin: { enabled: true, tls: { fromEndpoint: 'tls', plain: 'on', plainPort: 0 } },
    });
  });
  after(() => b?.stop());

  test("HTTPS shows the endpoint's certificate; plain HTTP serves the API, its cookie not Secure", async () => {
    const tls = await request(`https://127.0.0.1:${b.admin!.port}/public/login`, login(''));
    assert.equal(tls.cn, 'mqtt-endpoint');
    assert.match(String(tls.headers['set-cookie']), /; Secure$/);
    const plain = await fetch(`http://127.0.0.1:${b.admin!.plainPort}/public/login`, login(''));
    assert.equal(plain.status, 200);
    const cookie = plain.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^spindle_session=/);
    assert.doesNotMatch(cookie, /Secure/);
  });

  test("a reload takes the endpoint's new certificate (admin.port 0: the socket closed, then opened)", async () => {
    copyFileSync(f('two.crt'), f('endpoint.crt'));
    copyFileSync(f('two.key'), f('endpoint.key'));
    await b.admin!.reloadTls();
    assert.equal((await request(`https://127.0.0.1:${b.admin!.port}/api/session`)).cn, 'admin-two');
    assert.equal((await fetch(`http://127.0.0.1:${b.admin!.plainPort}/api/session`, { headers: { authorization: `Basic ${Buffer.from(BASIC).toString('base64')}` } })).status, 200);
  });
});

test('a start with a bad admin certificate is refused naming the key', async () => {
  await assert.rejects(startBroker({ admin: { enabled: true, tls: { cert: f('one.crt'), key: f('two.key') } } }), /admin\.tls\.cert: .*is not the private key of/);
  await assert.rejects(startBroker({ admin: { enabled: true, tls: { fromEndpoint: 'nope' } } }), /admin\.tls\.fromEndpoint: no endpoint nope/);
  await assert.rejects(startBroker({ admin: { enabled: true, tls: { fromEndpoint: 'tcp' } } }), /admin\.tls\.fromEndpoint: endpoint tcp has no certificate/);
});

describe('SIGHUP in a spindle process', () => {
  let p: ProcessBroker;
  let adminPort: number;

  before(async () => {
    copyFileSync(f('one.crt'), f('proc.crt'));
    copyFileSync(f('one.key'), f('proc.key'));
    adminPort = await freePort();
    const dataDir = tempDir();
    p = await startProcessBroker({
      dataDir,
      workers: 1,
      log: { level: 'info' },
      mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { enabled: false } },
      admin: { enabled: true, host: '127.0.0.1', port: adminPort, password: ADMIN_PASSWORD, tls: { cert: f('proc.crt'), key: f('proc.key') } },
    });
  });
  after(() => p?.kill('SIGTERM'));

  test('a new certificate is seen by a new connection after SIGHUP', async () => {
    const url = `https://127.0.0.1:${adminPort}/api/session`;
    assert.equal((await request(url)).cn, 'admin-one');
    copyFileSync(f('two.crt'), f('proc.crt'));
    copyFileSync(f('two.key'), f('proc.key'));
    p.child.kill('SIGHUP');
    await waitFor(() => p.output.some((l) => l.includes('admin API certificate reloaded')), { message: () => `the reload logged:\n${p.output.join('\n')}` });
    assert.equal((await request(url)).cn, 'admin-two');
  });
});
