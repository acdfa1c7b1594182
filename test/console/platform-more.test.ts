// More of the control platform's pages in a real browser (Debian's Chromium through
// playwright-core): notification channels (a webhook added from the page, its test action
// delivering to an HTTP server the test runs, a failing test shown as an error, disable and
// enable, a delete refused while a rule uses it), an alert rule given that channel from the page
// firing and the webhook receiving the alert, the rule changed from the page; an application's
// secret rotated from the page (the old secret refused, the new one accepted by an mqtt.js
// CONNECT); an organization and a project changed from the page; an application's name,
// description and namespace changed from the page (its client confined to the new namespace); a
// channel's name and URL and an alert rule's signal and aggregation changed; a licence granted from the page
// with its usage shown from real connections, changed and withdrawn; platform users added,
// changed (role, e-mail, password) and deleted from the page; refusals shown on the forms; viewers shown nothing to change.
// needs: broker, chromium
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

interface Hook {
  url: string;
  bodies: { path: string; headers: http.IncomingHttpHeaders; body: any }[];
  close(): void;
}

/** An HTTP server taking webhook POSTs: 200 on /hook, 500 on /fail. */
async function receiver(): Promise<Hook> {
  const bodies: Hook['bodies'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      bodies.push({ path: req.url ?? '', headers: req.headers, body });
      res.statusCode = req.url === '/fail' ? 500 : 200;
      res.end(req.url === '/fail' ? 'broken on purpose' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, close: () => server.close() };
}

let hook: Hook;

before(async () => {
  // Alert rules evaluated every second, so an alert fires while the test waits for it.
  b = await startAdminBroker({ platform: { alertInterval: 1 } });
  browser = await launchBrowser();
  hook = await receiver();
});

after(async () => {
  hook?.close();
  await browser?.close();
  await b?.stop();
});

const signedIn = (username = 'admin', password = ADMIN_PASSWORD): Promise<Page> => signIn(browser, b.base, { username, password });
const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'pages' }).getByRole('link', { name, exact: true }).click();

/** Opens the Tenants page and an organization's panel on it; answers the panel. */
async function openOrganization(page: Page, name: string) {
  await nav(page, 'Tenants');
  await page.locator(`tr[data-org="${name}"]`).getByRole('button', { name }).click();
  return page.getByRole('region', { name: `organization ${name}` });
}

async function v1(method: string, path: string, body?: unknown): Promise<any> {
  const r = await b.api(method, `/api/v1${path}`, body === undefined ? {} : { body });
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  // One record comes as {code, message, data}; a list as {data, total, page, size}.
  return 'total' in r.json ? r.json : r.json.data;
}

/** An organization, a project and an application made through the API. */
async function tenant(name: string): Promise<{ org: any; project: any; app: any }> {
  const org = await v1('POST', '/organizations', { name });
  const project = await v1('POST', '/projects', { organizationId: org.id, name: 'p1' });
  const app = await v1('POST', '/applications', { projectId: project.id, name: 'devices' });
  return { org, project, app };
}

test('viewers: the new pages say the platform is not theirs and offer nothing to change', async () => {
  const viewer = await signedIn(VIEWER.username, VIEWER.password);
  try {
    for (const [link, button] of [['Channels', 'Add channel'], ['Licences', 'Add licence'], ['Platform users', 'Add user']]) {
      await nav(viewer, link);
      await viewer.getByText(/Viewers have no role on the control platform/).waitFor();
      assert.equal(await viewer.getByRole('button', { name: button }).count(), 0, link);
      assert.equal(await viewer.getByRole('button', { name: 'Delete' }).count(), 0, link);
    }
  } finally {
    await viewer.close();
  }
});

