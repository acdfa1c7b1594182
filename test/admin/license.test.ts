// Licences: the community licence by default, import of a signed licence, refusal of a bad
// format, a bad signature (another key, a tampered payload) and an expired licence, refresh of a
// stored licence that has expired or no longer verifies (reported, nothing disabled), the
// verification key from admin.licensePublicKey, and the signing script.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { ALL_FEATURES, loadLicensePublicKey, signLicense, verifyLicense, LicenseError, type LicensePayload } from '../../src/admin/license.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-license-'));
const keys = generateKeyPairSync('ed25519');
const publicFile = path.join(dir, 'public.pem');
writeFileSync(publicFile, keys.publicKey.export({ type: 'spki', format: 'pem' }));
const other = generateKeyPairSync('ed25519');

const DAY = 86_400_000;
function payload(overrides: Partial<LicensePayload> = {}): LicensePayload {
  return {
    licensee: 'ACME Corp',
    type: 'enterprise',
    issued: new Date(Date.now() - DAY).toISOString(),
    expires: new Date(Date.now() + 365 * DAY).toISOString(),
    features: ['metrics', 'runtime-endpoints'],
    maxConnections: 5,
    ...overrides,
  };
}
const signed = (p: LicensePayload, key: KeyObject = keys.privateKey) => signLicense(p, key);

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' }, admin: { licensePublicKey: publicFile } });
});
after(() => b.stop());

async function info() {
  const r = await b.api('GET', '/public/license', { as: 'none' });
  assert.equal(r.status, 200);
  return r.json.data;
}

test('without an imported licence: the community licence, every feature, no expiry, no credentials needed', async () => {
  const i = await info();
  assert.equal(i.type, 'community');
  assert.equal(i.expires, null);
  assert.equal(i.status, 'valid');
  assert.equal(i.source, 'builtin');
  assert.deepEqual(i.features, [...ALL_FEATURES]);
});

test('import and refresh need an admin: 401 without credentials, 403 for a viewer', async () => {
  const token = signed(payload());
  assert.equal((await b.api('POST', '/license/import', { as: 'none', body: { license: token } })).status, 401);
  assert.equal((await b.api('POST', '/license/import', { as: 'viewer', body: { license: token } })).status, 403);
  assert.equal((await b.api('POST', '/license/refresh', { as: 'viewer', body: {} })).status, 403);
  assert.equal((await info()).type, 'community');
});

test('bad imports are 400 naming license with the reason, and the licence in force stays', async () => {
  const good = signed(payload());
  const [body, sig] = good.split('.');
  const tamperedBody = Buffer.from(JSON.stringify({ ...payload(), maxConnections: 1_000_000 })).toString('base64url');
  const cases: [unknown, RegExp][] = [
    [{}, /license: is required/],
    [{ license: 42 }, /expected a string/],
    [{ license: 'not-a-licence' }, /bad format/],
    [{ license: `${body}.${sig}.x` }, /bad format/],
    [{ license: `${Buffer.from('[1]').toString('base64url')}.${sig}` }, /bad format/],
    [{ license: signed(payload(), other.privateKey) }, /bad signature/],
    [{ license: `${tamperedBody}.${sig}` }, /bad signature/],
    [{ license: `${body}.${sig.slice(0, -4)}AAAA` }, /bad signature/],
    [{ license: signed(payload({ issued: new Date(Date.now() - 3 * DAY).toISOString(), expires: new Date(Date.now() - DAY).toISOString() })) }, /expired/],
  ];
  for (const [req, message] of cases) {
    const r = await b.api('POST', '/license/import', { body: req });
    assert.equal(r.status, 400, JSON.stringify(req));
    assert.equal(r.json.field, 'license');
    assert.match(r.json.message, message);
  }
  const extra = await b.api('POST', '/license/import', { body: { license: good, force: true } });
  assert.equal(extra.status, 400);
  assert.equal(extra.json.field, 'force');
  assert.equal((await info()).type, 'community');
});

test('a good licence is imported, shown, and kept through refresh', async () => {
  const p = payload();
  const r = await b.api('POST', '/license/import', { body: { license: signed(p) } });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.licensee, 'ACME Corp');
  assert.equal(r.json.data.status, 'valid');
  const i = await info();
  assert.equal(i.type, 'enterprise');
  assert.equal(i.source, 'imported');
  assert.equal(i.expires, p.expires);
  assert.deepEqual(i.features, p.features);
  assert.equal(i.maxConnections, 5);
  const refreshed = await b.api('POST', '/license/refresh', { body: {} });
  assert.equal(refreshed.status, 200);
  assert.equal(refreshed.json.data.status, 'valid');
  assert.equal(refreshed.json.data.licensee, 'ACME Corp');
  const withField = await b.api('POST', '/license/refresh', { body: { x: 1 } });
  assert.equal(withField.status, 400);
  assert.equal(withField.json.field, 'x');
});

