// The console's shell in a real browser (Debian's Chromium through playwright-core): the grouped
// navigation and its search box (keyboard only), dark mode from the system's setting (emulated
// prefers-color-scheme), and a form generated from a route's schema: a data source's fields read
// from the OpenAPI document, a bad field refused by the server and shown at that field (a schema
// refusal and a driver's), the source created once fixed; an HTTP policy added from its form; a
// bridge added from the Bridges page's form (its forwards a fieldset each).
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';

import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { launchBrowser, openRawJson, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;
let server: http.Server;
let serverUrl: string;

before(async () => {
  b = await startAdminBroker();
  browser = await launchBrowser();
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ result: 'allow' }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

after(async () => {
  await browser?.close();
  await b?.stop();
  server?.close();
});

test('the navigation groups the pages, and its search box filters them and opens one from the keyboard', async () => {
  const page = await signIn(browser, b.base);
  try {
    const nav = page.getByRole('navigation', { name: 'pages' });
    const groups = await nav.getByRole('group').evaluateAll((els) => els.map((e) => e.querySelector('h2')?.textContent));
    assert.deepEqual(groups, ['Monitor', 'Clients', 'Messaging', 'Integration', 'Access control', 'Platform', 'System']);
    const inGroup = (group: string) => nav.getByRole('group', { name: group }).getByRole('link').allInnerTexts();
    assert.ok((await inGroup('Integration')).includes('Data sources'));
    assert.ok((await inGroup('Integration')).includes('Bridges'));
    assert.ok((await inGroup('Access control')).includes('Auth and ACL'));
    assert.ok((await inGroup('Monitor')).includes('Overview'));

    // "/" focuses the search; typing filters; Enter opens the first match.
    await page.locator('body').click({ position: { x: 600, y: 300 } });
    await page.keyboard.press('/');
    const search = nav.getByRole('searchbox', { name: 'Search pages' });
    assert.equal(await search.evaluate((el) => el === document.activeElement), true);
    await page.keyboard.type('sour');
    assert.deepEqual(await nav.getByRole('link').allInnerTexts(), ['Data sources']);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Data sources' }).waitFor();
    assert.match(page.url(), /#\/sources$/);
    assert.equal(await search.inputValue(), '', 'the search is cleared once a page is opened');

    // By group name, and the arrow keys from the box to the links.
    await search.fill('platform');
    assert.deepEqual(await nav.getByRole('link').allInnerTexts(), ['Tenants', 'Licences', 'Platform users', 'Alerts', 'Channels']);
    await search.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Licences');
    await page.keyboard.press('Enter');
    await waitFor(async () => /#\/licences$/.test(page.url()), { message: 'the link opened with Enter' });
    await search.fill('no such page');
    assert.equal(await nav.getByRole('link').count(), 0);
    assert.equal(await nav.getByRole('status').innerText(), 'No page matches.');
    await search.press('Escape');
    assert.ok(await nav.getByRole('link').count() > 20);
  } finally {
    await page.close();
  }
});

test('dark mode follows the system setting: the page and the charts take the dark colours', async () => {
  const page = await signIn(browser, b.base);
  try {
    const colours = () => page.evaluate(() => {
      const root = getComputedStyle(document.documentElement);
      return { background: root.backgroundColor, text: root.color, card: getComputedStyle(document.querySelector('.card')!).backgroundColor, axis: root.getPropertyValue('--chart-axis').trim() };
    });
    await page.emulateMedia({ colorScheme: 'light' });
    await page.locator('.chart').first().waitFor();
    const light = await colours();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await colours();
    assert.equal(light.background, 'rgb(243, 244, 246)');
    assert.equal(dark.background, 'rgb(11, 17, 32)');
    assert.notEqual(dark.text, light.text);
    assert.notEqual(dark.card, light.card);
    assert.notEqual(dark.axis, light.axis, "the charts' axes and grid read their colours from the scheme");
  } finally {
    await page.close();
  }
});

test("a data source's form is generated from its type's schema: a bad field refused by the server is shown at that field; fixed, the source is created", async () => {
  const page = await signIn(browser, b.base);
  try {
    await page.getByRole('link', { name: 'Data sources' }).click();
    const form = page.getByRole('form', { name: 'add a data source' });
    await form.getByLabel('Type').selectOption('http');
    // The http type's fields, from the schema: url required, method an enum, numbers with their
    // range and default, tls a checkbox, headers "name: value" lines; no JSON to type.
    const url = form.locator('[data-field="config.url"] input');
    assert.equal(await url.getAttribute('required'), '');
    assert.equal(await form.locator('[data-field="config.url"] label .name').innerText(), 'url *', 'marked required');
    assert.deepEqual(await form.locator('[data-field="config.method"] option').allInnerTexts(), ['(default POST)', 'POST', 'PUT', 'PATCH', 'GET', 'DELETE']);
    const timeout = form.locator('[data-field="config.timeout"] input');
    assert.equal(await timeout.getAttribute('type'), 'number');
    assert.equal(await timeout.getAttribute('min'), '100');
    assert.equal(await timeout.getAttribute('max'), '600000');
    assert.equal(await timeout.inputValue(), '5000', 'the default filled in');
    assert.equal(await form.locator('[data-field="config.tls"] input').getAttribute('type'), 'checkbox');
    assert.equal(await form.getByLabel('Config (JSON)').isVisible(), false, 'the raw JSON is hidden by default');

    // A mongodb source's fields are its own (the form follows the type): its password a password input.
    await form.getByLabel('Type').selectOption('mongodb');
    assert.equal(await form.locator('[data-field="config.password"] input').getAttribute('type'), 'password');
    assert.equal(await form.locator('[data-field="config.authSource"] input').count(), 1);
    await form.getByLabel('Type').selectOption('http');

    await form.getByLabel('Name', { exact: true }).fill('form-hook');
    // Refused by the route's schema (the http branch of the body): shown at the timeout field.
    await url.fill(`${serverUrl}/ingest`);
    await timeout.fill('50');
    await form.getByRole('button', { name: 'Add source' }).click();
    const timeoutError = form.locator('[data-field="config.timeout"] [role="alert"]');
    await timeoutError.waitFor();
    assert.equal(await timeoutError.innerText(), 'must be between 100 and 600000, got 50');
    assert.equal(await form.locator('[data-field="config.timeout"] input').getAttribute('aria-invalid'), 'true');
    assert.equal(await form.getByRole('alert').count(), 1, 'shown at its field only');

    // Refused by the driver (not a URL): shown at the url field.
    await timeout.fill('5000');
    await url.fill('not a url');
    await form.getByRole('button', { name: 'Add source' }).click();
    const urlError = form.locator('[data-field="config.url"] [role="alert"]');
    await urlError.waitFor();
    assert.equal(await urlError.innerText(), 'is not a valid URL');
    assert.equal(await timeoutError.count(), 0);

    // Fixed: created, with only what differs from the defaults sent.
    await url.fill(`${serverUrl}/ingest`);
    await form.locator('[data-field="config.headers"] textarea').fill('x-api-key: k1');
    await form.getByRole('button', { name: 'Add source' }).click();
    await page.locator('tr[data-source="form-hook"]').waitFor();
    assert.equal(await form.getByRole('alert').count(), 0);
    const source = (await b.api('POST', '/source/query', { body: { name: 'form-hook' } })).json.data[0];
    assert.equal(source.type, 'http');
    assert.equal(source.config.url, `${serverUrl}/ingest`);
    assert.deepEqual(source.config.headers, { 'x-api-key': 'k1' });
    assert.equal(await url.inputValue(), '', 'the form back to its defaults');
  } finally {
    await page.close();
  }
});

test('an HTTP authentication policy from its generated form: a field out of range shown there, then added; the raw JSON escape hatch', async () => {
  const page = await signIn(browser, b.base);
  try {
    await page.getByRole('link', { name: 'Auth and ACL' }).click();
    const chain = page.getByRole('region', { name: 'Authentication policies' });
    const form = chain.getByRole('form', { name: 'add an authentication policy' });
    await form.getByLabel('Type').selectOption('http');
    await form.getByLabel('Name', { exact: true }).fill('form-auth');
    await form.locator('[data-field="config.url"] input').fill(`${serverUrl}/auth`);
    await form.locator('[data-field="config.timeout"] input').fill('99999');
    await form.getByRole('button', { name: 'Add policy' }).click();
    const error = form.locator('[data-field="config.timeout"] [role="alert"]');
    await error.waitFor();
    assert.equal(await error.innerText(), 'must be between 100 and 60000, got 99999');
    await form.locator('[data-field="config.timeout"] input').fill('2000');
    // The raw JSON starts from the fields; edited there, it is what is sent.
    const raw = await openRawJson(form);
    assert.deepEqual(JSON.parse(await raw.inputValue()), { url: `${serverUrl}/auth`, timeout: 2000 });
    await raw.fill(JSON.stringify({ url: `${serverUrl}/auth`, timeout: 3000 }));
    await form.getByRole('button', { name: 'Add policy' }).click();
    await chain.locator('tr[data-policy="form-auth"]').waitFor();
    const policy = (await b.api('POST', '/auth/query', { body: { name: 'form-auth' } })).json.data[0];
    assert.equal(policy.config.timeout, 3000);
  } finally {
    await page.close();
  }
});

test("the Bridges page: a bridge's form from its route's schema, its forwards a fieldset each; a refusal shown at the field it names, then the bridge added", async () => {
  const page = await signIn(browser, b.base);
  try {
    await page.getByRole('link', { name: 'Bridges' }).click();
    const form = page.getByRole('form', { name: 'add a bridge' });
    const input = (f: string) => form.locator(`[data-field="${f}"]`).locator('input, select, textarea').first();
    await input('name').waitFor();
    assert.equal(await input('name').getAttribute('required'), '');
    assert.equal(await input('password').getAttribute('type'), 'password');
    assert.deepEqual(await form.locator('[data-field="protocolVersion"] option').allInnerTexts(), ['', '4', '5']);
    await input('name').fill('form-bridge');
    await input('url').fill('mqtt://127.0.0.1:1');
    await form.getByRole('button', { name: 'Add forwards' }).click();
    await input('forwards[0].filter').fill('plant/#');
    await input('forwards[0].remotePrefix').fill('site-a/');
    await input('keepalive').fill('70000');
    await form.getByRole('button', { name: 'Add bridge' }).click();
    const error = form.locator('[data-field="keepalive"] [role="alert"]');
    await error.waitFor();
    assert.equal(await error.innerText(), 'must be between 0 and 65535, got 70000');
    await input('keepalive').fill('30');
    await input('forwards[0].remotePrefix').fill('site/#/');
    await form.getByRole('button', { name: 'Add bridge' }).click();
    const prefixError = form.locator('[data-field="forwards[0].remotePrefix"] [role="alert"]');
    await prefixError.waitFor();
    assert.match(await prefixError.innerText(), /wildcard|#/);
    await input('forwards[0].remotePrefix').fill('site-a/');
    await form.getByRole('button', { name: 'Add bridge' }).click();
    await page.locator('tr[data-bridge="form-bridge"]').waitFor();
    const [bridge] = (await b.api('POST', '/bridge/query', { body: { name: 'form-bridge' } })).json.data;
    assert.equal(bridge.keepalive, 30);
    assert.equal(bridge.forwards[0].filter, 'plant/#');
    assert.equal(bridge.forwards[0].remotePrefix, 'site-a/');
  } finally {
    await page.close();
  }
});
