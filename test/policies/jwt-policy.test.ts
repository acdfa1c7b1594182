// The jwt auth policy with tokens signed by jose: an HS256 secret, an ES256 public key (PEM and
// certificate), RS256 keys served as a JWKS by a real node:http server (rotation, the server down).
// Covers allow with the ACL claim in both EMQX formats and the username claim, deny on expiry,
// signature, algorithm and claim mismatch, ignore when the password is not a JWT, ignore with error
// when the key set cannot be fetched, and config mistakes named by field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';

import { exportJWK, exportSPKI, generateKeyPair, importPKCS8, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

import { compileJwtAuthPolicy, parseJwtPolicyConfig } from '../../src/policies/jwt.ts';
import { PolicyConfigError, type AuthAnswer, type AuthQuery, type CompiledAuthPolicy } from '../../src/policies/types.ts';
import { CERT_KEY_PEM, CERT_PEM, closedPort, context, endpoint, json, keptLog, record } from './helpers.ts';

const SECRET = 'a-test-secret-of-some-length-0123456789';
const secretKey = new TextEncoder().encode(SECRET);

function policy(config: Record<string, unknown>, ctx = context()): CompiledAuthPolicy {
  return compileJwtAuthPolicy(record('jwt', parseJwtPolicyConfig(config)), ctx);
}

async function sign(claims: JWTPayload, key: CryptoKey | Uint8Array, header: { alg: string; kid?: string }, expiresIn: string | number = '1h'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).setIssuedAt().setExpirationTime(expiresIn).sign(key);
}

/** An answer without its validUntil (the token's exp, checked on its own where it matters). */
async function answerOf(asked: Promise<AuthAnswer>): Promise<AuthAnswer> {
  const a = await asked;
  if (a.result === 'allow') delete a.validUntil;
  return a;
}

function withPassword(token: string, extra: Partial<AuthQuery> = {}): AuthQuery {
  return { clientid: 'dev-1', username: 'alice', password: Buffer.from(token), peerhost: '10.0.0.9', ...extra };
}

function assertDenied(a: AuthAnswer, reason: RegExp): void {
  assert.equal(a.result, 'deny', JSON.stringify(a));
  assert.match(a.result === 'deny' ? a.reason : '', reason);
}

function assertFailed(a: AuthAnswer, reason: RegExp): void {
  assert.equal(a.result, 'ignore', JSON.stringify(a));
  assert.equal(a.result === 'ignore' && a.error, true, 'an ignore caused by a failure');
  assert.match(a.result === 'ignore' ? String(a.reason) : '', reason);
}

test('jwt config: defaults written out, algorithms left to follow the key, the same when parsed again', () => {
  const c = parseJwtPolicyConfig({ secret: SECRET });
  assert.deepEqual(c, { secret: SECRET, secretBase64Encoded: false, from: 'password', verifyClaims: {}, superuserClaim: 'is_superuser', aclClaim: 'acl', clockTolerance: 5 });
  assert.deepEqual(parseJwtPolicyConfig(c), c);
  const j = parseJwtPolicyConfig({ jwksUrl: 'https://idp.example/jwks', algorithms: ['RS256'], from: 'username', usernameClaim: 'preferred_username', verifyClaims: { sub: '${clientid}' } });
  assert.deepEqual(j, {
    jwksUrl: 'https://idp.example/jwks', jwksRefresh: 300, jwksCooldown: 30, algorithms: ['RS256'], from: 'username',
    verifyClaims: { sub: '${clientid}' }, superuserClaim: 'is_superuser', aclClaim: 'acl', usernameClaim: 'preferred_username', clockTolerance: 5,
  });
  assert.deepEqual(parseJwtPolicyConfig(j), j);
});

