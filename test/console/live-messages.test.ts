// The web console's live message view and Logs page in a real browser (Debian's Chromium through
// playwright-core): a filter subscribed from the page shows what an mqtt.js client publishes; a
// filter the ACL refuses (or an invalid one) is shown as an error on the form; a flood of 20,000
// QoS 0 messages leaves the page responsive, its list bounded and the server's drops shown; the
// socket (/api/watch) refuses other origins and callers not signed in, and its subscriptions end
// when it closes. The Logs page shows a line the broker wrote (a log topic added from the page),
// live and by query, and downloads it; old log files are deleted from it after a confirmation.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import type { Browser, Page } from 'playwright-core';
import WebSocket from 'ws';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn, upgradeStatus } from '../helpers/browser.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  // The console's user (admin) may not subscribe to secret/#: neither may its page watch it.
  b = await startAdminBroker({ auth: { acl: [{ permission: 'deny', action: 'subscribe', topic: 'secret/#' }], aclDefault: 'allow' } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

const signedIn = (): Promise<Page> => signIn(browser, b.base, { acceptDownloads: true });

/** A number the page shows under `testId`. */
async function shown(page: Page, testId: string): Promise<number> {
  return Number((await page.getByTestId(testId).innerText()).replace(/\D/g, ''));
}

/** A metric of the main thread's registry, as /prometheus renders it. */
async function metric(line: RegExp): Promise<number> {
  const r = await b.api('GET', '/prometheus');
  const m = line.exec(r.text);
  return m ? Number(m[1]) : NaN;
}

async function watch(page: Page, filter: string): Promise<void> {
  const form = page.getByRole('form', { name: 'watch a topic filter' });
  await form.getByLabel('Topic filter').fill(filter);
  await form.getByRole('button', { name: 'Subscribe' }).click();
}

test('live messages: a filter subscribed from the page shows what mqtt.js publishes; the ACL and invalid filters are refused on the form', async () => {
  const page = await signedIn();
  const pub = await connect(b.url, { clientId: 'watch-pub' });
  try {
    await page.getByRole('link', { name: 'Watch', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'connected' }).waitFor();
    await watch(page, 'watch/+/temp');
    await page.locator('li[data-filter="watch/+/temp"]').waitFor();
    await pub.publishAsync('watch/a/temp', 'hello-watch', { qos: 1 });
    await pub.publishAsync('watch/a/other', 'not-this-one', { qos: 1 });
    const row = page.locator('tr[data-topic="watch/a/temp"]');
    await row.waitFor();
    assert.match(await row.innerText(), /hello-watch/);
    assert.equal(await page.locator('tr[data-topic="watch/a/other"]').count(), 0);
    // Binary payloads come as base64; long ones are cut.
    await pub.publishAsync('watch/b/temp', Buffer.from([0xff, 0xfe, 0x00, 0x01]), { qos: 1 });
    assert.match(await page.locator('tr[data-topic="watch/b/temp"]').innerText(), /base64: \/\/4AAQ==/);

    // The ACL refuses secret/# to the signed-in user: an error on the form, nothing subscribed.
    await watch(page, 'secret/#');
    const alert = page.getByRole('form', { name: 'watch a topic filter' }).getByRole('alert');
    assert.match(await alert.innerText(), /secret\/#: the ACL does not let admin subscribe to secret\/#/);
    assert.equal(await page.locator('li[data-filter="secret/#"]').count(), 0);
    await pub.publishAsync('secret/x', 'hidden', { qos: 1 });
    // An invalid filter and a shared subscription are refused too.
    await watch(page, 'a/#/b');
    await waitFor(async () => /'#' must be the last level/.test(await alert.innerText()), { message: 'the invalid filter refused' });
    await watch(page, '$share/g/watch/#');
    await waitFor(async () => /shared subscriptions/.test(await alert.innerText()), { message: 'the shared subscription refused' });
    assert.equal(await page.locator('tr[data-topic="secret/x"]').count(), 0);
    assert.equal(await metric(/^spindle_console_viewer_refused_total\{reason="acl"\} (\d+)/m), 1);
    assert.equal(await metric(/^spindle_console_viewer_refused_total\{reason="invalid"\} (\d+)/m), 2);

    // Unsubscribed from the page: the next message is not shown.
    await page.getByRole('button', { name: 'unsubscribe watch/+/temp' }).click();
    await page.locator('li[data-filter="watch/+/temp"]').waitFor({ state: 'detached' });
    assert.equal(await metric(/^spindle_console_viewer_filters (\d+)/m), 0);
  } finally {
    await end(pub);
    await page.close();
  }
});

test('live messages: a flood of 20,000 QoS 0 messages leaves the page responsive, the list bounded and the drops shown', async (t) => {
  const page = await signedIn();
  const pub = await connect(b.url, { clientId: 'flood-pub' });
  const FLOOD = 20_000;
  try {
    await page.getByRole('link', { name: 'Watch', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'connected' }).waitFor();
    await watch(page, 'flood/#');
    await page.locator('li[data-filter="flood/#"]').waitFor();
    assert.equal(await metric(/^spindle_console_viewers (\d+)/m), 1);
    // The page's longest gap between two animation frames while the flood arrives: its own
    // measure of being responsive (the test process, busy publishing, adds to click timings).
    // (A string: the test's compiler would wrap a function's inner functions in a helper the page lacks.)
    await page.evaluate(`{
      window.maxGap = 0;
      window.watching = true;
      let last = performance.now();
      const tick = (t) => {
        window.maxGap = Math.max(window.maxGap, t - last);
        last = t;
        if (window.watching) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }`);
    const payload = 'x'.repeat(200);
    const flood = (async () => {
      for (let i = 0; i < FLOOD; i++) {
        pub.publish(`flood/${i % 10}`, `${i} ${payload}`);
        // Let the socket drain now and then (the loop stays bounded: FLOOD messages).
        if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
      }
    })();
    await waitFor(async () => (await shown(page, 'watch-matched')) > 1000, { message: 'the flood reaching the page' });
    // While the flood runs, the page answers a click at once.
    const started = Date.now();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor({ timeout: 2000 });
    const clickMs = Date.now() - started;
    assert.ok(clickMs < 2000, `a click answered in ${clickMs} ms during the flood`);
    await page.getByRole('button', { name: 'Resume' }).click();
    await flood;
    await waitFor(async () => (await shown(page, 'watch-matched')) >= FLOOD, { message: `all ${FLOOD} matched (server side)` });
    const maxGap = Math.round(await page.evaluate<number>('window.watching = false, window.maxGap'));
    assert.ok(maxGap < 500, `the page drew a frame at least every 500 ms during the flood (longest gap ${maxGap} ms)`);
    const dropped = await shown(page, 'watch-dropped');
    // The server's bound let through fewer than the page keeps: more, in small batches, until it
    // has sent the page well over 200; the page keeps the newest 200.
    let more = 0;
    await waitFor(async () => {
      for (let i = 0; i < 50; i++) pub.publish('flood/more', `more ${more++}`);
      await pub.publishAsync('flood/more', 'sync', { qos: 1 });
      return (await shown(page, 'watch-matched')) - (await shown(page, 'watch-dropped')) > 250;
    }, { message: 'over 250 messages sent to the page' });
    await waitFor(async () => (await shown(page, 'watch-shown')) === 200, { message: 'the newest 200 kept' });
    const rows = await page.locator('table.messages tbody tr').count();
    assert.equal(rows, 200, 'the list is bounded');
    assert.match(await page.locator('table.messages tbody tr').first().innerText(), /flood\/more/, 'newest first');
    assert.ok(dropped > FLOOD / 2, `most of the flood dropped by the server's bound (${dropped})`);
    assert.ok(await metric(/^spindle_console_viewer_messages_total\{outcome="dropped",kind="message"\} (\d+)/m) >= dropped);
    // Another page opens promptly; leaving closes the socket, and its subscriptions end.
    const leaving = Date.now();
    await page.getByRole('link', { name: 'Topics', exact: true }).click();
    await page.getByRole('heading', { name: 'Topics and subscriptions' }).waitFor({ timeout: 2000 });
    const leaveMs = Date.now() - leaving;
    assert.ok(leaveMs < 2000);
    t.diagnostic(`flood of ${FLOOD}: a click answered in ${clickMs} ms during it, longest gap between frames ${maxGap} ms; ${dropped} of them dropped by the server; then ${more} more: ${rows} rows kept; another page in ${leaveMs} ms`);
    await waitFor(async () => (await metric(/^spindle_console_viewers (\d+)/m)) === 0, { message: 'the socket closed' });
    assert.equal(await metric(/^spindle_console_viewer_filters (\d+)/m), 0);
  } finally {
    await end(pub);
    await page.close();
  }
});

test('the watch socket refuses a caller not signed in and another origin; a bad request is answered with an error', async () => {
  const url = `ws://127.0.0.1:${b.admin!.port}/api/watch`;
  const status = (headers: Record<string, string>) => upgradeStatus(url, headers);
  assert.equal(await status({}), 401);
  assert.equal(await status({ cookie: 'spindle_session=not-a-token' }), 401);
  const login = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: ADMIN_PASSWORD } });
  const bearer = { authorization: `Bearer ${login.json.token}` };
  assert.equal(await status({ ...bearer, origin: 'http://evil.example' }), 403);
  assert.equal(await status({ ...bearer, origin: `http://127.0.0.1:${b.admin!.port}` }), 101);

  // Signed in, without a browser: requests and answers, and the subscription ends with the socket.
  const ws = new WebSocket(url, { headers: bearer });
  const frames: { t: string; [k: string]: unknown }[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(String(data))));
  await waitForEvent(ws, 'open');
  const next = (t: string) => waitFor(() => frames.find((f) => f.t === t), { message: `a ${t} frame` });
  ws.send('not json');
  assert.match(String((await next('error')).message), /a request is JSON/);
  ws.send(JSON.stringify({ t: 'subscribe', filter: 'raw/#' }));
  await next('subscribed');
  assert.equal(await metric(/^spindle_console_viewer_filters (\d+)/m), 1);
  const pub = await connect(b.url, { clientId: 'raw-pub' });
  await pub.publishAsync('raw/1', 'over-the-socket', { qos: 0 });
  const batch = await waitFor(() => frames.find((f) => f.t === 'messages' && (f.items as unknown[]).length > 0));
  assert.deepEqual((batch.items as { topic: string; payload: string; encoding: string }[]).map((m) => [m.topic, m.payload, m.encoding]), [['raw/1', 'over-the-socket', 'text']]);
  ws.close();
  await waitForEvent(ws, 'close');
  await waitFor(async () => (await metric(/^spindle_console_viewer_filters (\d+)/m)) === 0, { message: 'the subscription ended with the socket' });
  await end(pub);
});

