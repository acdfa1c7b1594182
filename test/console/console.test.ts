// The web console end to end in a real browser (Debian's Chromium through playwright-core),
// against a broker with the admin server: sign in (the session in an HttpOnly cookie, never in
// the page or a URL), the live charts move while mqtt.js clients publish, an endpoint added from
// the page takes connections (one with PROXY protocol refuses a direct client), a client closed
// from the page is gone, and an API error is shown
// where the user acted. The live feed refuses other origins and callers that are not signed in.
// needs: broker, nats, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end } from '../helpers/broker.ts';
import { freePort } from '../helpers/nats.ts';
import { launchBrowser, signIn, upgradeStatus } from '../helpers/browser.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';

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

const signedIn = (): Promise<Page> => signIn(browser, b.base);

test('sign in: a wrong password is shown on the form; the session is an HttpOnly cookie, not in the page or the URL', async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${b.base}/`);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.match(await page.getByRole('alert').innerText(), /wrong username or password/);
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'pages' }).waitFor();
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'spindle_session');
    assert.ok(session, 'a session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '', 'the page cannot read the session');
    assert.ok(!page.url().includes(session.value), 'no token in the URL');
    // Signed in after a reload (the cookie), signed out after "Sign out".
    await page.reload();
    await page.getByRole('navigation', { name: 'pages' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal((await page.context().cookies()).some((c) => c.name === 'spindle_session'), false);
  } finally {
    await page.close();
  }
});

test('overview: the live figures and charts move while mqtt.js clients publish', async () => {
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'console-sub' });
  const pub = await connect(b.url, { clientId: 'console-pub' });
  let publishing = true;
  try {
    await sub.subscribeAsync('console/#', { qos: 0 });
    const flow = (async () => {
      while (publishing) {
        for (let i = 0; i < 50; i++) pub.publish('console/x', 'm');
        await new Promise((r) => setTimeout(r, 20)); // pacing: a steady rate for the charts
      }
    })();
    await waitFor(async () => Number((await page.getByTestId('stat-connections').innerText()).replace(/\D/g, '')) >= 2, { message: 'two connections shown' });
    await waitFor(async () => Number((await page.getByTestId('stat-in').innerText()).replace(/\D/g, '')) > 0, { message: 'messages in per second above 0' });
    await waitFor(async () => Number((await page.getByTestId('stat-out').innerText()).replace(/\D/g, '')) > 0, { message: 'messages out per second above 0' });
    // The charts are drawn (a canvas each) and keep growing: the sample count goes up.
    assert.ok(await page.getByTestId('chart-messages').locator('canvas').count() >= 1);
    const samples = async () => Number(/(\d+) samples kept/.exec(await page.getByText(/samples kept/).innerText())?.[1] ?? 0);
    const first = await samples();
    await waitFor(async () => (await samples()) >= first + 2, { message: 'new samples pushed' });
    publishing = false;
    await flow;
  } finally {
    publishing = false;
    await end(sub, pub);
    await page.close();
  }
});

test('endpoints: one added from the page takes MQTT connections and shows them live; a port in use is refused on the form', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Endpoints' }).click();
    const port = await freePort();
    const form = page.getByRole('form', { name: 'add an endpoint' });
    await form.getByLabel('Id').fill('from-console');
    await form.getByLabel('Port').fill(String(port));
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const row = page.locator(`tr[data-port="${port}"]`);
    await row.waitFor();
    await waitFor(async () => (await row.innerText()).includes('running'), { message: 'the endpoint running' });
    const client = await connect(`mqtt://127.0.0.1:${port}`, { clientId: 'via-console-endpoint' });
    try {
      await waitFor(async () => (await row.locator('td').nth(3).innerText()) === '1', { message: 'one connection on the new endpoint, live' });
    } finally {
      await end(client);
    }
    // The same port again: the API's refusal is shown on the form.
    await form.getByLabel('Id').fill('again');
    await form.getByLabel('Port').fill(String(port));
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await form.getByRole('alert').innerText(), /port/i);
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});

