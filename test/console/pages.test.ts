// The console's client page, rule editing, topic tree, node figures and audit toggle in a real
// browser (Debian's Chromium through playwright-core), against a broker with the admin server and
// audit.reads on: a real mqtt.js client's subscription and a message it publishes shown on its
// page, Kick disconnecting it, Ban asking first and then banning its client id; a rule edited
// and its SQL tested from the page; a subscribed topic in the tree; this node's uptime and last
// seen on the Cluster page; reads hidden in the audit log until asked for.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ audit: { reads: true }, nodeName: 'node-under-test' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

const signedIn = (): Promise<Page> => signIn(browser, b.base);

test('client page: from the Connections list, its subscription with options, a message it publishes in live traffic; Kick disconnects it', async () => {
  const page = await signedIn();
  const client = await connect(b.url, { clientId: 'page-client', protocolVersion: 5, keepalive: 42 });
  try {
    await client.subscribeAsync('page/client/+', { qos: 1, nl: false, rap: true });
    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('main').getByRole('searchbox').fill('page-client');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('tr[data-client="page-client"]').getByRole('link', { name: 'page-client' }).click();
    assert.match(page.url(), /#\/clients\/page-client$/);
    await page.getByTestId('client-state').filter({ hasText: 'connected' }).waitFor();
    const connection = page.getByRole('region', { name: 'connection' });
    assert.match(await connection.innerText(), /MQTT 5\.0/);
    assert.match(await connection.innerText(), /Keepalive\s+42 s/);
    assert.equal(await page.getByTestId('client-tls').innerText(), 'no');
    assert.match(await page.getByTestId('client-inflight').innerText(), /^0 of \d+/);
    const sub = page.getByRole('region', { name: 'subscriptions' }).locator('tr[data-filter="page/client/+"]');
    await sub.waitFor();
    assert.match(await sub.innerText(), /page\/client\/\+\s+1\s+no\s+yes\s+0/);
    // Live traffic: the page watches the client's filters; what the client publishes there shows.
    const traffic = page.getByRole('region', { name: 'live traffic' });
    await waitFor(async () => {
      await client.publishAsync('page/client/x', 'hello from mqtt.js', { qos: 1 });
      return (await traffic.locator('tr[data-topic="page/client/x"]').count()) > 0;
    }, { message: 'the published message in live traffic', interval: 300 });
    assert.match(await traffic.locator('tr[data-topic="page/client/x"]').first().innerText(), /hello from mqtt\.js/);
    // Kick: the client is disconnected, and its session (clean) is gone.
    const closed = waitForEvent(client, 'close');
    await page.getByRole('button', { name: 'Kick' }).click();
    await closed;
    await page.getByTestId('client-gone').waitFor();
  } finally {
    client.end(true);
    await page.close();
  }
});

test('client page: Ban asks first, then bans the client id (refused at its next CONNECT); Trace starts a trace', async () => {
  const page = await signedIn();
  const client = await connect(b.url, { clientId: 'page-banned', protocolVersion: 5, reconnectPeriod: 0 });
  try {
    await page.goto(`${b.base}/#/clients/page-banned`);
    await page.getByTestId('client-state').filter({ hasText: 'connected' }).waitFor();
    await page.getByRole('button', { name: 'Trace' }).click();
    await page.getByRole('status').filter({ hasText: /Tracing page-banned/ }).waitFor();
    const traces = await b.api('GET', '/api/log/traces');
    assert.ok(traces.json.data.some((t: { clientId: string }) => t.clientId === 'page-banned'), JSON.stringify(traces.json));
    // Declined: nothing banned.
    page.once('dialog', (d) => void d.dismiss());
    await page.getByRole('button', { name: 'Ban' }).click();
    assert.equal((await b.api('GET', '/api/banned?as=clientid')).json.total, 0);
    // Accepted: banned, and the client is disconnected.
    const closed = waitForEvent(client, 'close');
    page.once('dialog', (d) => {
      assert.match(d.message(), /Ban client id page-banned/);
      void d.accept();
    });
    await page.getByRole('button', { name: 'Ban' }).click();
    await page.getByRole('status').filter({ hasText: /Client id page-banned banned/ }).waitFor();
    const bans = (await b.api('GET', '/api/banned?as=clientid')).json;
    assert.deepEqual(bans.data.map((x: { who: string }) => x.who), ['page-banned']);
    await closed;
  } finally {
    client.end(true);
    await page.close();
  }
});

test('rules: an existing rule edited from the page (SQL, action, enabled) with the SQL test beside it', async () => {
  const added = await b.api('POST', '/rule/add', { body: { id: 'edit-me', name: 'edit-me', sql: 'SELECT * FROM "edit/old/#"', actions: [{ type: 'republish', config: { topic: 'edit/out' } }] } });
  assert.equal(added.status, 200, added.text);
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'rule-edit-sub' });
  const pub = await connect(b.url, { clientId: 'rule-edit-pub' });
  try {
    await sub.subscribeAsync('edit/republished', { qos: 1 });
    await page.getByRole('link', { name: 'Rules' }).click();
    await page.locator('tr[data-rule="edit-me"]').getByRole('button', { name: 'Edit' }).click();
    const panel = page.getByRole('region', { name: 'edit rule edit-me' });
    const form = panel.getByRole('form', { name: 'rule edit', exact: true });
    assert.equal(await form.locator('textarea[name="sql"]').inputValue(), 'SELECT * FROM "edit/old/#"');
    assert.equal(await form.getByLabel('topic').inputValue(), 'edit/out');
    // The test beside the editor: an error, then the output.
    const tester = panel.getByRole('form', { name: 'SQL test' });
    await form.locator('textarea[name="sql"]').fill('SELECT payload.v AS v FORM "edit/new/#"');
    await tester.getByRole('button', { name: 'Test' }).click();
    assert.match(await tester.getByRole('alert').innerText(), /test: /);
    await form.locator('textarea[name="sql"]').fill('SELECT payload.v AS v FROM "edit/new/#" WHERE payload.v > 1');
    await tester.getByLabel('Sample topic').fill('edit/new/a');
    await tester.getByLabel('Sample payload').fill('{"v": 3}');
    await tester.getByRole('button', { name: 'Test' }).click();
    assert.deepEqual(JSON.parse(await panel.getByTestId('rule-edit-test-result').locator('pre').innerText()), { v: 3 });
    await form.getByLabel('topic').fill('edit/republished');
    await form.getByRole('button', { name: 'Save' }).click();
    await panel.waitFor({ state: 'detached' });
    const rule = (await b.api('POST', '/rule/query', { body: { id: 'edit-me' } })).json.data[0];
    assert.equal(rule.sql, 'SELECT payload.v AS v FROM "edit/new/#" WHERE payload.v > 1');
    assert.equal(rule.actions[0].config.topic, 'edit/republished');
    // The edited rule runs: a message on the new topic is republished where the action says.
    const got = waitForEvent(sub, 'message');
    await pub.publishAsync('edit/new/x', JSON.stringify({ v: 5 }), { qos: 1 });
    const [topic] = await got;
    assert.equal(topic, 'edit/republished');
    // Disabled from the editor.
    await page.locator('tr[data-rule="edit-me"]').getByRole('button', { name: 'Edit' }).click();
    await form.getByLabel('Enabled').uncheck();
    await form.getByRole('button', { name: 'Save' }).click();
    await waitFor(async () => (await page.locator('tr[data-rule="edit-me"]').innerText()).includes('disabled'), { message: 'the rule shown disabled' });
    // A bad SQL is refused at Save, shown on the form, and nothing changed.
    await page.locator('tr[data-rule="edit-me"]').getByRole('button', { name: 'Edit' }).click();
    await form.locator('textarea[name="sql"]').fill('SELECT FORM nowhere');
    await form.getByRole('button', { name: 'Save' }).click();
    assert.match(await form.getByRole('alert').innerText(), /save: /);
    assert.equal((await b.api('POST', '/rule/query', { body: { id: 'edit-me' } })).json.data[0].sql, 'SELECT payload.v AS v FROM "edit/new/#" WHERE payload.v > 1');
  } finally {
    await end(sub, pub);
    await page.close();
  }
});

