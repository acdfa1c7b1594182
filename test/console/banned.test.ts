// The Banned page in a real browser (Debian's Chromium through playwright-core): a ban added from
// the page refuses an mqtt.js CONNECT with 0x8A, a bad address is refused on the form naming the
// field, the list shows what the API made, a ban is lifted from its row; a viewer sees the list
// without the buttons.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';
import type { Browser } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

function connackCode(clientId: string): Promise<number> {
  const client = mqtt.connect(b.url, { reconnectPeriod: 0, protocolVersion: 5, clientId });
  return new Promise<number>((resolve, reject) => {
    client.once('connect', () => resolve(0));
    client.once('error', (err: Error & { code?: number }) => (typeof err.code === 'number' ? resolve(err.code) : reject(err)));
  }).finally(() => client.end(true));
}

test('list, add and lift bans on the Banned page', async () => {
  await b.api('POST', '/api/banned', { body: { as: 'peerhost_net', who: '198.51.100.0/24', reason: 'from the API' } });
  const page = await signIn(browser, b.base);
  await page.getByRole('link', { name: 'Banned' }).click();
  const apiRow = page.locator('tr[data-ban="peerhost_net:198.51.100.0/24"]');
  await apiRow.waitFor();
  assert.match(await apiRow.innerText(), /from the API/);

  const form = page.getByRole('form', { name: 'add a ban' });
  // Refused: the message names the field on the form.
  await form.getByLabel('Kind').selectOption('peerhost');
  await form.getByLabel('Who').fill('10.0.0.300');
  await form.getByRole('button', { name: 'Ban' }).click();
  assert.match(await page.getByRole('alert').innerText(), /add: who: 10\.0\.0\.300 is not an IPv4 or IPv6 address/);

  await form.getByLabel('Kind').selectOption('clientid');
  await form.getByLabel('Who').fill('console-banned');
  await form.getByLabel('Reason').fill('added in the console');
  await form.getByLabel('Minutes').fill('30');
  await form.getByRole('button', { name: 'Ban' }).click();
  const row = page.locator('tr[data-ban="clientid:console-banned"]');
  await row.waitFor();
  assert.match(await row.innerText(), /added in the console/);
  assert.doesNotMatch(await row.innerText(), /never/, 'it ends in 30 minutes');
  const made = (await b.api('GET', '/api/banned?as=clientid')).json.data[0];
  assert.equal(made.by, 'admin');
  assert.ok(Math.abs(Date.parse(made.until) - Date.now() - 30 * 60_000) < 60_000);
  assert.equal(await connackCode('console-banned'), 0x8a);

  // A viewer sees the list, not the form or the buttons.
  const viewer = await signIn(browser, b.base, VIEWER);
  await viewer.getByRole('link', { name: 'Banned' }).click();
  await viewer.locator('tr[data-ban="clientid:console-banned"]').waitFor();
  assert.equal(await viewer.getByRole('form', { name: 'add a ban' }).count(), 0);
  assert.equal(await viewer.getByRole('button', { name: /lift/i }).count(), 0);
  await viewer.close();

  await row.getByRole('button', { name: 'lift the ban of clientid console-banned' }).click();
  await row.waitFor({ state: 'detached' });
  await waitFor(async () => (await connackCode('console-banned')) === 0, { message: 'the ban lifted' });
  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Lift all' }).click();
  await apiRow.waitFor({ state: 'detached' });
  assert.equal((await b.api('GET', '/api/banned')).json.total, 0);
  await page.close();
});
