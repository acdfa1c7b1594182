// The console's module pages in a real browser (Debian's Chromium through playwright-core),
// against a broker with the admin server and real servers for what they talk to: an HTTP data
// source added and checked from the page, written to by a rule whose webhook action was chosen on
// the Rules page; a script checked (a syntax error shown at its line and column), created and
// converting what mqtt.js publishes; an HTTP authentication policy added from the page deciding
// mqtt.js CONNECTs; a command listed with its state; API errors shown on the forms; and a viewer
// seeing the pages without the buttons that change things.
// needs: broker, chromium
import { EventEmitter } from 'node:events';
import http from 'node:http';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Locator, Page } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end, nextMessages } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { closedPort } from '../helpers/services.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';

/** The input of config field `name` in a form generated from a schema (schema-form.js). */
function field(form: Locator, name: string): Locator {
  return form.locator(`[data-field="config.${name}"]`).locator('input, select, textarea').first();
}

/** The refusal shown at config field `name`. */
function fieldAlert(form: Locator, name: string): Locator {
  return form.locator(`[data-field="config.${name}"] [role="alert"]`);
}

let b: AdminBroker;
let browser: Browser;

/** A small HTTP server: what it received, and the answer of a handler per path. */
interface Received {
  method: string;
  url: string;
  body: string;
}
let server: http.Server;
let serverUrl: string;
/** Emits 'request' (Received) for each request the server got. */
const received = new EventEmitter();
const answers = new Map<string, (body: Record<string, unknown>) => unknown>();

