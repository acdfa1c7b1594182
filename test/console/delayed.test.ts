// The Delayed page in a real browser (Debian's Chromium through playwright-core): delayed messages
// an mqtt.js client published are listed, filtered by a topic filter, one is cancelled from its
// row (never delivered), the rest matching the filter at once; a viewer sees no buttons.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { delayed } from '../../src/features/delayed/index.ts';
import { connect, end } from '../helpers/broker.ts';
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

test('list, filter and cancel delayed messages on the Delayed page', async () => {
  const pub = await connect(b.url, { protocolVersion: 5, clientId: 'console-delayed' });
  await pub.publishAsync('$delayed/600/page/a', 'a', { qos: 1 });
  await pub.publishAsync('$delayed/600/page/b', 'b', { qos: 1 });
  await pub.publishAsync('$delayed/600/other/c', 'c', { qos: 1 });
  await end(pub);
  const ids = new Map<string, string>(b.features.get(delayed).list(undefined).map((m) => [m.topic, m.id]));

  const viewer = await signIn(browser, b.base, VIEWER);
  await viewer.getByRole('link', { name: 'Delayed' }).click();
  await viewer.locator(`tr[data-delayed="${ids.get('page/a')}"]`).waitFor();
  assert.equal(await viewer.getByRole('button', { name: /^cancel the delayed message/ }).count(), 0);

  const page = await signIn(browser, b.base);
  await page.getByRole('link', { name: 'Delayed' }).click();
  const row = page.locator(`tr[data-delayed="${ids.get('page/a')}"]`);
  await row.waitFor();
  assert.match(await row.innerText(), /console-delayed/);
  const form = page.getByRole('form', { name: 'filter delayed messages' });
  await form.getByLabel('Topic filter').fill('page/#');
  await form.getByRole('button', { name: 'Show' }).click();
  await waitFor(async () => (await page.locator(`tr[data-delayed="${ids.get('other/c')}"]`).count()) === 0);

  await page.getByRole('button', { name: 'cancel the delayed message to page/a' }).click();
  await waitFor(async () => (await page.locator(`tr[data-delayed="${ids.get('page/a')}"]`).count()) === 0);
  assert.equal((await b.api('GET', `/api/delayed/${ids.get('page/a')}`)).status, 404);

  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Cancel matching' }).click();
  await waitFor(async () => (await b.api('GET', '/api/delayed/stats')).json.data.pending === 1);
  assert.equal((await b.api('GET', '/api/delayed')).json.data[0].topic, 'other/c');
});