test('topic tree: a subscribed topic shown by level with its subscriber count, and a retained topic', async () => {
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'tree-sub' });
  try {
    await sub.subscribeAsync('tree/a/+/temp', { qos: 1 });
    await sub.publishAsync('tree/b/kept', 'r', { qos: 1, retain: true });
    await page.getByRole('link', { name: 'Topic tree' }).click();
    const tree = page.getByRole('region', { name: 'topic tree' });
    await tree.locator('tr[data-path="tree"]').waitFor();
    assert.equal(await tree.locator('tr[data-path="tree/a"]').count(), 0, 'collapsed at first');
    await tree.getByRole('button', { name: 'expand tree', exact: true }).click();
    await tree.getByRole('button', { name: 'expand tree/a', exact: true }).click();
    await tree.getByRole('button', { name: 'expand tree/a/+', exact: true }).click();
    const leaf = tree.locator('tr[data-path="tree/a/+/temp"]');
    await leaf.waitFor();
    assert.equal(await leaf.locator('td.subscribers').innerText(), '1');
    assert.match(await tree.locator('tr[data-path="tree"]').innerText(), /tree\s+1\s+1\s+1/);
    await page.getByRole('button', { name: 'Expand all' }).click();
    assert.equal(await tree.locator('tr[data-path="tree/b/kept"] td.payload').innerText(), 'r');
    assert.match(await page.getByTestId('tree-rates-note').innerText(), /Rates come from topic metrics/);
  } finally {
    await end(sub);
    await page.close();
  }
});