before(async () => {
  b = await startAdminBroker();
  browser = await launchBrowser();
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', url: req.url ?? '', body };
      received.emit('request', r);
      const answer = answers.get((req.url ?? '').split('?')[0]);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // not JSON
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(answer ? answer(parsed) : { ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

after(async () => {
  await browser?.close();
  await b?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

const signedIn = (as: { username: string; password: string } = { username: 'admin', password: ADMIN_PASSWORD }): Promise<Page> => signIn(browser, b.base, as);

test('data sources: an HTTP source added and checked from the page; a rule created on the Rules page writes to it what mqtt.js publishes; in use, it cannot be deleted', async () => {
  const page = await signedIn();
  const pub = await connect(b.url, { clientId: 'console-hook-pub' });
  try {
    await page.getByRole('link', { name: 'Data sources' }).click();
    const form = page.getByRole('form', { name: 'add a data source' });
    await form.getByLabel('Name', { exact: true }).fill('console-hook');
    await form.getByLabel('Type').selectOption('http');
    // Tried before saving: a port where nothing listens is refused, shown next to the form.
    // The config in the fields of the type's schema (schema-form.js), not typed as JSON.
    await field(form, 'url').fill(`http://127.0.0.1:${await closedPort()}/ingest`);
    await form.getByRole('button', { name: 'Check' }).click();
    await waitFor(async () => /refused/.test(await form.getByTestId('source-check-result').innerText()), { message: 'the refused check shown' });
    // A config the API refuses: its message at the field it names.
    await field(form, 'url').fill('not a url');
    await form.getByRole('button', { name: 'Add source' }).click();
    assert.match(await fieldAlert(form, 'url').innerText(), /URL/);
    await field(form, 'url').fill(`${serverUrl}/ingest`);
    await form.getByRole('button', { name: 'Check' }).click();
    await waitFor(async () => /reachable/.test(await form.getByTestId('source-check-result').innerText()), { message: 'the check shown as reachable' });
    await form.getByRole('button', { name: 'Add source' }).click();
    const row = page.locator('tr[data-source="console-hook"]');
    await row.waitFor();
    await waitFor(async () => (await row.locator('td.health').innerText()) === 'up', { message: 'the source up' });
    await row.getByRole('button', { name: 'Check' }).click();
    await waitFor(async () => /reachable/.test(await row.getByRole('status').innerText()), { message: "the row's check shown" });
    const source = (await b.api('POST', '/source/query', { body: { name: 'console-hook' } })).json.data[0];
    assert.equal(source.config.url, `${serverUrl}/ingest`);

    // The Rules page: a webhook action writing to that source, chosen from the list of sources.
    await page.getByRole('link', { name: 'Rules' }).click();
    const editor = page.getByRole('form', { name: 'rule editor' });
    await editor.getByLabel('SQL').fill('SELECT payload.v AS v, clientid FROM "console-hook/#"');
    await editor.getByLabel('Name', { exact: true }).fill('to-hook');
    await editor.getByRole('button', { name: 'Add action' }).click();
    const action = editor.getByRole('group', { name: 'action 1' });
    await action.getByLabel('Action type').selectOption('webhook');
    await action.getByLabel('source').selectOption(source.id);
    await action.getByLabel('path').fill('/${clientid}');
    // A field the API refuses first (a method it does not know): shown on the editor, naming it.
    await action.getByLabel('method').fill('BREW');
    await editor.getByRole('button', { name: 'Create rule' }).click();
    assert.match(await editor.getByRole('alert').innerText(), /create: actions\[0\]\.config\.method/);
    await action.getByLabel('method').fill('');
    await editor.getByRole('button', { name: 'Create rule' }).click();
    const ruleRow = page.locator('tr[data-rule="to-hook"]');
    await ruleRow.waitFor();
    const got = waitForEvent(received, 'request', { filter: (r: Received) => r.url.startsWith('/ingest/') });
    await pub.publishAsync('console-hook/a', JSON.stringify({ v: 42 }), { qos: 1 });
    const [req] = (await got) as [Received];
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/ingest/console-hook-pub');
    assert.deepEqual(JSON.parse(req.body), { v: 42, clientid: 'console-hook-pub' });
    await waitFor(async () => /webhook: 1 ok, 0 failed/.test(await ruleRow.locator('td.actions').innerText()), { message: "the action's counters on the Rules page" });

    // Back on the sources: the write counted; deleting the source a rule uses is refused on its row.
    await page.getByRole('link', { name: 'Data sources' }).click();
    await waitFor(async () => (await row.locator('td.written').innerText()) === '1', { message: 'one write shown on the source' });
    await row.getByRole('button', { name: 'Delete' }).click();
    assert.match(await row.getByRole('alert').innerText(), /delete: .*(use|rule)/i);
    await page.getByRole('link', { name: 'Rules' }).click();
    await ruleRow.getByRole('button', { name: 'Delete' }).click();
    await ruleRow.waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'Data sources' }).click();
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await b.api('POST', '/source/query', { body: {} })).json.total, 0);
  } finally {
    await end(pub);
    await page.close();
  }
});

test('scripts: a syntax error shown at its line and column; created from the page, the script converts what mqtt.js publishes and its counters show it; disabled, then deleted', async () => {
  const page = await signedIn();
  const sub = await connect(b.url, { clientId: 'console-script-sub' });
  const pub = await connect(b.url, { clientId: 'console-script-pub' });
  try {
    await sub.subscribeAsync('console-script/#', { qos: 1 });
    await page.getByRole('link', { name: 'Scripts' }).click();
    const editor = page.getByRole('form', { name: 'script editor' });
    const area = editor.getByLabel('Script');
    const bad = 'function convert(topic, payload) {\n  return payload +* 1;\n}';
    await area.fill(bad);
    await editor.getByRole('button', { name: 'Check' }).click();
    const alert = await editor.getByRole('alert').innerText();
    const m = /check: line (\d+), column (\d+): Unexpected token/.exec(alert);
    assert.ok(m, alert);
    assert.equal(m[1], '2');
    const column = Number(m[2]);
    // The line is shown with a caret under the column, and the editor's caret is put there.
    const at = await editor.getByTestId('script-error-at').innerText();
    assert.match(at, /2 \|\s+return payload \+\* 1;/);
    const [line, caret] = at.split('\n');
    assert.equal(caret.indexOf('^') - (line.indexOf('| ') + 2), column - 1);
    const offset = bad.indexOf('\n') + 1 + column - 1;
    assert.equal(await area.evaluate((el: HTMLTextAreaElement) => el.selectionStart), offset);
    assert.equal(await area.evaluate((el: HTMLTextAreaElement) => document.activeElement === el), true);
    // Create refuses it too (the API's 400), shown the same way.
    await editor.getByLabel('Name', { exact: true }).fill('upper');
    await editor.getByLabel('Topic filter').fill('console-script/#');
    await editor.getByRole('button', { name: 'Create script' }).click();
    // (The check's error stays until the answer replaces it: nothing on the page moves meanwhile.)
    await waitFor(async () => /create: line 2, column \d+: Unexpected token/.test(await editor.getByRole('alert').innerText()), { message: "create's syntax error shown" });

    await area.fill('function convert(topic, payload) {\n  return payload.toString().toUpperCase();\n}');
    await editor.getByRole('button', { name: 'Check' }).click();
    await waitFor(async () => (await editor.getByRole('status').innerText()) === 'compiles', { message: 'the script compiles' });
    await editor.getByRole('button', { name: 'Create script' }).click();
    const row = page.locator('tr[data-processor="upper"]');
    await row.waitFor();
    let next = nextMessages(sub, 1);
    await pub.publishAsync('console-script/a', 'hello', { qos: 1 });
    assert.equal((await next)[0].payload, 'HELLO');
    await waitFor(async () => (await row.locator('td.converted').innerText()) === '1', { message: 'one converted, shown in the list' });

    // Changed in the editor: the new code applies at once.
    await row.getByRole('button', { name: 'Edit' }).click();
    await editor.getByText('Editing upper').waitFor();
    await area.fill('function convert(topic, payload) {\n  return payload.toString().toLowerCase();\n}');
    await editor.getByRole('button', { name: 'Save script' }).click();
    await editor.getByRole('button', { name: 'Create script' }).waitFor();
    next = nextMessages(sub, 1);
    await pub.publishAsync('console-script/a', 'HeLLo', { qos: 1 });
    assert.equal((await next)[0].payload, 'hello');

    await row.getByRole('button', { name: 'Disable' }).click();
    await waitFor(async () => (await row.innerText()).includes('disabled'), { message: 'shown disabled' });
    next = nextMessages(sub, 1);
    await pub.publishAsync('console-script/a', 'unchanged', { qos: 1 });
    assert.equal((await next)[0].payload, 'unchanged');
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await b.api('POST', '/script/query', { body: {} })).json.total, 0);

    // Extensions are off in this broker (no extensions.dir): the API's refusal on the form.
    const ext = page.getByRole('form', { name: 'add an extension' });
    await ext.getByLabel('Name', { exact: true }).fill('split');
    await ext.getByLabel('Class').fill('split-json-array.mjs#SplitJsonArray');
    await ext.getByRole('button', { name: 'Add extension' }).click();
    assert.match(await ext.getByRole('alert').innerText(), /add: .*extension/i);
  } finally {
    await end(sub, pub);
    await page.close();
  }
});

