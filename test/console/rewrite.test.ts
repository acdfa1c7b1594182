// The console's Topic rewrite page in a real browser (Debian's Chromium): a rule added from the
// page rewrites a real client's PUBLISH and its count shows; a bad regex is refused with the field
// named; a rule deleted from the page is gone; an exclusive subscription's holder is listed.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end, nextMessages } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ workers: 1 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

test('rules added and deleted on the Topic rewrite page act on real clients; exclusive holders listed', async () => {
  const page = await signIn(browser, b.base, { username: 'admin', password: ADMIN_PASSWORD });
  await page.getByRole('link', { name: 'Topic rewrite' }).click();
  const form = page.getByRole('form', { name: 'add a rewrite rule' });
  await form.getByLabel('Source filter').fill('cx/#');
  await form.getByLabel('Regex').fill('^cx/(.+');
  await form.getByLabel('Destination').fill('cz/$1');
  await form.getByRole('button', { name: 'Add rule' }).click();
  await waitFor(async () => /regex/.test(await form.getByRole('alert').innerText()), { message: 'the refusal names the field' });
  await form.getByLabel('Regex').fill('^cx/(.+)$');
  await form.getByRole('button', { name: 'Add rule' }).click();
  const row = page.locator('tr[data-rule="1"]');
  await waitFor(async () => (await row.count()) === 1, { message: 'the rule listed' });

  const sub = await connect(b.url, { protocolVersion: 5, clientId: 'console-holder' });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync(['cz/#', '$exclusive/console/#']);
    const got = nextMessages(sub, 1);
    await pub.publishAsync('cx/a', 'x', { qos: 1 });
    assert.equal((await got)[0].topic, 'cz/a');
    await waitFor(async () => (await row.locator('td').nth(5).innerText()) === '1', { message: 'the count shown' });
    const holders = page.getByRole('region', { name: 'exclusive subscriptions' });
    await waitFor(async () => /\$exclusive\/console\/#\s+console-holder/.test(await holders.innerText()), { message: 'the holder listed' });
  } finally {
    await end(sub, pub);
  }
  await row.getByRole('button', { name: 'Delete' }).click();
  await waitFor(async () => (await row.count()) === 0, { message: 'the rule gone' });
  assert.equal((await b.api('GET', '/api/rewrite')).json.data.rules.length, 0);
  await page.close();
});