test('channels and alert rules: a webhook added from the page, its test delivered (and a failing one shown as an error); a rule notifying it fires to the webhook; the rule (signal and aggregation too) and the channel\'s name and URL changed from the page', async () => {
  const page = await signedIn();
  let client: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    await nav(page, 'Channels');
    const add = page.getByRole('form', { name: 'add a notification channel' });
    // Not http(s): the API's refusal, naming the field, on the form.
    await add.getByLabel('Name').fill('ops hook');
    await add.getByLabel('URL').fill('ftp://127.0.0.1/x');
    await add.getByRole('button', { name: 'Add channel' }).click();
    assert.match(await add.getByRole('alert').innerText(), /add: config\.url: /);
    await add.getByLabel('URL').fill(`${hook.url}/hook`);
    await add.getByLabel('Headers').fill('X-Team: ops\nAuthorization: Bearer hook-token');
    await add.getByRole('button', { name: 'Add channel' }).click();
    const list = page.getByRole('region', { name: 'notification channels' });
    const row = list.locator('tr[data-channel="ops hook"]');
    await row.waitFor();
    assert.equal(await add.getByRole('alert').count(), 0, 'the refusal is gone once the form succeeds');
    assert.match(await row.innerText(), /platform\s+webhook\s+http:\/\/127\.0\.0\.1:\d+\/hook\s+enabled/);
    const stored = (await v1('GET', '/notification-channels')).data.find((c: any) => c.name === 'ops hook');
    assert.deepEqual(stored.config.headers, { 'X-Team': 'ops', Authorization: '******' }, 'the token kept as a secret');

    // The test action: delivered to the server, and the page says so.
    await row.getByRole('button', { name: 'Test' }).click();
    assert.match(await row.getByRole('status').innerText(), /test: delivered \(HTTP 200, \d+ ms\)/);
    const test_ = hook.bodies.find((x) => x.path === '/hook' && x.body?.kind === 'test');
    assert.ok(test_, 'the webhook got the test notice');
    assert.equal(test_.headers.authorization, 'Bearer hook-token');
    assert.equal(test_.headers['x-team'], 'ops');

    // A channel whose server answers 500: its test is shown as an error in its row.
    await add.getByLabel('Name').fill('broken hook');
    await add.getByLabel('URL').fill(`${hook.url}/fail`);
    await add.getByRole('button', { name: 'Add channel' }).click();
    const broken = list.locator('tr[data-channel="broken hook"]');
    await broken.getByRole('button', { name: 'Test' }).click();
    assert.match(await broken.getByRole('alert').innerText(), /test: failed: .*500/);
    assert.ok(hook.bodies.some((x) => x.path === '/fail'), 'the failing server was asked');
    // Disable, enable, delete from the page.
    await broken.getByRole('button', { name: 'Disable' }).click();
    await waitFor(async () => (await broken.locator('td.state').innerText()) === 'disabled', { message: 'the channel disabled' });
    assert.equal((await v1('GET', `/notification-channels/${(await v1('GET', '/notification-channels?name=broken')).data[0].id}`)).enabled, false);
    await broken.getByRole('button', { name: 'Enable' }).click();
    await waitFor(async () => (await broken.locator('td.state').innerText()) === 'enabled', { message: 'the channel enabled' });
    await broken.getByRole('button', { name: 'Delete' }).click();
    await broken.waitFor({ state: 'detached' });

    // An alert rule notifying the channel, chosen on the page.
    await nav(page, 'Alerts');
    const form = page.getByRole('form', { name: 'add an alert rule' });
    await form.getByLabel('Signal').selectOption('connections');
    await form.getByLabel('Name').fill('hooked-busy');
    await form.getByLabel('Operator').selectOption('>=');
    await form.getByLabel('Threshold').fill('1');
    await form.getByLabel('Window (s)').fill('2');
    await form.getByRole('group', { name: 'channels' }).getByLabel('ops hook (webhook)').check();
    await form.getByRole('button', { name: 'Add rule' }).click();
    const rule = page.getByRole('region', { name: 'alert rules' }).locator('tr[data-rule="hooked-busy"]');
    await rule.waitFor();
    assert.match(await rule.locator('td.channels').innerText(), /^ops hook$/);
    const stored2 = (await v1('GET', '/alert-rules?name=hooked-busy')).data[0];
    assert.deepEqual(stored2.channelIds, [stored.id]);

    // A client connected: the rule fires and the webhook receives the alert.
    client = await connect(b.url, { clientId: 'console-hooked-client' });
    const fired = await waitFor(() => hook.bodies.find((x) => x.path === '/hook' && x.body?.kind === 'firing' && x.body?.ruleName === 'hooked-busy'), { message: 'the webhook received the firing alert' });
    assert.equal(fired.body.signal, 'connections');
    assert.equal(fired.body.threshold, 1);

    // The channel in use: its delete is refused (409), shown in its row.
    await nav(page, 'Channels');
    await row.getByRole('button', { name: 'Delete' }).click();
    assert.match(await row.getByRole('alert').innerText(), /delete ops hook: .*hooked-busy/);

    // The rule changed from the page: threshold, severity, no channel; a bad value refused on its form.
    await nav(page, 'Alerts');
    await rule.getByRole('button', { name: 'Change' }).click();
    const change = page.getByRole('form', { name: 'change alert rule hooked-busy' });
    await change.evaluate((f: HTMLFormElement) => f.setAttribute('novalidate', ''));
    await change.getByLabel('Window (s)').fill('0');
    await change.getByRole('button', { name: 'Save' }).click();
    assert.match(await change.getByRole('alert').innerText(), /change: window: /);
    await change.getByLabel('Window (s)').fill('10');
    await change.getByLabel('Threshold').fill('1000');
    await change.getByLabel('Severity').selectOption('critical');
    await change.getByLabel('ops hook (webhook)').uncheck();
    await change.getByRole('button', { name: 'Save' }).click();
    await change.waitFor({ state: 'detached' });
    await waitFor(async () => /connections last >= 1000 over 10 s/.test(await rule.innerText()), { message: 'the rule row shows the change' });
    const changed = (await v1('GET', `/alert-rules/${stored2.id}`));
    assert.equal(changed.threshold, 1000);
    assert.equal(changed.window, 10);
    assert.equal(changed.severity, 'critical');
    assert.deepEqual(changed.channelIds, []);
    // Its signal and aggregation changed from the page (the organization is fixed).
    await rule.getByRole('button', { name: 'Change' }).click();
    const change2 = page.getByRole('form', { name: 'change alert rule hooked-busy' });
    await change2.getByLabel('Signal').selectOption('messages.received');
    await change2.getByLabel('Aggregation').selectOption('increase');
    await change2.getByRole('button', { name: 'Save' }).click();
    await change2.waitFor({ state: 'detached' });
    await waitFor(async () => /messages\.received increase >= 1000 over 10 s/.test(await rule.innerText()), { message: 'the rule row shows the new signal' });
    const changed2 = (await v1('GET', `/alert-rules/${stored2.id}`));
    assert.equal(changed2.signal, 'messages.received');
    assert.equal(changed2.aggregation, 'increase');
    assert.equal(changed2.threshold, 1000);

    // The channel's name and URL changed from the page (an ftp: URL refused on its form); the
    // Authorization header, shown as ******, kept (same origin): its test reaches the new path with it.
    await nav(page, 'Channels');
    await row.getByRole('button', { name: 'Change' }).click();
    const changeChannel = page.getByRole('form', { name: 'change channel ops hook' });
    assert.match(await changeChannel.getByLabel('Headers').inputValue(), /Authorization: \*{6}/);
    await changeChannel.getByLabel('URL').fill('ftp://127.0.0.1/x');
    await changeChannel.getByRole('button', { name: 'Save' }).click();
    assert.match(await changeChannel.getByRole('alert').innerText(), /change ops hook: config\.url: /);
    await changeChannel.getByLabel('Name').fill('ops pager');
    await changeChannel.getByLabel('URL').fill(`${hook.url}/moved`);
    await changeChannel.getByRole('button', { name: 'Save' }).click();
    await changeChannel.waitFor({ state: 'detached' });
    const moved = list.locator('tr[data-channel="ops pager"]');
    await waitFor(async () => /\/moved/.test(await moved.innerText()), { message: 'the row shows the new URL' });
    const storedMoved = await v1('GET', `/notification-channels/${stored.id}`);
    assert.equal(storedMoved.name, 'ops pager');
    assert.equal(storedMoved.config.url, `${hook.url}/moved`);
    await moved.getByRole('button', { name: 'Test' }).click();
    assert.match(await moved.getByRole('status').innerText(), /test: delivered \(HTTP 200/);
    const movedTest = hook.bodies.find((x) => x.path === '/moved' && x.body?.kind === 'test');
    assert.ok(movedTest, 'the test notice reached the new URL');
    assert.equal(movedTest.headers.authorization, 'Bearer hook-token');
    // No rule uses the channel now: it is deleted from the page.
    await moved.getByRole('button', { name: 'Delete' }).click();
    await moved.waitFor({ state: 'detached' });
    await nav(page, 'Alerts');
    await rule.getByRole('button', { name: 'Delete' }).click();
    await rule.waitFor({ state: 'detached' });
  } finally {
    if (client) await end(client);
    await page.close();
  }
});

