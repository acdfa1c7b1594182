// Mosquitto password files written by the real /usr/bin/mosquitto_passwd: $7$ (PBKDF2-SHA512, the
// default) and $6$ (SHA-512, -H sha512) parse and verify; comments, blank lines, malformed lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { parsePasswdFile, verifyMosquittoHash, MosquittoFileError } from '../../src/auth/index.ts';

const MOSQUITTO_PASSWD = '/usr/bin/mosquitto_passwd';

/** A password file made by mosquitto_passwd: alice ($7$, default), bob ($6$), carol ($7$, utf-8). */
function realFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'spindle-passwd-')), 'passwd');
  execFileSync(MOSQUITTO_PASSWD, ['-c', '-b', file, 'alice', 'alice-secret']);
  execFileSync(MOSQUITTO_PASSWD, ['-H', 'sha512', '-b', file, 'bob', 'hunter2']);
  execFileSync(MOSQUITTO_PASSWD, ['-H', 'sha512-pbkdf2', '-b', file, 'carol', 'pässwörd']);
  return readFileSync(file, 'utf8');
}

test('a file written by mosquitto_passwd: $7$ and $6$ hashes verify the right password only', async () => {
  const text = realFile();
  assert.match(text, /^alice:\$7\$101\$/m);
  assert.match(text, /^bob:\$6\$/m);
  const users = parsePasswdFile(text);
  assert.deepEqual([...users.keys()], ['alice', 'bob', 'carol']);
  assert.equal(users.get('alice')!.kind, 'pbkdf2-sha512');
  assert.equal(users.get('bob')!.kind, 'sha512');
  assert.equal(await verifyMosquittoHash(users.get('alice')!, 'alice-secret'), true);
  assert.equal(await verifyMosquittoHash(users.get('alice')!, Buffer.from('alice-secret')), true);
  assert.equal(await verifyMosquittoHash(users.get('alice')!, 'alice-secreT'), false);
  assert.equal(await verifyMosquittoHash(users.get('alice')!, ''), false);
  assert.equal(await verifyMosquittoHash(users.get('bob')!, 'hunter2'), true);
  assert.equal(await verifyMosquittoHash(users.get('bob')!, 'hunter3'), false);
  assert.equal(await verifyMosquittoHash(users.get('carol')!, 'pässwörd'), true);
  assert.equal(await verifyMosquittoHash(users.get('carol')!, 'passwort'), false);
});

test('known lines: a $7$ and a $6$ hash captured from mosquitto_passwd 2.x', async () => {
  const users = parsePasswdFile([
    '# users',
    '',
    'alice:$7$101$URBsg3oIvssjfgqk$DwlLTS2O/FjwOr96ZSLij07lsFi/ELssKX4TU+W92/TyeviLe1D60YmjYj7luGfnsgUkbClnOkr7EFNvaaQRQA==',
    '   ',
    'bob:$6$ga1Y493QG8vh1wcK$hVA5bsGLpCcbN67aQqiTYvjU1StcosTNY5CkxyZaOUYfwmeuuqGYBR5tnlpGKM1dpBEEmvqiX2eIJd8JrgZLng==\r',
  ].join('\n'));
  assert.equal(await verifyMosquittoHash(users.get('alice')!, 'secret'), true);
  assert.equal(await verifyMosquittoHash(users.get('bob')!, 'hunter2'), true);
  assert.equal(await verifyMosquittoHash(users.get('bob')!, 'secret'), false);
});

test('malformed lines are errors naming the line', () => {
  const bad: [string, RegExp][] = [
    ['alice', /line 2: expected "username:hash"/],
    [':$6$abcd$abcd', /line 2: expected "username:hash"/],
    ['alice:plaintext', /line 2: the password is not hashed/],
    ['alice:$5$abc$def', /line 2: unknown hash type/],
    ['alice:$6$not*base64$abcd', /line 2: malformed \$6\$/],
    ['alice:$6$c2FsdA==$c2hvcnQ=', /line 2: malformed \$6\$/],
    ['alice:$7$x$c2FsdA==$c2FsdA==', /line 2: malformed \$7\$ hash: iterations/],
    ['alice:$7$0$c2FsdA==$c2FsdA==', /line 2: malformed \$7\$ hash: iterations/],
    ['alice:$7$101$c2FsdA==', /line 2: unknown hash type/],
    ['alice:$7$101$$c2FsdA==', /line 2: malformed \$7\$/],
  ];
  for (const [line, message] of bad) {
    assert.throws(() => parsePasswdFile(`# first\n${line}\n`, 'pw'), (err: unknown) => {
      assert.ok(err instanceof MosquittoFileError);
      assert.equal(err.code, 'MOSQUITTO_PASSWD_INVALID');
      assert.match(err.message, /^pw line 2: /);
      assert.match(err.message, message);
      return true;
    }, line);
  }
  assert.throws(() => parsePasswdFile('a:$6$ga1Y493QG8vh1wcK$hVA5bsGLpCcbN67aQqiTYvjU1StcosTNY5CkxyZaOUYfwmeuuqGYBR5tnlpGKM1dpBEEmvqiX2eIJd8JrgZLng==\na:$6$ga1Y493QG8vh1wcK$hVA5bsGLpCcbN67aQqiTYvjU1StcosTNY5CkxyZaOUYfwmeuuqGYBR5tnlpGKM1dpBEEmvqiX2eIJd8JrgZLng=='), /line 2: user "a" is listed twice/);
  assert.equal(parsePasswdFile('').size, 0);
});