test('jwt config: each mistake names its field', async () => {
  const { publicKey } = await generateKeyPair('ES256', { extractable: true });
  const esPem = await exportSPKI(publicKey);
  const smallRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const cases: [unknown, string][] = [
    [null, 'config'],
    [{}, 'config'],
    [{ secret: '' }, 'config'],
    [{ secret: SECRET, publicKey: esPem }, 'config.publicKey'],
    [{ publicKey: esPem, jwksUrl: 'https://idp/jwks' }, 'config.jwksUrl'],
    [{ secret: 42 }, 'config.secret'],
    [{ secret: 'not*base64!', secretBase64Encoded: true }, 'config.secret'],
    [{ secret: SECRET, secretBase64Encoded: 'yes' }, 'config.secretBase64Encoded'],
    [{ secret: SECRET, algorithms: ['RS256'] }, 'config.algorithms'],
    [{ secret: SECRET, algorithms: ['none'] }, 'config.algorithms'],
    [{ secret: SECRET, algorithms: [] }, 'config.algorithms'],
    [{ publicKey: esPem, algorithms: ['ES384'] }, 'config.algorithms'],
    [{ jwksUrl: 'https://idp/jwks', algorithms: ['HS256'] }, 'config.algorithms'],
    [{ publicKey: 'not a key' }, 'config.publicKey'],
    [{ publicKey: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' }, 'config.publicKey'],
    [{ publicKey: CERT_KEY_PEM }, 'config.publicKey'],
    [{ publicKey: smallRsa }, 'config.publicKey'],
    [{ jwksUrl: 'ftp://idp/jwks' }, 'config.jwksUrl'],
    [{ jwksUrl: 'idp/jwks' }, 'config.jwksUrl'],
    [{ jwksUrl: 'https://idp/jwks', jwksRefresh: 0 }, 'config.jwksRefresh'],
    [{ secret: SECRET, from: 'header' }, 'config.from'],
    [{ secret: SECRET, verifyClaims: ['sub'] }, 'config.verifyClaims'],
    [{ secret: SECRET, verifyClaims: { sub: 7 } }, 'config.verifyClaims.sub'],
    [{ secret: SECRET, verifyClaims: { sub: '${password}' } }, 'config.verifyClaims.sub'],
    [{ secret: SECRET, superuserClaim: '' }, 'config.superuserClaim'],
    [{ secret: SECRET, aclClaim: 3 }, 'config.aclClaim'],
    [{ secret: SECRET, clockTolerance: -1 }, 'config.clockTolerance'],
  ];
  for (const [raw, field] of cases) {
    assert.throws(() => parseJwtPolicyConfig(raw), (err: unknown) => err instanceof PolicyConfigError && err.field === field, `${JSON.stringify(raw)?.slice(0, 80)} -> ${field}`);
  }
});

test('jwt HS256: a valid token allows, with the superuser flag and the ACL claim in the list format', async () => {
  const p = policy({ secret: SECRET });
  assert.deepEqual([...p.params], ['password']);
  const acl = [
    { permission: 'allow', action: 'publish', topic: 't/${username}/#' },
    { permission: 'allow', action: 'sub', topics: ['s/%c', 'news/+'] },
    { permission: 'deny', action: 'all', topic: '#', qos: 2 },
  ];
  const token = await sign({ sub: 'alice', is_superuser: true, acl }, secretKey, { alg: 'HS256' });
  assert.deepEqual(await answerOf(p.authenticate(withPassword(token))), {
    result: 'allow',
    superuser: true,
    acl: [
      { permission: 'allow', action: 'publish', topic: 't/%u/#' },
      { permission: 'allow', action: 'subscribe', topic: 's/%c' },
      { permission: 'allow', action: 'subscribe', topic: 'news/+' },
      // A qos condition on a deny is widened: it denies at every qos.
      { permission: 'deny', action: 'all', topic: '#' },
    ],
  });
  const plain = await sign({ sub: 'alice' }, secretKey, { alg: 'HS512' });
  const plainAnswer = await p.authenticate(withPassword(plain));
  assert.ok(plainAnswer.result === 'allow' && typeof plainAnswer.validUntil === 'number' && Math.abs(plainAnswer.validUntil - (Date.now() + 3600_000)) < 5000, 'a cached allow ends at the token\'s exp');
  assert.deepEqual(await answerOf(Promise.resolve(plainAnswer)), { result: 'allow', superuser: false }, 'no acl claim: acl undefined');
  await p.close();
});

test('jwt HS256: the ACL claim in the old {pub, sub, all} format, and the username claim', async () => {
  const p = policy({ secret: SECRET, usernameClaim: 'user' });
  assert.deepEqual([...p.params], ['password']);
  const token = await sign({ user: 'from-token', acl: { pub: ['a/1', 'a/2'], sub: ['b/#'], all: ['c/%u'] } }, secretKey, { alg: 'HS256' });
  assert.deepEqual(await answerOf(p.authenticate(withPassword(token))), {
    result: 'allow',
    superuser: false,
    username: 'from-token',
    acl: [
      { permission: 'allow', action: 'publish', topic: 'a/1' },
      { permission: 'allow', action: 'publish', topic: 'a/2' },
      { permission: 'allow', action: 'subscribe', topic: 'b/#' },
      { permission: 'allow', action: 'all', topic: 'c/%u' },
    ],
  });
  const withoutUser = await sign({ sub: 'x' }, secretKey, { alg: 'HS256' });
  assertDenied(await p.authenticate(withPassword(withoutUser)), /claim user/);
});

test('jwt: ACL topics that are not valid patterns are dropped (logged once with a count), a malformed claim denies', async () => {
  const { log, lines } = keptLog();
  const p = policy({ secret: SECRET }, context(log));
  const acl = [
    { permission: 'allow', action: 'publish', topic: 'ok/1' },
    { permission: 'allow', action: 'publish', topics: ['bad/#/x', 'bad/%x', 'ok/2', 'bad/+%u'] },
    { permission: 'allow', action: 'subscribe', topic: 'q/1', qos: 1 },
    { permission: 'allow', action: 'subscribe', topic: 'eq q/+' },
    { permission: 'allow', action: 'subscribe', topic: 'eq 100%' },
    { permission: 'allow', action: 'subscribe', topic: 'p/${cert}' },
  ];
  const token = await sign({ acl }, secretKey, { alg: 'HS256' });
  const a = await answerOf(p.authenticate(withPassword(token)));
  assert.deepEqual(a, {
    result: 'allow',
    superuser: false,
    acl: [
      { permission: 'allow', action: 'publish', topic: 'ok/1' },
      { permission: 'allow', action: 'publish', topic: 'ok/2' },
      { permission: 'allow', action: 'subscribe', topic: '100%%' },
    ],
  });
  await p.authenticate(withPassword(token));
  const warnings = lines.filter((l) => l.level === 'warn');
  assert.equal(warnings.length, 1, 'at most one line per 10 s');
  assert.equal(warnings[0].dropped, 6);

  for (const bad of [[{ permission: 'maybe', action: 'publish', topic: 'x' }], [{ permission: 'allow', action: 'read', topic: 'x' }], [{ permission: 'deny', action: 'publish' }], ['x/#'], 'x/#', { pub: 'x/#' }]) {
    const t = await sign({ acl: bad }, secretKey, { alg: 'HS256' });
    assertDenied(await p.authenticate(withPassword(t)), /claim acl/);
  }
});

test('jwt HS256: expired, wrong signature, unsigned or not yet valid tokens are denied; a password that is no JWT is ignored', async () => {
  const p = policy({ secret: SECRET });
  const expired = await sign({ sub: 'a' }, secretKey, { alg: 'HS256' }, Math.floor(Date.now() / 1000) - 60);
  assertDenied(await p.authenticate(withPassword(expired)), /expired/);
  const forged = await sign({ sub: 'a' }, new TextEncoder().encode('another secret'), { alg: 'HS256' });
  assertDenied(await p.authenticate(withPassword(forged)), /signature/);
  const [head, body] = forged.split('.');
  assertDenied(await p.authenticate(withPassword(`${head}.${body}.`)), /signature/);
  const early = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setNotBefore(Math.floor(Date.now() / 1000) + 600).sign(secretKey);
  assertDenied(await p.authenticate(withPassword(early)), /nbf/);
  // Within the clock tolerance (5 s) an expired token still passes.
  const justExpired = await sign({}, secretKey, { alg: 'HS256' }, Math.floor(Date.now() / 1000) - 2);
  assert.equal((await p.authenticate(withPassword(justExpired))).result, 'allow');

  for (const password of ['hunter2', 'a.b', 'a.b.c.d.e', '']) {
    const a = await p.authenticate(withPassword(password));
    assert.equal(a.result, 'ignore', password);
    assert.notEqual(a.result === 'ignore' && a.error, true, 'no token is not a failure');
  }
  assert.equal((await p.authenticate({ clientid: 'c', peerhost: '::1' })).result, 'ignore');
});

test('jwt: verifyClaims must equal their filled templates; the token may come from the username', async () => {
  const p = policy({ secret: SECRET, verifyClaims: { sub: '${username}', client_id: '${clientid}', iss: 'spindle-idp' } });
  assert.deepEqual([...p.params].sort(), ['clientid', 'password', 'username']);
  const token = await sign({ sub: 'alice', client_id: 'dev-1', iss: 'spindle-idp' }, secretKey, { alg: 'HS256' });
  assert.equal((await p.authenticate(withPassword(token))).result, 'allow');
  assertDenied(await p.authenticate(withPassword(token, { clientid: 'dev-2' })), /claim client_id does not match/);
  assertDenied(await p.authenticate(withPassword(token, { username: undefined })), /claim sub cannot be checked/);
  const noIss = await sign({ sub: 'alice', client_id: 'dev-1' }, secretKey, { alg: 'HS256' });
  assertDenied(await p.authenticate(withPassword(noIss)), /claim iss is missing/);

  const audience = policy({ secret: SECRET, from: 'username', verifyClaims: { aud: 'broker' } });
  assert.deepEqual([...audience.params], ['username']);
  const inUsername = await sign({ aud: ['other', 'broker'] }, secretKey, { alg: 'HS256' });
  assert.equal((await audience.authenticate({ clientid: 'c', username: inUsername, peerhost: '::1', password: Buffer.from('x') })).result, 'allow');
  assert.equal((await audience.authenticate(withPassword(inUsername))).result, 'ignore', 'the username is not a token');
});

test('jwt: a base64 secret is decoded', async () => {
  const bytes = Buffer.from('binary\u0000secret\u00ff-bytes-of-some-length');
  const p = policy({ secret: bytes.toString('base64'), secretBase64Encoded: true });
  const token = await sign({}, new Uint8Array(bytes), { alg: 'HS256' });
  assert.equal((await p.authenticate(withPassword(token))).result, 'allow');
});

test('jwt ES256 public key (PEM and certificate): allows its tokens, denies other keys and HMAC tokens', async () => {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const p = policy({ publicKey: await exportSPKI(publicKey) });
  await p.dryRun();
  assert.equal((await p.authenticate(withPassword(await sign({ is_superuser: 'true' }, privateKey, { alg: 'ES256' })))).result, 'allow');
  const other = await generateKeyPair('ES256');
  assertDenied(await p.authenticate(withPassword(await sign({}, other.privateKey, { alg: 'ES256' }))), /signature/);
  assertDenied(await p.authenticate(withPassword(await sign({}, secretKey, { alg: 'HS256' }))), /alg/);

  const fromCert = policy({ publicKey: CERT_PEM });
  const certKey = await importPKCS8(CERT_KEY_PEM, 'ES256');
  assert.equal((await fromCert.authenticate(withPassword(await sign({}, certKey, { alg: 'ES256' })))).result, 'allow');
});

interface JwksServer {
  url: string;
  fetches: () => number;
  serve: (keys: JWK[]) => void;
  close: () => Promise<void>;
}

async function jwksServer(keys: JWK[]): Promise<JwksServer> {
  let current = keys;
  let fetches = 0;
  const e = await endpoint((_req, res) => {
    fetches++;
    json(res, 200, { keys: current });
  });
  return { url: `${e.url}/.well-known/jwks.json`, fetches: () => fetches, serve: (k) => (current = k), close: e.close };
}

async function rsaKey(kid: string): Promise<{ jwk: JWK; privateKey: CryptoKey }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }, privateKey };
}

