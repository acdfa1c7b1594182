// StaticAuthenticator with real argon2 and bcrypt hashes: success, wrong password, unknown user,
// anonymous on and off, certificate CN as the credential; and hashPassword.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AuthError, StaticAuthenticator, hashPassword, hashAlgorithmOf, passwordHashProblem, verifyPassword, type AuthRequest } from '../../src/auth/index.ts';

const argonHash = await hashPassword('correct horse', 'argon2');
const bcryptHash = await hashPassword('battery staple', 'bcrypt', 4);
const users = [
  { username: 'alice', password: argonHash },
  { username: 'bob', password: bcryptHash },
];

function req(fields: Partial<AuthRequest>): AuthRequest {
  return { clientId: 'c1', remoteAddress: '127.0.0.1', protocolVersion: 5, ...fields };
}

const pw = (text: string) => Buffer.from(text);

test('hashPassword makes hashes of the requested algorithm that verify', async () => {
  assert.match(argonHash, /^\$argon2id\$/);
  assert.match(bcryptHash, /^\$2b\$04\$/);
  assert.equal(hashAlgorithmOf(argonHash), 'argon2');
  assert.equal(hashAlgorithmOf(bcryptHash), 'bcrypt');
  assert.equal(hashAlgorithmOf('$2y$10$x'), 'bcrypt');
  assert.equal(hashAlgorithmOf('plain'), undefined);
  assert.equal(passwordHashProblem(argonHash), undefined);
  assert.equal(passwordHashProblem(bcryptHash), undefined);
  assert.equal(await verifyPassword(argonHash, 'correct horse'), true);
  assert.equal(await verifyPassword(bcryptHash, pw('battery staple')), true);
  assert.equal(await verifyPassword(bcryptHash, 'nope'), false);
});

test('argon2 and bcrypt users authenticate with the right password', async () => {
  const auth = new StaticAuthenticator({ allowAnonymous: false, users });
  assert.deepEqual(await auth.authenticate(req({ username: 'alice', password: pw('correct horse') })), { ok: true, username: 'alice' });
  assert.deepEqual(await auth.authenticate(req({ username: 'bob', password: pw('battery staple'), protocolVersion: 4 })), { ok: true, username: 'bob' });
});

test('a wrong or missing password, or an unknown user, is bad_credentials', async () => {
  const auth = new StaticAuthenticator({ allowAnonymous: true, users });
  const bad = { ok: false, reason: 'bad_credentials' };
  assert.deepEqual(await auth.authenticate(req({ username: 'alice', password: pw('battery staple') })), bad);
  assert.deepEqual(await auth.authenticate(req({ username: 'bob', password: pw('correct horse') })), bad);
  assert.deepEqual(await auth.authenticate(req({ username: 'bob' })), bad);
  assert.deepEqual(await auth.authenticate(req({ username: 'carol', password: pw('correct horse') })), bad);
});

test('an unknown user costs a hash verification too', async () => {
  const auth = new StaticAuthenticator({ allowAnonymous: false, users: [{ username: 'alice', password: argonHash }] });
  // The fastest of several runs, so a busy machine does not make the comparison flaky.
  const fastest = async (r: AuthRequest) => {
    let best = Infinity;
    for (let i = 0; i < 5; i++) {
      const start = process.hrtime.bigint();
      await auth.authenticate(r);
      best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
    }
    return best;
  };
  const known = await fastest(req({ username: 'alice', password: pw('wrong') }));
  const unknown = await fastest(req({ username: 'nobody', password: pw('wrong') }));
  assert.ok(unknown > known / 2, `unknown user answered in ${unknown} ms, known in ${known} ms`);
});

test('anonymous clients are accepted only when allowAnonymous', async () => {
  const open = new StaticAuthenticator({ allowAnonymous: true, users });
  const closed = new StaticAuthenticator({ allowAnonymous: false, users });
  assert.deepEqual(await open.authenticate(req({})), { ok: true });
  assert.deepEqual(await closed.authenticate(req({})), { ok: false, reason: 'not_authorized' });
  // Users configured: an unknown username is refused, anonymous access or not.
  assert.deepEqual(await open.authenticate(req({ username: 'x', password: pw('y') })), { ok: false, reason: 'bad_credentials' });
});

test('anonymous access and no users at all: a username is taken as the identity, without a password check (as Mosquitto does)', async () => {
  const fresh = new StaticAuthenticator({ allowAnonymous: true, users: [] });
  assert.deepEqual(await fresh.authenticate(req({ username: 'node-red', password: pw('anything') })), { ok: true, username: 'node-red' });
  const locked = new StaticAuthenticator({ allowAnonymous: false, users: [] });
  assert.deepEqual(await locked.authenticate(req({ username: 'node-red', password: pw('anything') })), { ok: false, reason: 'bad_credentials' });
});

test('a certificate CN is the credential: accepted when configured or anonymous allowed', async () => {
  const closed = new StaticAuthenticator({ allowAnonymous: false, users });
  assert.deepEqual(await closed.authenticate(req({ certificateCN: 'alice' })), { ok: true, username: 'alice' });
  assert.deepEqual(await closed.authenticate(req({ certificateCN: 'alice', username: 'bob', password: pw('wrong') })), { ok: true, username: 'alice' });
  assert.deepEqual(await closed.authenticate(req({ certificateCN: 'device-9' })), { ok: false, reason: 'not_authorized' });
  const open = new StaticAuthenticator({ allowAnonymous: true, users });
  assert.deepEqual(await open.authenticate(req({ certificateCN: 'device-9' })), { ok: true, username: 'device-9' });
});

test('bad user entries are refused at construction', () => {
  const invalid = (e: unknown) => e instanceof AuthError && e.code === 'AUTH_CONFIG_INVALID';
  assert.throws(() => new StaticAuthenticator({ allowAnonymous: false, users: [{ username: 'a', password: 'plain' }] }), invalid);
  assert.throws(() => new StaticAuthenticator({ allowAnonymous: false, users: [{ username: '', password: bcryptHash }] }), invalid);
  assert.throws(() => new StaticAuthenticator({ allowAnonymous: false, users: [users[0], users[0]] }), /twice/);
});