test('tenants: an application\'s secret rotated from the page (old refused, new accepted); an organization and a project changed from the page', async () => {
  const { app } = await tenant('rotate-org');
  const page = await signedIn();
  try {
    const org = await openOrganization(page, 'rotate-org');
    const row = org.locator('tr[data-app="devices"]');
    await row.getByRole('button', { name: 'Rotate secret' }).click();
    const creds = page.getByRole('status', { name: 'new application credentials' });
    await creds.waitFor();
    assert.match(await creds.innerText(), /old secret is refused/);
    assert.equal(await creds.getByTestId('app-key').innerText(), app.appKey);
    const secret = await creds.getByTestId('app-secret').innerText();
    assert.match(secret, /^sk_/);
    assert.notEqual(secret, app.appSecret);
    await assert.rejects(connect(b.url, { clientId: 'rotated-old', username: app.appKey, password: app.appSecret, protocolVersion: 5 }), (err: { code?: number }) => err.code === 0x86);
    const device = await connect(b.url, { clientId: 'rotated-new', username: app.appKey, password: secret, protocolVersion: 5 });
    await end(device);

    // The organization's display name and description.
    const changeOrg = org.getByRole('form', { name: 'change the organization' });
    await changeOrg.getByLabel('Display name').fill('Rotate Org Ltd');
    await changeOrg.getByLabel('Description').fill('changed from the console');
    await changeOrg.getByRole('button', { name: 'Save organization' }).click();
    await waitFor(async () => (await page.locator('tr[data-org="rotate-org"]').innerText()).includes('Rotate Org Ltd'), { message: 'the organization row shows the new display name' });
    const o = (await v1('GET', '/organizations?name=rotate-org')).data[0];
    assert.equal(o.displayName, 'Rotate Org Ltd');
    assert.equal(o.description, 'changed from the console');

    // A project renamed; a name another project has is refused.
    await v1('POST', '/projects', { organizationId: o.id, name: 'p2' });
    await nav(page, 'Overview');
    await openOrganization(page, 'rotate-org');
    await org.locator('tr[data-project="p1"]').getByRole('button', { name: 'Change' }).click();
    const changeProject = org.getByRole('form', { name: 'change project p1' });
    await changeProject.getByLabel('Project name').fill('p2');
    await changeProject.getByRole('button', { name: 'Save' }).click();
    assert.match(await org.getByRole('alert').innerText(), /change p1: name: /);
    await changeProject.getByLabel('Project name').fill('plant-a');
    await changeProject.getByRole('button', { name: 'Save' }).click();
    await org.locator('tr[data-project="plant-a"]').waitFor();
    assert.equal(await org.getByRole('alert').count(), 0);
    assert.equal((await v1('GET', `/projects?organizationId=${o.id}&name=plant-a`)).total, 1);
  } finally {
    await page.close();
  }
});

