// Password strategies (EMQX semantics): every strategy and salt type round trips, a wrong password
// fails, known digests verify, malformed stored hashes are false without throwing.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SALT_TYPES, STRATEGIES, hashWithStrategy, heavyVerifications, setHashConcurrency, verifyWithStrategy, type StrategyOptions } from '../../src/auth/strategies/password-strategy.ts';
import { constantTimeEqual } from '../../src/auth/strategies/constant-time.ts';

const pbkdf2 = { iterations: 1000, digest: 'sha256' as const, keyLength: 32 };

for (const strategy of STRATEGIES) {
  for (const saltType of SALT_TYPES) {
    test(`${strategy}, salt ${saltType}: round trip, wrong password false`, async () => {
      const opts: StrategyOptions = { strategy, saltType, pbkdf2, bcryptCost: 4 };
      const salt = 'NaCl-42';
      const hash = await hashWithStrategy(opts, 'correct horse', salt);
      assert.equal(await verifyWithStrategy(opts, 'correct horse', { hash, salt }), true);
      assert.equal(await verifyWithStrategy(opts, Buffer.from('correct horse'), { hash, salt }), true);
      assert.equal(await verifyWithStrategy(opts, 'correct hors', { hash, salt }), false);
      assert.equal(await verifyWithStrategy(opts, '', { hash, salt }), false);
      if (saltType !== 'disable' && strategy !== 'bcrypt' && strategy !== 'argon2') {
        assert.equal(await verifyWithStrategy(opts, 'correct horse', { hash, salt: 'other' }), false, 'the salt takes part');
      }
    });
  }
}

test('known vectors: digests of "password" (hex, either case), salted as EMQX does', async () => {
  const sha256 = '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8';
  assert.equal(await verifyWithStrategy({ strategy: 'sha256', saltType: 'disable' }, 'password', { hash: sha256 }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'sha256', saltType: 'disable' }, 'password', { hash: sha256.toUpperCase() }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'md5', saltType: 'disable' }, 'password', { hash: '5f4dcc3b5aa765d61d8327deb882cf99' }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'sha1', saltType: 'disable' }, 'password', { hash: '5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8' }), true);
  // sha256("saltpassword") and sha256("passwordsalt")
  assert.equal(await verifyWithStrategy({ strategy: 'sha256', saltType: 'prefix' }, 'password', { hash: '13601bda4ea78e55a07b98866d2be6be0744e3866f13c00c811cab608a28f322', salt: 'salt' }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'sha256', saltType: 'suffix' }, 'password', { hash: '13601bda4ea78e55a07b98866d2be6be0744e3866f13c00c811cab608a28f322', salt: 'salt' }), false);
  // RFC 6070: PBKDF2-HMAC-SHA1("password", "salt", 2 iterations, 20 bytes)
  assert.equal(await verifyWithStrategy({ strategy: 'pbkdf2', saltType: 'disable', pbkdf2: { iterations: 2, digest: 'sha1', keyLength: 20 } }, 'password', { hash: 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957', salt: 'salt' }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'plain', saltType: 'disable' }, 'password', { hash: 'password' }), true);
  assert.equal(await verifyWithStrategy({ strategy: 'plain', saltType: 'disable' }, 'password', { hash: 'Password' }), false);
});

test('malformed stored hashes are false, never a rejection', async () => {
  const cases: [StrategyOptions, string][] = [
    [{ strategy: 'sha256', saltType: 'disable' }, 'zz-not-hex'],
    [{ strategy: 'sha256', saltType: 'disable' }, '5e88'],
    [{ strategy: 'sha256', saltType: 'disable' }, ''],
    [{ strategy: 'md5', saltType: 'disable' }, 'abc'],
    [{ strategy: 'bcrypt', saltType: 'disable' }, '$2b$04$short'],
    [{ strategy: 'bcrypt', saltType: 'disable' }, ''],
    [{ strategy: 'argon2', saltType: 'disable' }, '$argon2id$v=19$garbage'],
    [{ strategy: 'pbkdf2', saltType: 'disable', pbkdf2 }, 'not hex'],
    [{ strategy: 'pbkdf2', saltType: 'disable' }, 'abcd'], // no pbkdf2 options
    [{ strategy: 'pbkdf2', saltType: 'disable', pbkdf2: { iterations: 0, digest: 'sha1', keyLength: 20 } }, 'abcd'],
    [{ strategy: 'nope' as never, saltType: 'disable' }, 'abcd'],
    [{ strategy: 'sha1', saltType: 'sideways' as never }, 'abcd'],
  ];
  for (const [opts, hash] of cases) {
    assert.equal(await verifyWithStrategy(opts, 'password', { hash, salt: 's' }), false, `${opts.strategy} ${JSON.stringify(hash)}`);
  }
});

test('constantTimeEqual: equal, different, different lengths', () => {
  assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abc')), true);
  assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abd')), false);
  assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abcd')), false);
  assert.equal(constantTimeEqual(Buffer.alloc(0), Buffer.alloc(0)), true);
});

test('heavy verifications run at most hashConcurrency at once; the others wait in order and all answer', async () => {
  const hash = await hashWithStrategy({ strategy: 'bcrypt', saltType: 'disable', bcryptCost: 4 }, 'pw');
  setHashConcurrency(1);
  try {
    const waitedBefore = heavyVerifications.waited;
    let most = 0;
    const checks = ['pw', 'no', 'pw', 'pw'].map((p) => {
      const v = verifyWithStrategy({ strategy: 'bcrypt', saltType: 'disable' }, p, { hash });
      most = Math.max(most, heavyVerifications.running);
      return v;
    });
    assert.equal(heavyVerifications.waiting, 3);
    assert.deepEqual(await Promise.all(checks), [true, false, true, true]);
    assert.equal(most, 1);
    assert.equal(heavyVerifications.waited - waitedBefore, 3);
    assert.equal(heavyVerifications.running, 0);
    assert.equal(heavyVerifications.waiting, 0);
    assert.equal(await verifyWithStrategy({ strategy: 'sha256', saltType: 'disable' }, 'x', { hash: 'ab' }), false, 'digests do not queue');
  } finally {
    setHashConcurrency(0);
  }
});
