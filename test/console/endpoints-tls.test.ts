// The Endpoints page's TLS and revocation fields, in Chromium: a missing CRL file refused on the
// form naming sslConfig.crl; then a TLS endpoint with a CRL, OCSP stapling and the OCSP check of
// client certificates added from the page, its row showing them and the staple fetched from
// OpenSSL's OCSP responder, an mqtt.js client with a good certificate connecting and one with a
// revoked certificate refused.
// needs: broker, chromium, ocsp-responder
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { freePort } from '../helpers/process-broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';
import { TestPki } from '../helpers/ocsp-pki.ts';

let b: AdminBroker;
let browser: Browser;
let pki: TestPki;

before(async () => {
  pki = await TestPki.create();
  b = await startAdminBroker();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
  await pki?.stopResponder();
});

test('endpoints: TLS with a CRL, OCSP stapling and OCSP client checks added from the page; a missing CRL refused on the form', async () => {
  const server = pki.issue('server', 'console-tls', { server: true });
  const good = pki.issue('good', 'device-good');
  const revoked = pki.issue('revoked', 'device-revoked');
  pki.revoke(revoked);
  const crl = pki.crl();
  // Started once the index holds them (the responder reads it when it starts).
  await pki.startResponder();
  const page = await signIn(browser, b.base);
  try {
    await page.getByRole('link', { name: 'Endpoints' }).click();
    const port = await freePort();
    const form = page.getByRole('form', { name: 'add an endpoint' });
    await form.getByLabel('Id', { exact: true }).fill('tls-console');
    await form.getByLabel('Port', { exact: true }).fill(String(port));
    await form.getByText('TLS: certificate, revocation, TLS-PSK').click();
    await form.getByLabel('Certificate', { exact: true }).fill(server.cert);
    await form.getByLabel('Key', { exact: true }).fill(server.key);
    await form.getByLabel('CA', { exact: true }).fill(pki.ca);
    await form.getByLabel('Require client certificates').check();
    await form.getByLabel('CRL', { exact: true }).fill(pki.f('missing.crl'));
    await form.getByLabel('OCSP stapling').check();
    await form.getByLabel('OCSP check of client certificates').check();
    await form.getByLabel('Responder down').selectOption('closed');
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await form.getByRole('alert').innerText(), /^sslConfig\.crl: no such file/);

    await form.getByLabel('CRL', { exact: true }).fill(crl);
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const row = page.locator(`tr[data-port="${port}"]`);
    await row.waitFor();
    await waitFor(async () => (await row.innerText()).includes('running'), { message: 'the endpoint running' });
    // The staple is fetched by the main thread; the page shows it once it has it.
    await waitFor(async () => {
      await page.getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('link', { name: 'Endpoints' }).click();
      return (await row.locator('td.tls').innerText()).includes('OCSP staple: good until');
    }, { interval: 250, message: 'the staple shown on the page' });
    const tls = await row.locator('td.tls').innerText();
    assert.match(tls, /^TLS · client certificates · CRL · OCSP check \(fail closed\) · OCSP staple: good until /);

    const url = `mqtts://127.0.0.1:${port}`;
    const tlsOf = (d: { cert: string; key: string }) => ({ ca: readFileSync(pki.ca), cert: readFileSync(d.cert), key: readFileSync(d.key), reconnectPeriod: 0, connectTimeout: 5000 });
    const client = await connect(url, { protocolVersion: 5, clientId: 'console-tls-good', ...tlsOf(good) });
    await end(client);
    await assert.rejects(connect(url, { protocolVersion: 5, clientId: 'console-tls-revoked', ...tlsOf(revoked) }));
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});
