// The hash-password command: argv or stdin in, a verifiable hash out; bad arguments refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { verifyPassword } from '../../src/auth/index.ts';
import { parseHashPasswordArgs } from '../../src/auth/hash-password.ts';

const script = fileURLToPath(new URL('../../src/auth/hash-password.ts', import.meta.url));

function run(args: string[], input?: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', script, ...args], { input, encoding: 'utf8' });
}

test('argument parsing', () => {
  assert.deepEqual(parseHashPasswordArgs([]), { algorithm: 'argon2', cost: 12, password: undefined });
  assert.deepEqual(parseHashPasswordArgs(['-a', 'bcrypt', '--cost', '5', 'pw']), { algorithm: 'bcrypt', cost: 5, password: 'pw' });
  assert.throws(() => parseHashPasswordArgs(['--algorithm', 'md5']), /argon2 or bcrypt/);
  assert.throws(() => parseHashPasswordArgs(['--cost', '3']), /4\.\.31/);
  assert.throws(() => parseHashPasswordArgs(['a', 'b']), /unexpected argument/);
});

test('prints an argon2 hash of a password given as an argument', async () => {
  const r = run(['s3cret']);
  assert.equal(r.status, 0, r.stderr);
  const hash = r.stdout.trim();
  assert.match(hash, /^\$argon2id\$/);
  assert.equal(await verifyPassword(hash, 's3cret'), true);
});

test('reads the password from stdin, dropping one trailing newline', async () => {
  const r = run(['--algorithm', 'bcrypt', '--cost', '4'], 'from stdin\n');
  assert.equal(r.status, 0, r.stderr);
  const hash = r.stdout.trim();
  assert.match(hash, /^\$2b\$04\$/);
  assert.equal(await verifyPassword(hash, 'from stdin'), true);
});

test('an empty password or a bad option exits 2 with a message', () => {
  const empty = run([], '');
  assert.equal(empty.status, 2);
  assert.match(empty.stderr, /empty/);
  const bad = run(['--algorithm', 'sha1']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage:/);
  const help = run(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage:/);
});