test('tenants: an application\'s name, description and namespace changed from the page (an overlapping namespace refused on its form); its client is confined to the new namespace', async () => {
  const { project, app } = await tenant('ns-org');
  await v1('POST', '/applications', { projectId: project.id, name: 'other', namespace: 'ns-org/p1/other' });
  const page = await signedIn();
  let device: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    const org = await openOrganization(page, 'ns-org');
    const row = org.locator('tr[data-app="devices"]');
    await row.getByRole('button', { name: 'Change' }).click();
    const change = org.getByRole('form', { name: 'change application devices' });
    await change.getByLabel('Namespace').fill('ns-org/p1/other/#');
    await change.getByRole('button', { name: 'Save' }).click();
    assert.match(await change.getByRole('alert').innerText(), /change devices: namespace: .*overlaps the namespace of application other/);
    await change.getByLabel('Application name').fill('meters');
    await change.getByLabel('Description').fill('moved by the console');
    await change.getByLabel('Namespace').fill('ns-org/meters/#');
    await change.getByRole('button', { name: 'Save' }).click();
    await change.waitFor({ state: 'detached' });
    const moved = org.locator('tr[data-app="meters"]');
    await waitFor(async () => /ns-org\/meters/.test(await moved.innerText()), { message: 'the row shows the new namespace' });
    const stored = await v1('GET', `/applications/${app.id}`);
    assert.equal(stored.name, 'meters');
    assert.equal(stored.description, 'moved by the console');
    assert.match(stored.namespace, /^ns-org\/meters(\/#)?$/);

    // Its client: inside the new namespace accepted, the old one refused (PUBACK 0x87).
    device = await connect(b.url, { clientId: 'ns-moved', username: app.appKey, password: app.appSecret, protocolVersion: 5 });
    const reasonOf = (topic: string): Promise<number | undefined> => new Promise((resolve) => {
      device!.publish(topic, 'x', { qos: 1 }, (err, packet) => resolve((err as { code?: number } | undefined)?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode));
    });
    assert.ok([undefined, 0, 0x10].includes(await reasonOf('ns-org/meters/m1')), 'inside the new namespace');
    assert.equal(await reasonOf('ns-org/p1/devices/m1'), 0x87, 'the old namespace: PUBACK 0x87');
  } finally {
    if (device) await end(device);
    await page.close();
  }
});

test('licences: granted from the page, shown with the usage of real connections, changed and withdrawn; a second licence for the same tenant refused on the form', async () => {
  const { org, app } = await tenant('licensed-org');
  const page = await signedIn();
  const clients: Awaited<ReturnType<typeof connect>>[] = [];
  try {
    await nav(page, 'Licences');
    const add = page.getByRole('form', { name: 'add a licence' });
    await add.getByLabel(/^Organization/).selectOption({ label: 'licensed-org' });
    await add.getByLabel('Max connections').fill('1');
    await add.getByLabel('Max messages/s').fill('50');
    await add.getByLabel('Features').fill('rules, bridges');
    await add.getByRole('button', { name: 'Add licence' }).click();
    const row = page.getByRole('region', { name: 'licences' }).locator('tr[data-license="licensed-org/whole organization"]');
    await row.waitFor();
    assert.match(await row.locator('[data-testid="connections"]').innerText(), /^0 of 1 \(0%\)$/);
    assert.match(await row.innerText(), /rules, bridges/);
    // The same organization again: 409, on the form.
    await add.getByLabel('Max connections').fill('2');
    await add.getByRole('button', { name: 'Add licence' }).click();
    assert.match(await add.getByRole('alert').innerText(), /add: organizationId: .*licence/);

    // A device of the organization connects: the page (refreshed every 5 s) shows it against the limit.
    clients.push(await connect(b.url, { clientId: 'licensed-1', username: app.appKey, password: app.appSecret, protocolVersion: 5 }));
    await waitFor(async () => (await row.locator('[data-testid="connections"]').innerText()) === '1 of 1 (100%)', { message: 'the licence shows one connection of one' });
    // The limit is the API's: a second device is refused (0x97).
    await assert.rejects(connect(b.url, { clientId: 'licensed-2', username: app.appKey, password: app.appSecret, protocolVersion: 5 }), (err: { code?: number }) => err.code === 0x97);

    // Changed from the page: the limit raised; a bad value refused on the change form.
    await row.getByRole('button', { name: 'Change' }).click();
    const change = page.getByRole('form', { name: 'change the licence of licensed-org/whole organization' });
    await change.evaluate((f: HTMLFormElement) => f.setAttribute('novalidate', ''));
    await change.getByLabel('Max messages/s').fill('0');
    await change.getByRole('button', { name: 'Save' }).click();
    assert.match(await change.getByRole('alert').innerText(), /change: maxMessageRate: /);
    await change.getByLabel('Max messages/s').fill('');
    await change.getByLabel('Max connections').fill('4');
    await change.getByRole('button', { name: 'Save' }).click();
    await change.waitFor({ state: 'detached' });
    await waitFor(async () => (await row.locator('[data-testid="connections"]').innerText()) === '1 of 4 (25%)', { message: 'the licence shows the new limit' });
    assert.equal(await row.locator('[data-testid="rate"]').innerText(), '0 (no limit)');
    clients.push(await connect(b.url, { clientId: 'licensed-2', username: app.appKey, password: app.appSecret, protocolVersion: 5 }));
    const l = (await v1('GET', `/licenses?organizationId=${org.id}`)).data[0];
    assert.equal(l.maxConnections, 4);
    assert.equal(l.maxMessageRate, null);

    // Withdrawn from the page.
    await row.getByRole('button', { name: 'Withdraw' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await v1('GET', `/licenses?organizationId=${org.id}`)).total, 0);
  } finally {
    await end(...clients);
    await page.close();
  }
});

test('platform users: added from the page (a refusal on the form), signing in to /api/v1, role, e-mail and password changed (the new password signing in) and deleted from the page', async () => {
  const { org, project } = await tenant('people-org');
  const page = await signedIn();
  try {
    await nav(page, 'Platform users');
    const add = page.getByRole('form', { name: 'add a platform user' });
    await add.getByLabel('Username').fill('ops-lead');
    await add.getByLabel('Password').fill('short');
    await add.getByLabel(/^Role/).selectOption('OrganizationAdmin');
    await add.getByLabel(/^Organization/).selectOption({ label: 'people-org' });
    await add.getByRole('button', { name: 'Add user' }).click();
    assert.match(await add.getByRole('alert').innerText(), /add: password: /);
    await add.getByLabel('Password').fill('ops-lead-password');
    await add.getByLabel('E-mail').fill('lead@people.test');
    await add.getByRole('button', { name: 'Add user' }).click();
    const row = page.getByRole('region', { name: 'platform users' }).locator('tr[data-platform-user="ops-lead"]');
    await row.waitFor();
    assert.match(await row.innerText(), /ops-lead\s+lead@people\.test\s+OrganizationAdmin\s+people-org/);
    assert.equal(await add.getByRole('alert').count(), 0);
    const login = await b.api('POST', '/api/v1/auth/login', { body: { username: 'ops-lead', password: 'ops-lead-password' }, as: 'none' });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.json.user.role, 'OrganizationAdmin');
    assert.equal(login.json.user.organizationId, org.id);

    // Role changed: a ProjectAdmin needs a project (refused on the row's form), then given one.
    await row.getByRole('button', { name: 'Change role' }).click();
    const change = page.getByRole('form', { name: 'change the role of ops-lead' });
    await change.getByLabel(/^Role/).selectOption('ProjectAdmin');
    await change.getByRole('button', { name: 'Save' }).click();
    assert.match(await change.getByRole('alert').innerText(), /change role: projectId: /);
    await change.getByLabel(/^Project/).selectOption({ label: 'p1' });
    await change.getByRole('button', { name: 'Save' }).click();
    await change.waitFor({ state: 'detached' });
    await waitFor(async () => (await row.locator('td.role').innerText()) === 'ProjectAdmin', { message: 'the row shows the new role' });
    const u = (await v1('GET', '/users?username=ops-lead')).data[0];
    assert.equal(u.role, 'ProjectAdmin');
    assert.equal(u.projectId, project.id);

    // E-mail and password changed from the page (a short password refused on the row's form):
    // the new password signs in, the old one no longer does.
    await row.getByRole('button', { name: 'Change e-mail or password' }).click();
    const account = page.getByRole('form', { name: 'change the e-mail or password of ops-lead' });
    assert.equal(await account.getByLabel('E-mail').inputValue(), 'lead@people.test');
    await account.getByLabel('E-mail').fill('pm@people.test');
    await account.getByLabel('New password').fill('short');
    await account.getByRole('button', { name: 'Save' }).click();
    assert.match(await account.getByRole('alert').innerText(), /change: password: /);
    await account.getByLabel('New password').fill('new-lead-password');
    await account.getByRole('button', { name: 'Save' }).click();
    await account.waitFor({ state: 'detached' });
    await waitFor(async () => (await row.innerText()).includes('pm@people.test'), { message: 'the row shows the new e-mail' });
    assert.equal((await v1('GET', '/users?username=ops-lead')).data[0].email, 'pm@people.test');
    const relogin = await b.api('POST', '/api/v1/auth/login', { body: { username: 'ops-lead', password: 'new-lead-password' }, as: 'none' });
    assert.equal(relogin.status, 200, relogin.text);
    assert.equal((await b.api('POST', '/api/v1/auth/login', { body: { username: 'ops-lead', password: 'ops-lead-password' }, as: 'none' })).status, 401);

    // The signed-in admin cannot delete themself: the refusal in their row.
    const me = page.getByRole('region', { name: 'platform users' }).locator('tr[data-platform-user="admin"]');
    await me.getByRole('button', { name: 'Delete' }).click();
    assert.match(await me.getByRole('alert').innerText(), /delete admin: .*yourself/);

    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await b.api('POST', '/api/v1/auth/login', { body: { username: 'ops-lead', password: 'new-lead-password' }, as: 'none' })).status, 401);
  } finally {
    await page.close();
  }
});