test('policies: an HTTP authentication policy added from the page decides mqtt.js CONNECTs; the chain test shows its answer; moved in the chain, disabled, deleted; an unreachable ACL policy refused on the form', async () => {
  answers.set('/auth', (q) => ({ result: q.username === 'allowed-dev' ? 'allow' : 'deny' }));
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Auth and ACL' }).click();
    const chain = page.getByRole('region', { name: 'Authentication policies' });
    const form = chain.getByRole('form', { name: 'add an authentication policy' });
    for (const name of ['console-auth', 'console-auth-2']) {
      await form.getByLabel('Name', { exact: true }).fill(name);
      await form.getByLabel('Type').selectOption('http');
      await field(form, 'url').fill(`${serverUrl}/auth`);
      await form.getByRole('button', { name: 'Add policy' }).click();
      await chain.locator(`tr[data-policy="${name}"]`).waitFor();
    }
    const row = chain.locator('tr[data-policy="console-auth"]');

    // The chain's answer, from the page.
    const tester = chain.getByRole('form', { name: 'test authentication' });
    await tester.getByLabel('Username').fill('denied-dev');
    await tester.getByLabel('Password').fill('pw');
    await tester.getByRole('button', { name: 'Test' }).click();
    await waitFor(async () => (await tester.getByTestId('auth-test-result').innerText()).startsWith('deny'), { message: 'deny shown' });

    // Real CONNECTs: refused and accepted by the policy.
    // MQTT 3.1.1: CONNACK 4, bad user name or password.
    await assert.rejects(connect(b.url, { clientId: 'denied-dev', username: 'denied-dev', password: 'pw' }), (err: Error & { code?: number }) => err.code === 4 && /Bad username or password/i.test(err.message));
    const ok = await connect(b.url, { clientId: 'allowed-dev', username: 'allowed-dev', password: 'pw' });
    await end(ok);
    await waitFor(async () => Number(await row.locator('td.allow').innerText()) >= 1 && Number(await row.locator('td.deny').innerText()) >= 1, { message: "the policy's answers counted on its row" });

    // The chain order: the second one moved up is asked first.
    await chain.getByRole('button', { name: 'move console-auth-2 up' }).click();
    await waitFor(async () => (await chain.locator('tbody tr').first().getAttribute('data-policy')) === 'console-auth-2', { message: 'moved up' });
    const order = (await b.api('POST', '/auth/query', { body: {} })).json.data.map((p: { name: string }) => p.name);
    assert.deepEqual(order, ['console-auth-2', 'console-auth']);

    // Changed from the page: renamed (its config shown, checked again by the server on save).
    await row.getByRole('button', { name: 'Edit' }).click();
    const change = chain.getByRole('form', { name: 'change console-auth' });
    assert.equal(await field(change, 'url').inputValue(), `${serverUrl}/auth`);
    await change.getByLabel('Name', { exact: true }).fill('console-auth-1');
    await change.getByRole('button', { name: 'Save policy' }).click();
    await chain.locator('tr[data-policy="console-auth-1"]').waitFor();
    assert.deepEqual((await b.api('POST', '/auth/query', { body: {} })).json.data.map((p: { name: string }) => p.name), ['console-auth-2', 'console-auth-1']);

    // Both disabled: the chain ignores the client (the static configuration decides).
    for (const name of ['console-auth-1', 'console-auth-2']) {
      const r = chain.locator(`tr[data-policy="${name}"]`);
      await r.getByRole('button', { name: 'Disable' }).click();
      await waitFor(async () => (await r.innerText()).includes('disabled'), { message: `${name} disabled` });
    }
    await tester.getByRole('button', { name: 'Test' }).click();
    await waitFor(async () => (await tester.getByTestId('auth-test-result').innerText()).startsWith('ignore'), { message: 'ignore shown' });
    for (const name of ['console-auth-1', 'console-auth-2']) {
      const r = chain.locator(`tr[data-policy="${name}"]`);
      await r.getByRole('button', { name: 'Delete' }).click();
      await r.waitFor({ state: 'detached' });
    }

    // An ACL policy whose server is not there: the dry run's refusal, naming the field, on its form.
    const acl = page.getByRole('region', { name: 'ACL policies' });
    const aclForm = acl.getByRole('form', { name: 'add an ACL policy' });
    await aclForm.getByLabel('Name', { exact: true }).fill('console-acl');
    await field(aclForm, 'url').fill(`http://127.0.0.1:${await closedPort()}/acl`);
    await aclForm.getByRole('button', { name: 'Add policy' }).click();
    assert.match(await fieldAlert(aclForm, 'url').innerText(), /^cannot reach/);
    assert.equal((await b.api('POST', '/acl/query', { body: {} })).json.total, 0);
  } finally {
    answers.delete('/auth');
    await page.close();
  }
});