test('endpoints: PROXY protocol set on the form (the trusted balancers required, named on the form)', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Endpoints' }).click();
    const port = await freePort();
    const form = page.getByRole('form', { name: 'add an endpoint' });
    await form.getByLabel('Id').fill('behind-lb');
    await form.getByLabel('Port').fill(String(port));
    await form.getByLabel('PROXY protocol').selectOption('required');
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await form.getByRole('alert').innerText(), /proxyProtocolTrusted/);
    await form.getByLabel('Trusted balancers').fill('10.0.0.0/8, 127.0.0.3');
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    const row = page.locator(`tr[data-port="${port}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /PROXY required/);
    const r = await b.api('GET', '/api/endpoints/list');
    const e = Object.values(r.json.data.endpoints as Record<string, { port: number; proxyProtocol?: string; proxyProtocolTrusted?: string[] }>).find((x) => x.port === port);
    assert.deepEqual([e?.proxyProtocol, e?.proxyProtocolTrusted], ['required', ['10.0.0.0/8', '127.0.0.3']]);
    // A client straight from 127.0.0.1 is no trusted balancer: refused.
    await assert.rejects(connect(`mqtt://127.0.0.1:${port}`, { clientId: 'not-through-the-balancer' }));
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});

test('connections: a client closed from the page is disconnected and gone from the list', async () => {
  const page = await signedIn();
  const client = await connect(b.url, { clientId: 'close-me-from-console', protocolVersion: 5 });
  try {
    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('main').getByRole('searchbox').fill('close-me');
    await page.getByRole('button', { name: 'Search' }).click();
    const row = page.locator('tr[data-client="close-me-from-console"]');
    await row.waitFor();
    const closed = waitForEvent(client, 'close');
    await row.getByRole('button', { name: 'Close', exact: true }).click();
    await closed;
    await row.waitFor({ state: 'detached' });
  } finally {
    client.end(true);
    await page.close();
  }
});

test('rules: the SQL runs on sample data (an error shown in the editor), and a rule created from the page counts what it matches', async () => {
  const page = await signedIn();
  const pub = await connect(b.url, { clientId: 'console-rule-pub' });
  try {
    await page.getByRole('link', { name: 'Rules' }).click();
    const editor = page.getByRole('form', { name: 'rule editor' });
    await editor.getByLabel('SQL').fill('SELECT payload.v AS v FROM "console-rule/#" WHERE payload.v > 1');
    await editor.getByLabel('Sample topic').fill('console-rule/a');
    await editor.getByLabel('Sample payload').fill('{"v": 2}');
    await editor.getByRole('button', { name: 'Test' }).click();
    assert.deepEqual(JSON.parse(await page.getByTestId('rule-test-result').innerText()).output, { v: 2 });
    await editor.getByLabel('SQL').fill('SELECT v FORM "console-rule/#"');
    await editor.getByRole('button', { name: 'Test' }).click();
    assert.match(await editor.getByRole('alert').innerText(), /test: .*(line|column|FORM|syntax)/i);
    await editor.getByLabel('SQL').fill('SELECT payload.v AS v FROM "console-rule/#" WHERE payload.v > 1');
    await editor.getByLabel('Name').fill('from-console');
    await editor.getByRole('button', { name: 'Create rule' }).click();
    const row = page.locator('tr[data-rule="from-console"]');
    await row.waitFor();
    for (const v of [5, 0, 7]) await pub.publishAsync('console-rule/x', JSON.stringify({ v }), { qos: 1 });
    await waitFor(async () => (await row.locator('td.matched').innerText()) === '3', { message: 'the rule matched three messages, shown in the list' });
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
  } finally {
    await end(pub);
    await page.close();
  }
});

