// The console's Topic tree with rates in a real browser (Debian's Chromium): "Measure rate" on a
// level adds the topic metric level/# (seen through the API), real mqtt.js traffic then shows a
// non-zero rate in and out on that level, and "Stop measuring" removes it after a confirmation; a
// viewer sees the rates without the buttons; past topicMetrics.max (2 here) the 409 is shown
// beside the level, and a measured filter with no level in the tree is listed apart.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ workers: 1, topicMetrics: { max: 2 } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

const filters = async (): Promise<string[]> => ((await b.api('GET', '/api/topic-metrics')).json.data as { filter: string }[]).map((t) => t.filter);

test('Measure rate on a level adds level/#, its rates in and out show real traffic; Stop measuring removes it', async () => {
  const sub = await connect(b.url, { clientId: 'rates-sub', protocolVersion: 5 });
  const pub = await connect(b.url, { clientId: 'rates-pub', protocolVersion: 5 });
  let traffic: NodeJS.Timeout | undefined;
  try {
    await sub.subscribeAsync('rt/room/+/temp', { qos: 1 });
    for (let i = 0; i < 5; i++) await pub.publishAsync('rt/room/a/temp', '21.5', { qos: 1 });
    const page = await signIn(browser, b.base);
    await page.getByRole('link', { name: 'Topic tree' }).click();
    const tree = page.getByRole('region', { name: 'topic tree' });
    await tree.getByRole('button', { name: 'expand rt', exact: true }).click();
    const row = tree.locator('tr[data-path="rt/room"]');
    await row.waitFor();
    assert.match(await row.locator('td.rates').innerText(), /Measure rate \(rt\/room\/#\)/);
    await row.getByRole('button', { name: 'Measure rate' }).click();
    await waitFor(async () => (await filters()).includes('rt/room/#'), { message: 'the topic metric rt/room/# exists' });
    const measured = row.locator('[data-filter="rt/room/#"]');
    await measured.waitFor();
    assert.equal(await row.getByRole('button', { name: 'Measure rate' }).count(), 0);

    // More traffic: the rates (sampled every 5 s by the broker, read every 3 s by the page) move.
    traffic = setInterval(() => pub.publish('rt/room/a/temp', '22.0', { qos: 0 }), 100);
    await waitFor(async () => (await measured.locator('[data-col="rate-in"]').innerText()) !== '0/s' && (await measured.locator('[data-col="rate-out"]').innerText()) !== '0/s', { message: 'a non-zero rate in and out shown on rt/room' });
    assert.match(await measured.locator('[data-col="rate-in"]').innerText(), /^\d+(\.\d+)?\/s$/);
    assert.match(await measured.locator('[data-col="bytes-in"]').innerText(), /^[1-9][\d.]* (B|kB|MB)\/s$/);
    // A level below, not measured itself, still offers its own.
    await tree.getByRole('button', { name: 'expand rt/room', exact: true }).click();
    assert.equal(await tree.locator('tr[data-path="rt/room/+"]').getByRole('button', { name: 'Measure rate' }).count(), 1);

    // A viewer sees the rates, not the buttons.
    const viewer = await signIn(browser, b.base, VIEWER);
    await viewer.getByRole('link', { name: 'Topic tree' }).click();
    const vtree = viewer.getByRole('region', { name: 'topic tree' });
    await vtree.getByRole('button', { name: 'expand rt', exact: true }).click();
    await vtree.locator('tr[data-path="rt/room"] [data-filter="rt/room/#"]').waitFor();
    assert.equal(await vtree.getByRole('button', { name: /Measure rate|Stop measuring/ }).count(), 0);
    await viewer.close();

    // Stop measuring asks first: dismissed, nothing changes; accepted, the metric is gone.
    const asked: string[] = [];
    page.once('dialog', (d) => { asked.push(d.message()); void d.dismiss(); });
    await measured.getByRole('button', { name: 'Stop measuring' }).click();
    await waitFor(() => asked.length === 1, { message: 'a confirmation asked' });
    assert.match(asked[0], /rt\/room\/#/);
    assert.ok((await filters()).includes('rt/room/#'));
    page.once('dialog', (d) => void d.accept());
    await measured.getByRole('button', { name: 'Stop measuring' }).click();
    await waitFor(async () => !(await filters()).includes('rt/room/#'), { message: 'the topic metric removed' });
    await row.getByRole('button', { name: 'Measure rate' }).waitFor();
    assert.equal(await measured.count(), 0);
    await page.close();
  } finally {
    clearInterval(traffic);
    await end(sub, pub);
  }
});

test('past topicMetrics.max the 409 is shown beside the level; a measured filter outside the tree is listed', async () => {
  const sub = await connect(b.url, { clientId: 'bound-sub' });
  try {
    await sub.subscribeAsync('bt/x', { qos: 0 });
    for (const filter of ['elsewhere/1', 'elsewhere/2']) assert.equal((await b.api('POST', '/api/topic-metrics', { body: { filter } })).status, 200);
    const page = await signIn(browser, b.base);
    await page.getByRole('link', { name: 'Topic tree' }).click();
    const tree = page.getByRole('region', { name: 'topic tree' });
    const row = tree.locator('tr[data-path="bt"]');
    await row.getByRole('button', { name: 'Measure rate' }).click();
    const alert = row.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /measure rate \(409\): filter: at most 2 topic metrics \(topicMetrics\.max\)/);
    assert.deepEqual((await filters()).sort(), ['elsewhere/1', 'elsewhere/2']);
    const outside = page.getByRole('region', { name: 'measured filters outside the tree' });
    await outside.locator('[data-filter="elsewhere/1"]').waitFor();
    assert.equal(await outside.locator('li').count(), 2);
    assert.match(await page.getByTestId('tree-rates-note').innerText(), /topicMetrics\.max \(2 in use\)/);

    // Room again: the same button succeeds and the refusal goes.
    assert.equal((await b.api('DELETE', `/api/topic-metrics/${encodeURIComponent('elsewhere/2')}`, { headers: { 'content-type': 'application/json' } })).status, 200);
    await row.getByRole('button', { name: 'Measure rate' }).click();
    await row.locator('[data-filter="bt/#"]').waitFor();
    assert.equal(await alert.count(), 0);
    assert.ok((await filters()).includes('bt/#'));
    await page.close();
  } finally {
    await end(sub);
  }
});
