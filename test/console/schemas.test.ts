// The Schemas page in a real browser (Debian's Chromium through playwright-core): a schema added
// from the page (its text in the textarea) is listed and compiled by the broker, a bad one is
// refused naming the field and the parser's message, "try decode" shows the decoded map, a check
// is added and removed, a schema is edited and deleted; a viewer sees no forms but may decode.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

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

test('add, try decode, check, edit and delete schemas on the Schemas page', async () => {
  const page = await signIn(browser, b.base);
  await page.getByRole('link', { name: 'Schemas' }).click();
  const form = page.getByRole('form', { name: 'add a schema', exact: true });
  await form.getByLabel('Name', { exact: true }).fill('bad');
  await form.locator('select[name="type"]').selectOption('protobuf');
  await form.locator('textarea[name="source"]').fill('message X { strin a = 1; }');
  await form.getByRole('button', { name: 'Add', exact: true }).click();
  assert.match(await page.getByRole('alert').innerText(), /source: not a valid protobuf schema/);

  await form.getByLabel('Name', { exact: true }).fill('reading');
  await form.locator('textarea[name="source"]').fill('syntax = "proto3"; package demo; message Reading { string sensor = 1; double temp = 2; }');
  await form.getByRole('button', { name: 'Add', exact: true }).click();
  await page.locator('tr[data-schema="reading"]').waitFor();
  assert.equal((await b.api('GET', '/api/schemas/reading')).json.data.type, 'protobuf');

  const decode = page.getByRole('form', { name: 'try decode', exact: true });
  await decode.locator('select[name="schema"]').selectOption('reading');
  await decode.getByLabel('Message type', { exact: true }).fill('demo.Reading');
  await decode.locator('textarea[name="payload"]').fill('CgJzMREAAAAAAMBBQA==');
  await decode.getByRole('button', { name: 'Decode' }).click();
  const out = await decode.locator('pre.decoded').innerText();
  assert.deepEqual(JSON.parse(out), { sensor: 's1', temp: 35.5 });

  const check = page.getByRole('form', { name: 'add a schema check', exact: true });
  await check.getByLabel('Filter', { exact: true }).fill('sensors/+');
  await check.locator('select[name="schema"]').selectOption('reading');
  await check.getByLabel('Message type', { exact: true }).fill('demo.Reading');
  await check.getByRole('button', { name: 'Add check' }).click();
  await page.locator('tr[data-check="sensors/+"]').waitFor();
  assert.equal((await b.api('GET', '/api/schema-checks')).json.data[0].filter, 'sensors/+');
  await page.getByRole('button', { name: 'remove the check on sensors/+' }).click();
  await waitFor(async () => (await b.api('GET', '/api/schema-checks')).json.data.length === 0);

  await page.locator('tr[data-schema="reading"]').getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('form', { name: 'edit schema reading', exact: true });
  await edit.getByLabel('Description', { exact: true }).fill('edited in the console');
  await edit.getByRole('button', { name: 'Save' }).click();
  await waitFor(async () => (await b.api('GET', '/api/schemas/reading')).json.data.description === 'edited in the console');

  const viewer = await signIn(browser, b.base, VIEWER);
  await viewer.getByRole('link', { name: 'Schemas' }).click();
  await viewer.locator('tr[data-schema="reading"]').waitFor();
  assert.equal(await viewer.getByRole('form', { name: 'add a schema', exact: true }).count(), 0);
  assert.equal(await viewer.getByRole('button', { name: 'delete schema reading' }).count(), 0);

  await page.getByRole('button', { name: 'delete schema reading' }).click();
  await waitFor(async () => (await b.api('GET', '/api/schemas/reading')).status === 404);
});
