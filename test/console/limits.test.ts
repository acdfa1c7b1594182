// The console's overload card (Overview) and Limits page in a real browser (Debian's Chromium):
// the overload state shown turning to overloaded while a worker lags (the debug switch, on for
// this broker) and back, with the refusal it counted; a per-client rate limit set from the page
// throttling a real mqtt.js client, its throttles shown; a bad limit and bad marks refused with
// the field named; the marks changed from the page; a viewer sees no forms.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';
import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end, nextMessages } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ workers: 1, overload: { enabled: true, lagHighMs: 250, lagLowMs: 100, sampleMs: 100, debugBusy: true } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

const signedIn = (as: { username: string; password: string } = { username: 'admin', password: ADMIN_PASSWORD }): Promise<Page> => signIn(browser, b.base, as);

function refusedCode(): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(b.url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10_000 });
    c.once('connect', () => { c.end(true); resolve(0); });
    c.once('error', (err: Error & { code?: number }) => { c.end(true); if (typeof err.code === 'number') resolve(err.code); else reject(err); });
  });
}

test('the overview shows the overload state turn to overloaded while a worker lags, the refusal counted, and back', async () => {
  const page = await signedIn();
  const state = page.getByTestId('overload-state');
  await waitFor(async () => (await state.innerText()) === 'normal', { message: 'normal shown' });
  const r = await b.api('POST', '/api/overload/debug/busy', { body: { totalMs: 4000, blockMs: 400 } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await state.innerText()) === 'overloaded', { message: 'overloaded shown' });
  assert.equal(await refusedCode(), 0x89);
  await waitFor(async () => Number(await page.getByTestId('overload-refused-0').innerText()) >= 1, { message: 'the refusal shown' });
  await waitFor(async () => (await state.innerText()) === 'normal', { message: 'normal shown again' });
  await page.close();
});

test('a per-client rate limit set on the Limits page throttles a real client; bad values name their field', async () => {
  const page = await signedIn();
  await page.getByRole('link', { name: 'Limits' }).click();
  const form = page.getByRole('form', { name: 'set a rate limit' });
  await form.getByLabel('Endpoint').selectOption({ label: `tcp (${b.ports.tcp})` });
  // A burst without its rate: refused, the field named.
  await form.getByLabel('messagesBurst').fill('3');
  await form.getByRole('button', { name: 'Save limit' }).click();
  await waitFor(async () => /rateLimit\.messagesBurst/.test(await form.getByRole('alert').innerText()), { message: 'the refusal names the field' });
  await form.getByLabel('messagesPerSecond').fill('10');
  await form.getByRole('button', { name: 'Save limit' }).click();
  await waitFor(async () => /10 msg\/s \(burst 3\)/.test(await page.getByTestId('rate-tcp').innerText()), { message: 'the limit shown' });

  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync('lim/#', { qos: 1 });
    const got = nextMessages(sub, 13);
    const start = Date.now();
    for (let i = 0; i < 13; i++) void pub.publishAsync(`lim/${i}`, String(i), { qos: 1 });
    assert.equal((await got).length, 13);
    // 13 messages, burst 3, 10 per second: no sooner than 1 s.
    assert.ok(Date.now() - start >= 950, `13 messages in ${Date.now() - start} ms`);
  } finally {
    await end(sub, pub);
  }
  await waitFor(async () => Number((await page.getByTestId('throttled-tcp').innerText()).split(' / ')[0]) >= 5, { message: 'the throttles shown' });
  // Cleared again: no rate given.
  await form.getByLabel('messagesPerSecond').fill('');
  await form.getByLabel('messagesBurst').fill('');
  await form.getByRole('button', { name: 'Save limit' }).click();
  await waitFor(async () => (await page.getByTestId('rate-tcp').innerText()) === 'none', { message: 'the limit cleared' });
  await page.close();
});

test('the overload marks change from the Limits page; a low mark above its high one is refused; a viewer sees no forms', async () => {
  const page = await signedIn();
  await page.getByRole('link', { name: 'Limits' }).click();
  const marks = page.getByRole('form', { name: 'overload marks form' });
  await marks.getByLabel('Lag low (ms)').fill('900');
  await marks.getByRole('button', { name: 'Save marks' }).click();
  await waitFor(async () => /lagLowMs/.test(await page.getByRole('region', { name: 'overload marks' }).getByRole('alert').innerText()), { message: 'the refusal names lagLowMs' });
  await marks.getByLabel('Lag low (ms)').fill('120');
  await marks.getByLabel('Lag high (ms)').fill('300');
  await marks.getByRole('button', { name: 'Save marks' }).click();
  await waitFor(async () => {
    const r = await b.api('GET', '/api/overload');
    return r.json.data.marks.lagHighMs === 300 && r.json.data.marks.lagLowMs === 120 && r.json.data.source === 'api';
  }, { message: 'the marks saved' });
  await page.close();

  const viewer = await signedIn(VIEWER);
  await viewer.getByRole('link', { name: 'Limits' }).click();
  await waitFor(async () => (await viewer.getByRole('region', { name: 'rate limits' }).count()) === 1, { message: 'the viewer sees the limits' });
  assert.equal(await viewer.getByRole('form', { name: 'set a rate limit' }).count(), 0);
  assert.equal(await viewer.getByRole('form', { name: 'overload marks form' }).count(), 0);
  await viewer.close();
});