test('logs: a log topic added from the page logs what mqtt.js publishes; the line is shown live, found by a query and downloaded', async () => {
  const page = await signedIn();
  const pub = await connect(b.url, { clientId: 'logs-page-pub' });
  try {
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    await page.getByRole('heading', { name: 'Logs' }).waitFor();
    const tail = page.getByRole('region', { name: 'log tail' });
    await tail.getByRole('button', { name: 'Follow' }).click();
    await tail.getByTestId('tail-lines').waitFor();
    // A log topic at ERROR (the test broker logs errors only, so the line passes the level).
    const add = page.getByRole('form', { name: 'add a log topic' });
    await add.getByLabel('Topic filter').fill('logs/demo/#');
    await add.getByLabel('Level').selectOption('ERROR');
    await add.getByRole('button', { name: 'Add' }).click();
    await page.locator('tr[data-log-topic="logs/demo/#"]').waitFor();
    // An invalid one is refused on its form.
    await add.getByLabel('Topic filter').fill('logs/#/x');
    await add.getByRole('button', { name: 'Add' }).click();
    assert.match(await page.getByRole('region', { name: 'log topics' }).getByRole('alert').innerText(), /#/);

    await pub.publishAsync('logs/demo/1', 'hello-logs-page', { qos: 1 });
    // The broker's line, live: pushed over the watch socket.
    const live = tail.locator('tr', { hasText: 'logs-page-pub' });
    await live.first().waitFor();
    assert.match(await live.first().innerText(), /ERROR[\s\S]*message on a log topic[\s\S]*hello-logs-page/);

    // And by query: text and level.
    const query = page.getByRole('region', { name: 'log query' });
    await query.getByLabel('Text').fill('logs-page-pub');
    await query.getByLabel('Level').selectOption('ERROR');
    await waitFor(async () => {
      await query.getByRole('button', { name: 'Search' }).click();
      return (await query.locator('tbody tr', { hasText: 'hello-logs-page' }).count()) > 0;
    }, { message: 'the line found by a query' });
    assert.match(await query.getByTestId('log-total').innerText(), /^1 entry,/);

    // Downloaded: the NDJSON of the query's filter.
    const [download] = await Promise.all([page.waitForEvent('download'), query.getByRole('link', { name: 'Download', exact: true }).click()]);
    const text = await readFile((await download.path())!, 'utf8');
    const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; clientId: string; payload: string });
    assert.equal(lines.length, 1);
    assert.equal(lines[0].clientId, 'logs-page-pub');
    assert.equal(lines[0].payload, 'hello-logs-page');
    assert.match(download.suggestedFilename(), /\.ndjson$/);

    // A client trace started and stopped from the page.
    const trace = page.getByRole('form', { name: 'trace a client' });
    await trace.getByLabel('Client id').fill('traced-client');
    await trace.getByRole('button', { name: 'Trace' }).click();
    const traced = page.locator('tr[data-trace="traced-client"]');
    await traced.waitFor();
    await traced.getByRole('button', { name: 'Stop' }).click();
    await traced.waitFor({ state: 'detached' });
    // The log topic deleted from the page.
    await page.locator('tr[data-log-topic="logs/demo/#"]').getByRole('button', { name: 'Delete' }).click();
    await page.locator('tr[data-log-topic="logs/demo/#"]').waitFor({ state: 'detached' });
  } finally {
    await end(pub);
    await page.close();
  }
});

