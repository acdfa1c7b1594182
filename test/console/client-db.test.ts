// The console's client database page in a real browser (Debian's Chromium through
// playwright-core): a role and a client added from the page, the client signing in with mqtt.js
// and its role's rules holding; a rule change from the page applying to the next PUBLISH; the
// client disabled from the page and refused; a Mosquitto dynamic-security.json imported from the
// page; a refusal shown on the form; delete and disconnect; a viewer without the buttons; how each
// client can sign in (its password's hash, the SCRAM mechanisms a password set on the page made,
// signing in with SCRAM).
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pbkdf2Sync } from 'node:crypto';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, disconnectReason, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { ScramClient, scramConnect } from '../helpers/scram-client.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker({ auth: { allowAnonymous: false }, limits: { authMaxFailures: 0 } });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await b?.stop();
});

const signedIn = (as: { username: string; password: string } = { username: 'admin', password: ADMIN_PASSWORD }): Promise<Page> => signIn(browser, b.base, as);

async function pubCode(username: string, password: string, topic: string): Promise<number | string> {
  let c;
  try {
    c = await connect(b.url, { username, password, protocolVersion: 5 });
  } catch {
    return 'refused';
  }
  try {
    await c.publishAsync(topic, 'x', { qos: 1 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  } finally {
    await end(c);
  }
}

test('roles and clients made on the page decide mqtt.js CONNECTs and PUBLISHes; changes apply at once', async () => {
  const page = await signedIn();
  page.on('dialog', (d) => void d.accept(d.message().startsWith('Rules of') ? 'allow publish devices/%u/#; allow publish news' : undefined));
  await page.getByRole('link', { name: 'Client database' }).click();
  const roleForm = page.getByRole('form', { name: 'add a role' });
  await roleForm.getByLabel('Name', { exact: true }).fill('device');
  // A mistyped rule is refused on the form, naming its line.
  await roleForm.getByLabel(/^Rules/).fill('allow publish devices/%u/#\npermit publish x');
  await roleForm.getByRole('button', { name: 'Add role' }).click();
  await waitFor(async () => /line 2: permit is not allow or deny/.test(await page.getByRole('alert').innerText()), { message: 'the refusal shown' });
  await roleForm.getByLabel(/^Rules/).fill('allow publish devices/%u/#\ndeny subscribe cmd/secret/#\nallow subscribe cmd/#');
  await roleForm.getByRole('button', { name: 'Add role' }).click();
  await page.locator('[data-role="device"]').waitFor();
  assert.match(await page.locator('[data-role="device"]').innerText(), /deny subscribe cmd\/secret\/#/);

  const clientForm = page.getByRole('form', { name: 'add a client' });
  await clientForm.getByLabel('Username').fill('web-dev');
  await clientForm.getByLabel('Password').fill('web-pw');
  await clientForm.getByLabel(/^Roles/).fill('device');
  await clientForm.getByRole('button', { name: 'Add client' }).click();
  await page.locator('[data-client="web-dev"]').waitFor();
  // The password set on the page also made SCRAM credentials: the row says so, and they sign in.
  assert.equal(await page.locator('[data-client="web-dev"] [data-signin]').innerText(), 'password (argon2), SCRAM-SHA-256, SCRAM-SHA-512');
  const scram = await scramConnect(b.url, new ScramClient('SCRAM-SHA-512', 'web-dev', 'web-pw'));
  assert.deepEqual([scram.reasonCode, scram.verified], [0, true]);
  await end(scram.client);

  assert.equal(await pubCode('web-dev', 'web-pw', 'devices/web-dev/t'), 0);
  assert.equal(await pubCode('web-dev', 'web-pw', 'news'), 0x87);
  assert.equal(await pubCode('web-dev', 'wrong', 'news'), 'refused');

  // A connected client follows the new rules from its next PUBLISH.
  const held = await connect(b.url, { username: 'web-dev', password: 'web-pw', protocolVersion: 5 });
  await page.locator('[data-role="device"]').getByRole('button', { name: 'Rules' }).click();
  await waitFor(async () => /allow publish news/.test(await page.locator('[data-role="device"]').innerText()), { message: 'the new rules listed' });
  await held.publishAsync('news', 'now allowed', { qos: 1 });

  // Disabled from the page (which also disconnects it): refused.
  const reason = disconnectReason(held);
  await page.getByLabel('web-dev enabled').uncheck();
  assert.equal(await reason, 0x98);
  await waitFor(async () => (await pubCode('web-dev', 'web-pw', 'news')) === 'refused', { message: 'the disabled client is refused' });
  await end(held);

  // Delete and disconnect.
  await page.getByLabel('web-dev enabled').check();
  await waitFor(async () => (await pubCode('web-dev', 'web-pw', 'news')) === 0, { message: 'enabled again' });
  await page.locator('[data-client="web-dev"]').getByRole('button', { name: 'Delete and disconnect' }).click();
  await page.locator('[data-client="web-dev"]').waitFor({ state: 'detached' });
  assert.equal(await pubCode('web-dev', 'web-pw', 'news'), 'refused');
  await page.close();
});

test("a Mosquitto dynamic-security.json imported from the page: its client signs in with its PBKDF2 password", async () => {
  const salt = Buffer.from('page-salt-123456');
  const dynsec = {
    defaultACLAccess: { publishClientSend: false, publishClientReceive: true, subscribe: false, unsubscribe: true },
    clients: [{ username: 'mosq-user', password: pbkdf2Sync('mosq-pw', salt, 101, 64, 'sha512').toString('base64'), salt: salt.toString('base64'), iterations: 101, roles: [{ rolename: 'mosq-role' }] }],
    roles: [{ rolename: 'mosq-role', acls: [{ acltype: 'publishClientSend', topic: 'mosq/#', allow: true }, { acltype: 'unsubscribePattern', topic: '#', allow: true }] }],
  };
  const page = await signedIn();
  await page.getByRole('link', { name: 'Client database' }).click();
  const form = page.getByRole('form', { name: 'import from Mosquitto' });
  await form.getByLabel('dynamic-security.json').fill(JSON.stringify(dynsec));
  await form.getByRole('button', { name: 'Import' }).click();
  await waitFor(async () => /Imported 1 clients and 1 roles; skipped: .*unsubscribePattern/.test(await page.getByRole('status').innerText()), { message: 'the import reported' });
  await page.locator('[data-client="mosq-user"]').waitFor();
  // A ready hash: no SCRAM credentials can be made from it.
  assert.equal(await page.locator('[data-client="mosq-user"] [data-signin]').innerText(), 'password (pbkdf2-sha512)');
  assert.equal(await pubCode('mosq-user', 'mosq-pw', 'mosq/1'), 0);
  assert.equal(await pubCode('mosq-user', 'mosq-pw', 'other'), 0x87);
  await page.close();
});

test('a viewer sees the lists without the buttons that change things', async () => {
  const page = await signedIn(VIEWER);
  await page.getByRole('link', { name: 'Client database' }).click();
  await page.locator('[data-client="mosq-user"]').waitFor();
  assert.equal(await page.getByRole('form', { name: 'add a client' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: 'Delete and disconnect' }).count(), 0);
  await page.close();
});