test('commands: one added from the page is listed with its state and last error; a config the API refuses is shown on the form; stopped, started, its config changed (a refusal shown on the form), deleted', async () => {
  const page = await signedIn();
  try {
    await page.getByRole('link', { name: 'Commands' }).click();
    const form = page.getByRole('form', { name: 'add a command' });
    const port = await closedPort();
    await form.getByLabel('Name', { exact: true }).fill('console-rabbit');
    await form.getByLabel('Type').selectOption('RABBITMQ');
    await field(form, 'url').fill(`amqp://127.0.0.1:${port}`);
    await field(form, 'mqttTopic').fill('rabbit/${routingKey}');
    await form.getByRole('button', { name: 'Add command' }).click();
    assert.match(await fieldAlert(form, 'queue').innerText(), /^is required/);
    // A RabbitMQ that is not there: the command keeps trying, and says why.
    await field(form, 'queue').fill('to-mqtt');
    await form.getByRole('button', { name: 'Add command' }).click();
    const row = page.locator('tr[data-command="console-rabbit"]');
    await row.waitFor();
    await waitFor(async () => (await row.locator('td.state').innerText()) === 'reconnecting', { message: 'reconnecting shown' });
    await waitFor(async () => /refused/.test(await row.locator('td.last-error').innerText()), { message: 'the last error shown' });
    await row.getByRole('button', { name: 'Stop' }).click();
    await waitFor(async () => (await row.locator('td.state').innerText()) === 'stopped', { message: 'stopped shown' });
    const [command] = (await b.api('POST', '/command/query', { body: {} })).json.data;
    assert.equal(command.enabled, false);
    await row.getByRole('button', { name: 'Start' }).click();
    await waitFor(async () => ['starting', 'reconnecting'].includes(await row.locator('td.state').innerText()), { message: 'started again' });
    // Its config changed from the page: a prefetch of 0 refused on the form, then another queue.
    await row.getByRole('button', { name: 'Edit' }).click();
    const change = page.getByRole('form', { name: 'change console-rabbit' });
    assert.equal(await field(change, 'queue').inputValue(), 'to-mqtt');
    await field(change, 'prefetch').fill('0');
    await change.getByRole('button', { name: 'Save command' }).click();
    assert.match(await fieldAlert(change, 'prefetch').innerText(), /\d/);
    assert.equal((await b.api('POST', '/command/query', { body: {} })).json.data[0].config.queue, 'to-mqtt');
    await field(change, 'prefetch').fill('5');
    await field(change, 'queue').fill('other-queue');
    await change.getByRole('button', { name: 'Save command' }).click();
    await change.waitFor({ state: 'detached' });
    const [changed] = (await b.api('POST', '/command/query', { body: {} })).json.data;
    assert.equal(changed.config.queue, 'other-queue');
    assert.equal(changed.config.prefetch, 5);
    assert.equal(changed.config.url, `amqp://127.0.0.1:${port}`);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await b.api('POST', '/command/query', { body: {} })).json.total, 0);
  } finally {
    await page.close();
  }
});