test('messages: one published from the page reaches an mqtt.js subscriber; a retained one is listed and deleted', async () => {
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'console-publish-sub' });
  try {
    await sub.subscribeAsync('console-pub/#', { qos: 1 });
    await page.getByRole('link', { name: 'Messages' }).click();
    const form = page.getByRole('form', { name: 'publish' });
    const got = waitForEvent(sub, 'message');
    await form.getByLabel('Topic').fill('console-pub/a');
    await form.getByLabel('Payload').fill('from the console');
    await form.getByLabel('Retain').check();
    await form.getByRole('button', { name: 'Publish' }).click();
    const [topic, payload] = await got;
    assert.deepEqual([topic, payload.toString()], ['console-pub/a', 'from the console']);
    const retained = page.getByRole('region', { name: 'retained messages' });
    await retained.getByRole('button', { name: 'Search' }).click();
    const row = retained.locator('tr[data-topic="console-pub/a"]');
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    // A topic with a wildcard is refused, next to the form.
    await form.getByLabel('Topic').fill('bad/#');
    await form.getByRole('button', { name: 'Publish' }).click();
    assert.match(await form.getByRole('alert').innerText(), /topic/i);
  } finally {
    await end(sub);
    await page.close();
  }
});

test('topics: a filter mqtt.js subscribes to is listed with its subscriber, and its subscriber shown', async () => {
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'console-topic-sub' });
  try {
    await sub.subscribeAsync('console-topic/+/x', { qos: 1 });
    await page.getByRole('link', { name: 'Topics' }).click();
    const row = page.locator('tr[data-filter="console-topic/+/x"]');
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).innerText(), '1');
    await row.getByRole('button', { name: 'console-topic/+/x' }).click();
    const subscriber = page.getByRole('region', { name: 'subscribers of console-topic/+/x' }).locator('tr[data-client="console-topic-sub"]');
    await subscriber.waitFor();
    assert.match(await subscriber.innerText(), /yes\s+1/);
  } finally {
    await end(sub);
    await page.close();
  }
});

test('users: added from the page can sign in; a too short password is refused on the form; role changed, then deleted', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Users', exact: true }).click();
    const form = page.getByRole('form', { name: 'add a user' });
    await form.getByLabel('Username').fill('console-user');
    await form.getByLabel('Password').fill('short');
    // The browser's own check (minlength) would stop it first: turned off, so the API's refusal
    // is what the form shows.
    await form.evaluate((f: HTMLFormElement) => f.setAttribute('novalidate', ''));
    await form.getByRole('button', { name: 'Add user' }).click();
    assert.match(await page.getByRole('alert').innerText(), /password/i);
    await form.getByLabel('Password').fill('console-password');
    await form.getByRole('button', { name: 'Add user' }).click();
    const row = page.locator('tr[data-user="console-user"]');
    await row.waitFor();
    const login = await b.api('POST', '/public/login', { as: 'none', body: { username: 'console-user', password: 'console-password' } });
    assert.equal(login.status, 200, login.text);
    await row.getByLabel('role of console-user').selectOption('admin');
    await waitFor(async () => (await b.api('GET', '/api/users')).json.data.find((u: { username: string }) => u.username === 'console-user')?.role === 'admin', { message: 'the role changed' });
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});

test('cluster: the node list shows this node running', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Cluster' }).click();
    const row = page.locator('tr[data-node]').first();
    await row.waitFor();
    assert.match(await row.innerText(), /this node[\s\S]*running/);
  } finally {
    await page.close();
  }
});

test('the live feed refuses a caller not signed in, and a page of another origin', async () => {
  const url = `ws://127.0.0.1:${b.admin!.port}/api/live`;
  const status = (headers: Record<string, string>) => upgradeStatus(url, headers);
  assert.equal(await status({}), 401);
  const login = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: ADMIN_PASSWORD } });
  const bearer = { authorization: `Bearer ${login.json.token}` };
  assert.equal(await status({ ...bearer, origin: 'http://evil.example' }), 403);
  assert.equal(await status({ ...bearer, origin: `http://127.0.0.1:${b.admin!.port}` }), 101);
});
