// The control platform's pages of the web console in a real browser (Debian's Chromium through
// playwright-core), against a broker with the admin server: the console's session cookie is taken
// by /api/v1 (the admin is the platform's SystemAdmin, a viewer has no platform role); an
// organization, a project and an application made from the page, the application's credentials
// (shown once) connecting an mqtt.js client confined to its namespace; an API refusal shown on
// the form; an alert rule added from the page firing on real connections, its alert handled and
// the rule disabled from the page; the audit log page listing those actions, filtered.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end, nextMessages } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  // Alert rules evaluated every second, so an alert fires while the test waits for it.
  b = await startAdminBroker({ platform: { alertInterval: 1 } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

const signedIn = (username = 'admin', password = ADMIN_PASSWORD): Promise<Page> => signIn(browser, b.base, { username, password });

/** A GET from the page itself: the session cookie, nothing else. */
function fromPage(page: Page, path: string): Promise<{ status: number; body: any }> {
  return page.evaluate(async (p) => {
    const r = await fetch(p, { headers: { 'x-requested-with': 'test' } });
    return { status: r.status, body: await r.json() };
  }, path);
}

test('/api/v1 takes the console\'s session cookie: the admin is SystemAdmin, a viewer has no platform role', async () => {
  const page = await signedIn();
  try {
    const me = await fromPage(page, '/api/v1/auth/me');
    assert.equal(me.status, 200, JSON.stringify(me.body));
    assert.equal(me.body.username, 'admin');
    assert.equal(me.body.role, 'SystemAdmin');
  } finally {
    await page.close();
  }
  const viewer = await signedIn(VIEWER.username, VIEWER.password);
  try {
    assert.equal((await fromPage(viewer, '/api/v1/organizations')).status, 403);
    // The page says so, and offers nothing to change.
    await viewer.getByRole('link', { name: 'Tenants' }).click();
    await viewer.getByText(/Viewers have no role on the control platform/).waitFor();
    assert.equal(await viewer.getByRole('button', { name: 'Add organization' }).count(), 0);
  } finally {
    await viewer.close();
  }
});

test('tenants: an organization, a project and an application made from the page; its credentials, shown once, connect an mqtt.js client confined to its namespace; a refusal shown on the form', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Tenants' }).click();
    const addOrg = page.getByRole('form', { name: 'add an organization' });
    // Not a topic-safe name: the API's 400, naming the field, on the form.
    await addOrg.getByLabel('Name', { exact: true }).fill('has space');
    await addOrg.getByRole('button', { name: 'Add organization' }).click();
    assert.match(await addOrg.getByRole('alert').innerText(), /add: name: /);
    await addOrg.getByLabel('Name', { exact: true }).fill('console-org');
    await addOrg.getByLabel('Display name').fill('Console Org');
    await addOrg.getByRole('button', { name: 'Add organization' }).click();
    await page.locator('tr[data-org="console-org"]').waitFor();
    assert.equal(await addOrg.getByRole('alert').count(), 0, 'the refusal is gone once the form succeeds');
    // The same name again: 409, shown on the form.
    await addOrg.getByLabel('Name', { exact: true }).fill('console-org');
    await addOrg.getByRole('button', { name: 'Add organization' }).click();
    assert.match(await addOrg.getByRole('alert').innerText(), /add: name: .*exists/i);

    const org = page.getByRole('region', { name: 'organization console-org' });
    await org.getByRole('form', { name: 'add a project' }).getByLabel('Project name').fill('plant-1');
    await org.getByRole('button', { name: 'Add project' }).click();
    await org.locator('tr[data-project="plant-1"]').waitFor();
    const addApp = org.getByRole('form', { name: 'add an application' });
    await addApp.getByLabel('Application name').fill('sensors');
    await addApp.getByRole('button', { name: 'Add application' }).click();
    const creds = page.getByRole('status', { name: 'new application credentials' });
    await creds.waitFor();
    const appKey = await creds.getByTestId('app-key').innerText();
    const appSecret = await creds.getByTestId('app-secret').innerText();
    assert.match(appKey, /^ak_/);
    assert.match(appSecret, /^sk_/);
    const row = org.locator('tr[data-app="sensors"]');
    await row.waitFor();
    assert.match(await row.innerText(), /console-org\/plant-1\/sensors\/#/);
    // The list never carries the secret.
    assert.ok(!(await org.locator('table').last().innerText()).includes(appSecret));

    // The credentials work, inside the namespace only.
    const device = await connect(b.url, { clientId: 'console-device', username: appKey, password: appSecret, protocolVersion: 5 });
    try {
      await device.subscribeAsync('console-org/plant-1/sensors/#', { qos: 1 });
      const got = nextMessages(device, 1);
      await device.publishAsync('console-org/plant-1/sensors/t1', '21.5', { qos: 1 });
      assert.deepEqual((await got).map((m) => [m.topic, m.payload]), [['console-org/plant-1/sensors/t1', '21.5']]);
      const reason = await new Promise<number | undefined>((resolve) => {
        device.publish('elsewhere/x', 'x', { qos: 1 }, (err, packet) => resolve((err as { code?: number } | undefined)?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode));
      });
      assert.equal(reason, 0x87, 'outside its namespace: PUBACK 0x87');
      // The page's application row counts the connection (refreshed on the next load).
      await page.getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('link', { name: 'Tenants' }).click();
      await waitFor(async () => (await org.locator('tr[data-app="sensors"] td').nth(5).innerText()) === '1', { message: 'the application shows one connection' });
    } finally {
      await end(device);
    }
    // A wrong secret is refused (the secret shown was the real one).
    await assert.rejects(connect(b.url, { clientId: 'console-device-2', username: appKey, password: 'sk_wrong', protocolVersion: 5 }), (err: { code?: number }) => err.code === 0x86);

    // The application deleted from the page: its credentials are refused from then on.
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    await assert.rejects(connect(b.url, { clientId: 'console-device-3', username: appKey, password: appSecret, protocolVersion: 5 }), (err: { code?: number }) => err.code === 0x86);

    // Deleting the organization: 409 while it has projects, shown in its row; then with them.
    const orgRow = page.locator('tr[data-org="console-org"]');
    await orgRow.getByRole('button', { name: 'Delete', exact: true }).click();
    assert.match(await orgRow.getByRole('alert').innerText(), /delete: .*project/i);
    await orgRow.getByRole('button', { name: 'Delete with its projects' }).click();
    await orgRow.waitFor({ state: 'detached' });
    assert.equal((await b.api('GET', '/api/v1/organizations?name=console-org')).json.total, 0);
  } finally {
    await page.close();
  }
});

test('alerts: a rule added from the page fires on real connections; its alert is handled and the rule disabled from the page; a bad rule refused on the form', async () => {
  const page = await signedIn();
  const client = await connect(b.url, { clientId: 'console-alert-client' });
  try {
    await page.getByRole('link', { name: 'Alerts' }).click();
    const form = page.getByRole('form', { name: 'add an alert rule' });
    await form.getByLabel('Signal').selectOption('connections');
    await form.getByLabel('Name').fill('console-busy');
    await form.getByLabel('Operator').selectOption('>=');
    await form.getByLabel('Threshold').fill('1');
    await form.getByLabel('Window (s)').fill('0');
    // The browser's own checks (min) turned off, so the API's refusal is what the form shows.
    await form.evaluate((f: HTMLFormElement) => f.setAttribute('novalidate', ''));
    await form.getByRole('button', { name: 'Add rule' }).click();
    assert.match(await form.getByRole('alert').innerText(), /add: window: /);
    await form.getByLabel('Window (s)').fill('5');
    await form.getByRole('button', { name: 'Add rule' }).click();
    const rule = page.getByRole('region', { name: 'alert rules' }).locator('tr[data-rule="console-busy"]');
    await rule.waitFor();
    assert.match(await rule.innerText(), /connections last >= 1 over 5 s[\s\S]*enabled/);
    // A client is connected: the rule fires, and the page (refreshed every 5 s) shows the alert.
    const alert = page.getByRole('region', { name: 'alerts' }).locator('tr[data-alert="console-busy"]');
    await waitFor(async () => (await alert.locator('td.state').innerText()) === 'firing', { message: 'the alert firing on the page' });
    await alert.getByLabel('status of console-busy').selectOption('handled');
    await waitFor(async () => (await b.api('GET', '/api/v1/alerts?status=handled')).json.data.some((a: { ruleName: string }) => a.ruleName === 'console-busy'), { message: 'the alert handled' });
    // Disabled from the page: the rule says so and its alert resolves.
    await rule.getByRole('button', { name: 'Disable' }).click();
    await waitFor(async () => (await rule.locator('td.state').innerText()) === 'disabled', { message: 'the rule disabled' });
    await waitFor(async () => (await alert.locator('td.state').innerText()) === 'resolved', { message: 'its alert resolved' });
  } finally {
    await end(client);
    await page.close();
  }
});

test('audit log: the page lists what was done from the console, filtered by resource and action', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Audit log' }).click();
    const entries = page.getByRole('region', { name: 'audit entries' });
    await entries.locator('tr[data-action="create"][data-resource="organization"]').first().waitFor();
    const filters = page.getByRole('search', { name: 'audit log filters' });
    await filters.getByLabel('Resource', { exact: true }).fill('application');
    await filters.getByRole('button', { name: 'Search' }).click();
    await waitFor(async () => {
      const resources = await entries.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-resource')));
      return resources.length > 0 && resources.every((r) => r === 'application');
    }, { message: 'only application entries' });
    assert.match(await entries.locator('tr[data-action="create"][data-resource="application"]').first().innerText(), /admin[\s\S]*POST \/api\/v1\/applications[\s\S]*200/);
    await filters.getByLabel('Resource', { exact: true }).fill('alert-rule');
    await filters.getByRole('button', { name: 'Search' }).click();
    const create = entries.locator('tr[data-action="create"][data-resource="alert-rule"]');
    await create.first().waitFor();
    await entries.locator('tr[data-action="update"][data-resource="alert-rule"]').first().waitFor();
    await filters.getByLabel('Resource', { exact: true }).fill('');
    await filters.getByLabel('Action').fill('delete');
    await filters.getByRole('button', { name: 'Search' }).click();
    await entries.locator('tr[data-action="delete"][data-resource="organization"]').first().waitFor();
  } finally {
    await page.close();
  }
});