test('a viewer sees the module pages and their lists without the buttons that change things', async () => {
  const source = await b.api('POST', '/source/add', { body: { name: 'viewer-sees', type: 'http', config: { url: `${serverUrl}/x` } } });
  assert.equal(source.status, 200, source.text);
  const script = await b.api('POST', '/script/add', { body: { name: 'viewer-script', topic: 'viewer/#', content: 'function convert(t, p) { return p; }' } });
  assert.equal(script.status, 200, script.text);
  const page = await signedIn(VIEWER);
  const WRITES = ['Add source', 'Add command', 'Add policy', 'Create script', 'Add extension', 'Create rule', 'Add action', 'Check', 'Delete', 'Disable', 'Enable', 'Stop', 'Start', 'Edit'];
  async function noWriteButtons(id: string, allowed: string[] = []): Promise<void> {
    for (const name of WRITES.filter((n) => !allowed.includes(n))) {
      assert.equal(await page.getByRole('main').getByRole('button', { name, exact: true }).count(), 0, `${name} on ${id}`);
    }
  }
  try {
    await page.getByRole('link', { name: 'Data sources' }).click();
    await page.locator('tr[data-source="viewer-sees"]').waitFor();
    await noWriteButtons('sources');
    await page.getByRole('link', { name: 'Scripts' }).click();
    await page.locator('tr[data-processor="viewer-script"] td.messages').filter({ hasText: '0' }).waitFor();
    // The compile check only reads: a viewer may use it.
    await noWriteButtons('scripts', ['Check']);
    await page.getByRole('form', { name: 'script editor' }).getByRole('button', { name: 'Check' }).waitFor();
    await page.getByRole('link', { name: 'Commands' }).click();
    await page.getByRole('region', { name: 'commands' }).getByText('No commands.').waitFor();
    await noWriteButtons('commands');
    await page.getByRole('link', { name: 'Auth and ACL' }).click();
    await page.getByRole('region', { name: 'ACL policies' }).getByText(/No ACL policy/).waitFor();
    await noWriteButtons('policies');
    await page.getByRole('link', { name: 'Rules' }).click();
    await page.getByRole('form', { name: 'rule editor' }).waitFor();
    await noWriteButtons('rules');
  } finally {
    await page.close();
    await b.api('POST', '/source/delete', { body: { id: source.json.data.id } });
    await b.api('POST', '/script/delete', { body: { id: script.json.data.id } });
  }
});
