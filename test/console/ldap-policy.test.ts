// The console's policy form for the ldap type, in a real browser (Debian's Chromium) against a
// broker with the admin server and a real OpenLDAP (slapd on a free port): choosing the type
// fills its template and lists its fields; an LDAP authentication policy added from the page
// decides mqtt.js CONNECTs; a service password the directory refuses is shown on the form naming
// the field; an LDAP ACL policy added from the page decides PUBLISHes by group.
// needs: broker, chromium, slapd
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, connect, end } from '../helpers/broker.ts';
import { launchBrowser, openRawJson, signIn } from '../helpers/browser.ts';
import type { Slapd } from '../helpers/slapd.ts';
import { GROUP_FILTER, GROUPS, PEOPLE, SERVICE, startDirectory, USER_DN, USER_FILTER } from '../policies/ldap-helpers.ts';

let b: AdminBroker;
let browser: Browser;
let slapd: Slapd;

before(async () => {
  slapd = await startDirectory();
  b = await startAdminBroker({ auth: { allowAnonymous: false, users: [], aclDefault: 'deny' }, limits: { authMaxFailures: 0 } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
  await slapd?.stop();
});

test('an LDAP authentication and ACL policy added from the form: its template and fields shown, a refused service account named, CONNECTs and PUBLISHes decided', async () => {
  const page = await signIn(browser, b.base, { username: 'admin', password: ADMIN_PASSWORD });
  try {
    await page.getByRole('link', { name: 'Auth and ACL' }).click();
    const chain = page.getByRole('region', { name: 'Authentication policies' });
    const form = chain.getByRole('form', { name: 'add an authentication policy' });
    await form.getByLabel('Type').selectOption('ldap');
    // The LDAP fields from the route's schema: mode a select (search by default), the service
    // account a fieldset with its password a password input, the superuser groups one per line.
    assert.equal(await form.locator('[data-field="config.mode"] select').inputValue(), 'search');
    assert.match(await form.locator('[data-field="config.filter"]').innerText(), /\$\{username\}/);
    assert.equal(await form.locator('[data-field="config.service.password"] input').getAttribute('type'), 'password');
    assert.equal(await form.locator('[data-field="config.superuserGroups"] textarea').count(), 1);

    const config = { urls: slapd.url, mode: 'search', service: { ...SERVICE, password: 'wrong' }, base: PEOPLE, filter: USER_FILTER };
    await form.getByLabel('Name', { exact: true }).fill('console-ldap');
    // Typed in the raw JSON escape hatch (closed by default): a refusal names its field there.
    await (await openRawJson(form)).fill(JSON.stringify(config));
    await form.getByRole('button', { name: 'Add policy' }).click();
    assert.match(await form.getByRole('alert').innerText(), /config\.service: the directory refused the service account's bind/);
    await form.getByLabel('Config (JSON)').fill(JSON.stringify({ ...config, service: SERVICE }));
    await form.getByRole('button', { name: 'Add policy' }).click();
    await chain.locator('tr[data-policy="console-ldap"]').waitFor();

    await assert.rejects(connect(b.url, { clientId: 'alice-1', username: 'alice', password: 'nope', protocolVersion: 5 }), (err: Error & { code?: number }) => err.code === 0x86);
    const alice = await connect(b.url, { clientId: 'alice-2', username: 'alice', password: 'alice-pw', protocolVersion: 5 });

    const acl = page.getByRole('region', { name: 'ACL policies' });
    const aclForm = acl.getByRole('form', { name: 'add an ACL policy' });
    await aclForm.getByLabel('Type').selectOption('ldap');
    // The group rules: a fieldset per group, each with its rules.
    await aclForm.getByRole('button', { name: 'Add groupRules' }).click();
    await aclForm.locator('[data-field="config.groupRules[0].group"] input').waitFor();
    await aclForm.getByRole('button', { name: 'Add rules' }).click();
    assert.deepEqual(await aclForm.locator('[data-field="config.groupRules[0].rules[0].permission"] option').allInnerTexts(), ['', 'allow', 'deny']);
    await aclForm.getByLabel('Name', { exact: true }).fill('console-ldap-groups');
    await (await openRawJson(aclForm)).fill(JSON.stringify({
      urls: slapd.url,
      mode: 'bind',
      userDn: USER_DN,
      service: SERVICE,
      groups: { base: GROUPS, filter: GROUP_FILTER },
      groupRules: [{ group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }] }],
    }));
    await aclForm.getByRole('button', { name: 'Add policy' }).click();
    await acl.locator('tr[data-policy="console-ldap-groups"]').waitFor();
    try {
      await alice.publishAsync('sensors/alice/temp', '21', { qos: 1 });
      await assert.rejects(alice.publishAsync('other/x', '1', { qos: 1 }), (err: { code?: number }) => err.code === 0x87);
    } finally {
      await end(alice);
    }
  } finally {
    await page.close();
  }
});