test('logs: old log files deleted from the page after a confirmation (a cancel keeps them); the query shows them gone', async () => {
  const marker = 'old-line-to-delete';
  const added = await b.api('POST', '/log/add', { body: { level: 'ERROR', message: marker } });
  assert.equal(added.status, 200, added.text);
  const markerCount = async (): Promise<number> => (await b.api('POST', '/log/query', { body: { text: marker } })).json.total as number;
  await waitFor(async () => (await markerCount()) === 1, { message: 'the line stored' });
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    const listed = page.getByRole('region', { name: 'log query' }).locator('tbody tr', { hasText: marker });
    await listed.waitFor();
    const form = page.getByRole('form', { name: 'delete old log files' });
    // A minute from now in the browser's local time: every file is older.
    const later = await page.evaluate(() => new Date(Date.now() + 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 19));
    await form.getByLabel('Older than').fill(later);
    await form.getByRole('button', { name: 'Delete files' }).click();
    // Cancelled: nothing deleted.
    await form.getByRole('group', { name: 'confirm' }).getByRole('button', { name: 'Cancel' }).click();
    const ask = form.getByRole('button', { name: 'Delete files' });
    await waitFor(() => ask.evaluate((el) => el === document.activeElement), { message: 'the focus back on Delete files' });
    assert.equal(await markerCount(), 1);
    // Confirmed (the confirm button has the focus: Enter deletes).
    await form.getByRole('button', { name: 'Delete files' }).click();
    const yes = form.getByRole('button', { name: 'Yes, delete' });
    await waitFor(() => yes.evaluate((el) => el === document.activeElement), { message: 'the confirm button focused' });
    await page.keyboard.press('Enter');
    await waitFor(async () => /^[1-9]\d* files? deleted or emptied$/.test(await form.getByTestId('log-delete-result').innerText()), { message: 'the result shown' });
    assert.equal(await markerCount(), 0);
    // The page's query ran again: the line is no longer listed.
    await listed.waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});

test('logs and live messages: a viewer sees no buttons that change things, and can still watch', async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${b.base}/`);
    await page.getByLabel('Username').fill('viewer');
    await page.getByLabel('Password').fill('viewer-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'pages' }).waitFor();
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    await page.getByRole('region', { name: 'log topics' }).waitFor();
    assert.equal(await page.getByRole('form', { name: 'add a log topic' }).count(), 0);
    assert.equal(await page.getByRole('form', { name: 'trace a client' }).count(), 0);
    assert.equal(await page.getByRole('form', { name: 'delete old log files' }).count(), 0);
    assert.equal(await page.getByRole('region', { name: 'log level' }).getByRole('combobox').count(), 0);
    await page.getByRole('link', { name: 'Watch', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'connected' }).waitFor();
    await watch(page, 'viewer/#');
    await page.locator('li[data-filter="viewer/#"]').waitFor();
  } finally {
    await page.close();
  }
});