test('cluster page and overview: this node\'s uptime, version, CPU, memory and a last seen', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Cluster' }).click();
    const row = page.locator('tr[data-node="node-under-test"]');
    await row.waitFor();
    assert.match(await page.getByTestId('last-seen-node-under-test').innerText(), /now/);
    assert.match(await page.getByTestId('uptime-node-under-test').innerText(), /\d+ (s|min|h|d)/);
    assert.match(await row.innerText(), /\d+(\.\d+)? %[\s\S]*\d+ MB of \d/);
    await page.getByRole('link', { name: 'Overview' }).click();
    const nodes = page.getByRole('region', { name: 'nodes' });
    await nodes.locator('tr[data-node-figures="node-under-test"]').waitFor();
    assert.match(await page.getByTestId('uptime-node-under-test').innerText(), /\d+ (s|min|h|d)/);
  } finally {
    await page.close();
  }
});

test('overview: subscriptions counted apart ($SYS and internal), as the Topics page counts them', async () => {
  const page = await signedIn();
  const c = await connect(b.url, { clientId: 'counts-sub' });
  try {
    await c.subscribeAsync(['counts/a', '$SYS/broker/#'], { qos: 0 });
    // A rule: one internal subscription in the routing core.
    assert.equal((await b.api('POST', '/rule/add', { body: { name: 'counts-rule', sql: 'SELECT * FROM "counts-rule/#"', actions: [] } })).status, 200);
    const topics = (await b.api('POST', '/topic/query', { body: { page: 1, size: 1000 } })).json;
    await waitFor(async () => {
      const shown = Number((await page.getByTestId('stat-subscriptions').innerText()).replace(/\D/g, ''));
      return shown === topics.subscriptions;
    }, { message: `the overview shows ${topics.subscriptions} subscriptions, as /topic/query counts them` });
    assert.ok(topics.sysSubscriptions >= 1);
    const apart = await page.getByTestId('stat-subscriptions-apart').innerText();
    const m = /\+(\d+) \$SYS, \+(\d+) internal/.exec(apart);
    assert.ok(m, apart);
    assert.equal(Number(m[1]), topics.sysSubscriptions);
    assert.ok(Number(m[2]) >= 1, `the rule's subscription is internal: ${apart}`);
    await page.getByRole('link', { name: 'Topics', exact: true }).click();
    await page.getByTestId('topics-total').filter({ hasText: `${topics.subscriptions} subscriptions (+${topics.sysSubscriptions} $SYS)` }).waitFor();
  } finally {
    await end(c);
    await page.close();
  }
});

test('audit log: reads hidden unless "Show reads" is on (audit.reads audits them)', async () => {
  const page = await signedIn();
  try {
    await b.api('GET', '/api/cluster/nodes');
    await page.getByRole('link', { name: 'Audit log' }).click();
    const entries = page.getByRole('region', { name: 'audit entries' });
    await entries.locator('tbody tr').first().waitFor();
    assert.equal(await entries.locator('tr[data-action="read"]').count(), 0, 'no read shown by default');
    await page.getByLabel('Show reads').check();
    await entries.locator('tr[data-action="read"]').first().waitFor();
    await page.getByLabel('Show reads').uncheck();
    await entries.locator('tr[data-action="read"]').first().waitFor({ state: 'detached' });
  } finally {
    await page.close();
  }
});