test('jwt JWKS (RS256): the key set is fetched and cached; a new kid on the server is fetched again', async () => {
  const k1 = await rsaKey('k1');
  const k2 = await rsaKey('k2');
  const server = await jwksServer([k1.jwk]);
  const p = policy({ jwksUrl: server.url, jwksCooldown: 0 });
  try {
    await p.dryRun();
    assert.equal(server.fetches(), 1);
    const t1 = await sign({ sub: 'a' }, k1.privateKey, { alg: 'RS256', kid: 'k1' });
    assert.equal((await p.authenticate(withPassword(t1))).result, 'allow');
    assert.equal((await p.authenticate(withPassword(t1))).result, 'allow');
    assert.equal(server.fetches(), 1, 'the cached set answers');

    // Rotation: k2 appears on the server; a token signed with it makes jose fetch again.
    server.serve([k1.jwk, k2.jwk]);
    const t2 = await sign({ sub: 'b' }, k2.privateKey, { alg: 'RS256', kid: 'k2' });
    assert.equal((await p.authenticate(withPassword(t2))).result, 'allow');
    assert.equal(server.fetches(), 2);

    // A kid the server does not have either: denied (after one more look).
    const k3 = await rsaKey('k3');
    assertDenied(await p.authenticate(withPassword(await sign({}, k3.privateKey, { alg: 'RS256', kid: 'k3' }))), /key/i);
    // Signed by k3 but claiming k1: the signature fails.
    assertDenied(await p.authenticate(withPassword(await sign({}, k3.privateKey, { alg: 'RS256', kid: 'k1' }))), /signature/);
    // No kid, and two keys in the set: each is tried.
    assert.equal((await p.authenticate(withPassword(await sign({}, k2.privateKey, { alg: 'RS256' })))).result, 'allow');
  } finally {
    await p.close();
    await server.close();
  }
});

test('jwt JWKS: a key set that cannot be fetched is ignore with error; the dry run refuses naming config.jwksUrl', async () => {
  const k1 = await rsaKey('k1');
  const token = await sign({}, k1.privateKey, { alg: 'RS256', kid: 'k1' });
  const port = await closedPort();
  const down = policy({ jwksUrl: `http://127.0.0.1:${port}/jwks` });
  assertFailed(await down.authenticate(withPassword(token)), /key set .* unavailable/);
  await assert.rejects(down.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.jwksUrl' && /ECONNREFUSED/.test(err.message));

  const e = await endpoint((_req, res) => res.writeHead(500).end('oops'));
  const broken = policy({ jwksUrl: `${e.url}/jwks` });
  try {
    assertFailed(await broken.authenticate(withPassword(token)), /unavailable.*200 OK/);
    await assert.rejects(broken.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.jwksUrl');
  } finally {
    await e.close();
  }
});