test('a stored licence that has expired or no longer verifies is reported on refresh, and nothing is disabled', async () => {
  const store = b.admin!.context.store;
  const expired = signed(payload({ licensee: 'Old Corp', maxConnections: 1, issued: new Date(Date.now() - 3 * DAY).toISOString(), expires: new Date(Date.now() - DAY).toISOString() }));
  await store.putAdmin('license', 'current', { license: expired, importTime: new Date().toISOString() });
  const r = await b.api('POST', '/license/refresh', { body: {} });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.status, 'expired');
  assert.equal(r.json.data.licensee, 'Old Corp');
  assert.match(r.json.data.reason, /expired/);
  assert.equal((await info()).status, 'expired');
  // maxConnections 1 and expired: two clients still connect, and the admin API still answers.
  const c1 = await connect(b.url);
  const c2 = await connect(b.url);
  await end(c1, c2);
  assert.equal((await b.api('GET', '/monitor/dashboard')).status, 200);

  await store.putAdmin('license', 'current', { license: signed(payload({ licensee: 'Forged' }), other.privateKey), importTime: new Date().toISOString() });
  const forged = await b.api('POST', '/license/refresh', { body: {} });
  assert.equal(forged.status, 200);
  assert.equal(forged.json.data.status, 'invalid');
  assert.match(forged.json.data.reason, /signature/);

  // A good import replaces it.
  assert.equal((await b.api('POST', '/license/import', { body: { license: signed(payload()) } })).status, 200);
  assert.equal((await info()).status, 'valid');
});

test('verifyLicense: expiry null never expires; the payload fields are checked', () => {
  const key = keys.publicKey;
  assert.equal(verifyLicense(signed(payload({ expires: null })), key, Date.now() + 1000 * 365 * DAY).expires, null);
  assert.throws(() => signLicense({ ...payload(), features: [''] }, keys.privateKey), LicenseError);
  assert.throws(() => signLicense({ ...payload(), issued: 'yesterday' }, keys.privateKey), /issued/);
  const expiredAt = verifyLicense.bind(null, signed(payload({ expires: new Date(Date.now() + DAY).toISOString() })), key, Date.now() + 2 * DAY);
  assert.throws(expiredAt, (err: unknown) => err instanceof LicenseError && err.reason === 'expired' && err.payload?.licensee === 'ACME Corp');
});

test('the verification key: built in when empty, an Ed25519 PEM file otherwise', () => {
  assert.equal(loadLicensePublicKey('').asymmetricKeyType, 'ed25519');
  assert.equal(loadLicensePublicKey(publicFile).asymmetricKeyType, 'ed25519');
  assert.throws(() => loadLicensePublicKey(path.join(dir, 'missing.pem')), /admin\.licensePublicKey: cannot read/);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const rsaFile = path.join(dir, 'rsa.pem');
  writeFileSync(rsaFile, rsa.publicKey.export({ type: 'spki', format: 'pem' }));
  assert.throws(() => loadLicensePublicKey(rsaFile), /Ed25519 key is needed/);
  // A licence for one key does not verify with the built-in one.
  assert.throws(() => verifyLicense(signed(payload()), loadLicensePublicKey('')), (err: unknown) => err instanceof LicenseError && err.reason === 'signature');
});

test('scripts/sign-license.ts makes a key pair and signs a licence the broker accepts', async () => {
  const out = path.join(dir, 'generated');
  const run = (args: string[]) => execFileSync(process.execPath, ['--import', 'tsx', 'scripts/sign-license.ts', ...args], { encoding: 'utf8' });
  run(['--generate-keypair', out]);
  const pub = loadLicensePublicKey(path.join(out, 'license-public.pem'));
  const token = run(['--key', path.join(out, 'license-private.pem'), '--licensee', 'Script Co', '--type', 'trial', '--expires', '2099-01-01', '--features', 'metrics,dashboards']).trim();
  const p = verifyLicense(token, pub);
  assert.equal(p.licensee, 'Script Co');
  assert.equal(p.type, 'trial');
  assert.deepEqual(p.features, ['metrics', 'dashboards']);
  assert.equal(p.expires, '2099-01-01T00:00:00.000Z');
  // Signed with our test key: the running broker takes it.
  const ours = run(['--key', writePrivate(), '--licensee', 'Via Script']).trim();
  const r = await b.api('POST', '/license/import', { body: { license: ours } });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.licensee, 'Via Script');
  assert.equal(r.json.data.expires, null);
  assert.equal(readFileSync(path.join(out, 'license-private.pem'), 'utf8').includes('PRIVATE KEY'), true);
});

function writePrivate(): string {
  const file = path.join(dir, 'private.pem');
  writeFileSync(file, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  return file;
}
