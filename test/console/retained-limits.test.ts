// The console's Messages page shows the retained figures (count against limits.maxRetainedMessages,
// the payload and expiry limits, the largest first topic levels) in a real browser (Debian's
// Chromium through playwright-core); the count follows what mqtt.js retains, and a retained
// publish from the page past the limit is refused next to the form with the limit named.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ limits: { maxRetainedMessages: 3, maxRetainedPayloadSize: 100, retainedDefaultExpiry: 3600 } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

test('messages: the retained count against its limit, the other limits and the largest levels; a publish past the limit is refused on the form', async () => {
  const pub = await connect(b.url, { protocolVersion: 5 });
  const page = await signIn(browser, b.base);
  try {
    await pub.publishAsync('plant/a', '1', { qos: 1, retain: true });
    await pub.publishAsync('plant/b', '2', { qos: 1, retain: true });
    await page.getByRole('link', { name: 'Messages' }).click();
    const retained = page.getByRole('region', { name: 'retained messages' });
    const figures = retained.getByTestId('retained-figures');
    await figures.waitFor();
    assert.equal(await figures.getByTestId('retained-count').innerText(), '2');
    assert.equal(await figures.getByTestId('retained-limit').innerText(), '3');
    const text = await figures.innerText();
    assert.match(text, /payload at most 100 bytes/);
    assert.match(text, /kept 3600 s/);
    assert.match(await figures.locator('[data-level="plant"]').innerText(), /plant 2/);

    await pub.publishAsync('line/c', '3', { qos: 1, retain: true });
    await retained.getByRole('button', { name: 'Search' }).click();
    await figures.getByTestId('retained-count').filter({ hasText: '3' }).waitFor();
    assert.match(await figures.innerText(), /full: new topics are refused/);

    const form = page.getByRole('form', { name: 'publish' });
    await form.getByLabel('Topic').fill('line/d');
    await form.getByLabel('Payload').fill('one too many');
    await form.getByLabel('Retain').check();
    await form.getByRole('button', { name: 'Publish' }).click();
    assert.match(await form.getByRole('alert').innerText(), /limits\.maxRetainedMessages/);
  } finally {
    await end(pub);
    await page.close();
  }
});
