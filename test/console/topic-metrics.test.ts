// The console's Topic metrics and Slow subscribers pages in a real browser (Debian's Chromium): a
// filter added from the page counts a real client's messages (a bad filter refused with the field
// named), reset and deleted from the page; slow subscribers enabled from the page list a client
// that holds its PUBACK, not a fast one.
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

test('a filter added on the Topic metrics page counts real messages; reset and delete', async () => {
  const page = await signIn(browser, b.base, { username: 'admin', password: ADMIN_PASSWORD });
  await page.getByRole('link', { name: 'Topic metrics' }).click();
  const form = page.getByRole('form', { name: 'add a topic filter' });
  await form.getByLabel('Topic filter').fill('cm/#/x');
  await form.getByRole('button', { name: 'Count it' }).click();
  await waitFor(async () => /filter/.test(await form.getByRole('alert').innerText()), { message: 'the refusal names the field' });
  await form.getByLabel('Topic filter').fill('cm/+');
  await form.getByRole('button', { name: 'Count it' }).click();
  const row = page.locator('tr[data-filter="cm/+"]');
  await waitFor(async () => (await row.count()) === 1, { message: 'the filter listed' });

  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync('cm/#', { qos: 1 });
    const got = nextMessages(sub, 2);
    await pub.publishAsync('cm/a', 'x', { qos: 1 });
    await pub.publishAsync('cm/b', 'y', { qos: 0 });
    await pub.publishAsync('other/a', 'z', { qos: 0 });
    await got;
    await waitFor(async () => (await row.locator('td[data-col="in"]').innerText()) === '2' && (await row.locator('td[data-col="out"]').innerText()) === '2', { message: 'the counts shown' });
  } finally {
    await end(sub, pub);
  }
  await row.getByRole('button', { name: 'Reset' }).click();
  await waitFor(async () => (await row.locator('td[data-col="in"]').innerText()) === '0', { message: 'the counts reset' });
  await row.getByRole('button', { name: 'Delete' }).click();
  await waitFor(async () => (await row.count()) === 0, { message: 'the filter gone' });
  assert.equal((await b.api('GET', '/api/topic-metrics')).json.data.length, 0);
  await page.close();
});

test('slow subscribers enabled on their page list a client that holds its PUBACK', async () => {
  const page = await signIn(browser, b.base, { username: 'admin', password: ADMIN_PASSWORD });
  await page.getByRole('link', { name: 'Slow subscribers' }).click();
  const form = page.getByRole('form', { name: 'slow subscriber settings' });
  await form.getByLabel('Enabled').check();
  await form.getByLabel('Threshold (ms)').fill('150');
  await form.getByRole('button', { name: 'Save' }).click();
  await waitFor(async () => (await b.api('GET', '/api/slow-subscriptions/settings')).json.data.enable === true, { message: 'enabled' });

  const slow = await connect(b.url, { clientId: 'console-slow', protocolVersion: 5, customHandleAcks: (_t, _m, _p, done) => { setTimeout(() => done(0), 300); } });
  const fast = await connect(b.url, { clientId: 'console-fast', protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await slow.subscribeAsync('cs/t', { qos: 1 });
    await fast.subscribeAsync('cs/t', { qos: 1 });
    await pub.publishAsync('cs/t', 'x', { qos: 1 });
    const row = page.locator('tr[data-client="console-slow"]');
    await waitFor(async () => (await row.count()) === 1, { message: 'the slow client listed' });
    assert.ok(Number(await row.locator('td[data-col="latency"]').innerText()) >= 150);
    assert.equal(await page.locator('tr[data-client="console-fast"]').count(), 0);
  } finally {
    await end(slow, fast, pub);
  }
  await page.getByRole('region', { name: 'slow subscribers' }).getByRole('button', { name: 'Clear' }).click();
  await waitFor(async () => (await page.locator('tr[data-client="console-slow"]').count()) === 0, { message: 'cleared' });
  await page.close();
});
