// The web console over HTTPS in a real browser (Debian's Chromium through playwright-core, the
// test CA's certificate accepted with ignoreHTTPSErrors): sign in with the session cookie Secure
// and HttpOnly, the live figures arriving over wss://, plain HTTP redirected to HTTPS; and the
// TLS-PSK fields of the Endpoints and Client database pages: an endpoint taking the client
// database's keys added from the page, a client with a PSK key added from the page, and
// mosquitto_sub signing in through it with that key, its identity the username.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import type { Browser, BrowserContext, Page } from 'playwright-core';

import { ADMIN_PASSWORD, connect, end, startBroker, type TestBroker } from '../helpers/broker.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { freePort } from '../helpers/process-broker.ts';
import { waitFor } from '../helpers/wait.ts';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'spindle-console-https-'));
const f = (name: string) => path.join(dir, name);

let b: TestBroker;
let base: string;
let browser: Browser;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** An admin API call over HTTPS trusting the test CA. */
function api(method: string, p: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}${p}`, { method, ca: readFileSync(f('ca.crt')), auth: `admin:${ADMIN_PASSWORD}`, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

before(async () => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle Console Test CA');
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('admin.key'), '-out', f('admin.csr'), '-subj', '/CN=spindle-console');
  writeFileSync(f('admin.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', f('admin.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f('admin.crt'), '-extfile', f('admin.ext'));
  b = await startBroker({ admin: { enabled: true, tls: { cert: f('admin.crt'), key: f('admin.key'), plain: 'redirect', plainPort: 0 } } });
  base = `https://127.0.0.1:${b.admin!.port}`;
  assert.equal(await api('POST', '/api/client-db/roles', { name: 'psk-device', rules: [{ action: 'all', permission: 'allow', topic: 'devices/%u/#' }] }), 200);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

/** A page signed in, in a browser context of its own (its own cookies), that accepts the test
 * CA's certificate. */
async function signedIn(): Promise<Page> {
  const context: BrowserContext = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'pages' }).waitFor();
  return page;
}

test('over HTTPS: the session cookie is Secure and HttpOnly, the live figures come over wss://, plain HTTP is redirected', async () => {
  const page = await signedIn();
  const context = page.context();
  const client = await connect(b.url, { clientId: 'https-console' });
  try {
    const session = (await context.cookies()).find((c) => c.name === 'spindle_session');
    assert.ok(session, 'a session cookie');
    assert.equal(session.secure, true);
    assert.equal(session.httpOnly, true);
    assert.equal(await page.evaluate(() => location.protocol), 'https:');
    await waitFor(async () => Number((await page.getByTestId('stat-connections').innerText()).replace(/\D/g, '')) >= 1, { message: 'the connection shown live' });
    const plain = await context.newPage();
    await plain.goto(`http://127.0.0.1:${b.admin!.plainPort}/`);
    assert.equal(new URL(plain.url()).protocol, 'https:');
    assert.equal(new URL(plain.url()).port, String(b.admin!.port));
    // Signed in there too: the Secure cookie goes with the HTTPS page.
    await plain.getByRole('navigation', { name: 'pages' }).waitFor();
    await plain.close();
  } finally {
    await end(client);
    await context.close();
  }
});

test('TLS-PSK from the pages: an endpoint with the client database keys, a client with a PSK key; mosquitto_sub signs in with it', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Endpoints' }).click();
    const port = await freePort();
    const form = page.getByRole('form', { name: 'add an endpoint' });
    await form.getByLabel('Id').fill('psk-from-console');
    await form.getByLabel('Port').fill(String(port));
    await form.getByText('TLS: certificate, revocation, TLS-PSK').click();
    await form.getByLabel('PSK keys of the client database').check();
    await form.getByLabel('Username from the PSK').check();
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const row = page.locator(`tr[data-port="${port}"]`);
    await row.waitFor();
    await waitFor(async () => /running/.test(await row.innerText()) && /PSK \(client database\)/.test(await row.innerText()), { message: 'the PSK endpoint running' });
    // A PSK file that is not there: the refusal named on the form.
    await form.getByLabel('Port').fill(String(await freePort()));
    await form.getByLabel('PSK file').fill(f('no-such-psk.txt'));
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await form.getByRole('alert').innerText(), /sslConfig\.psk\.file: cannot read/);

    await page.getByRole('link', { name: 'Client database' }).click();
    const clientForm = page.getByRole('form', { name: 'add a client' });
    await clientForm.getByLabel('Username').fill('web-psk');
    await clientForm.getByLabel('Password').fill('web-psk-pw');
    await clientForm.getByLabel(/^Roles/).fill('psk-device');
    await clientForm.getByLabel(/TLS-PSK key/).fill('not hex');
    await clientForm.getByRole('button', { name: 'Add client' }).click();
    assert.match(await page.getByRole('alert').innerText(), /pskKey/);
    await clientForm.getByLabel(/TLS-PSK key/).fill('feedc0de0123456789');
    await clientForm.getByRole('button', { name: 'Add client' }).click();
    const client = page.locator('[data-client="web-psk"]');
    await client.waitFor();
    assert.match(await client.innerText(), /\bset\b/);

    const sub = (filter: string) => run('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '--psk', 'feedc0de0123456789', '--psk-identity', 'web-psk', '-V', 'mqttv5', '-t', filter, '-E', '-d']).then((r) => r.stdout, (e: { stdout: string; stderr: string }) => `${e.stdout}${e.stderr}`);
    // Its role's devices/%u/#: granted for its own tree, refused for another's.
    assert.match(await sub('devices/web-psk/#'), /Subscribed \(mid: \d+\): 0\b/);
    assert.match(await sub('devices/other/#'), /Subscribed \(mid: \d+\): 135\b/);
  } finally {
    await page.context().close();
  }
});
