// SCRAM's arithmetic and messages (src/auth/scram): RFC 7677's SCRAM-SHA-256 example exchange
// end to end through ScramMethod (credentials derived from "pencil", the RFC's nonces: the same
// server-first and v=); RFC 5803 text read and written; a table of client messages the server
// refuses, with the RFC 5802 server-error each gets; usernames decoded (=2C, =3D) and SASLprep'd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import { deriveScramCredentials, formatScramCredentials, parseScramCredentials } from '../../src/auth/scram/credentials.ts';
import { parseClientFinal, parseClientFirst } from '../../src/auth/scram/messages.ts';
import { ScramMethod, type ScramLookupRequest, type ScramResultCounters } from '../../src/auth/scram/server.ts';
import type { AuthStep } from '../../src/auth/types.ts';

const counters = (): ScramResultCounters => ({ success: 0, invalidProof: 0, unknownUser: 0, refused: 0, badMessage: 0, unavailable: 0 });
const mock = { key: () => Buffer.alloc(32, 7), iterations: 4096 };

// RFC 7677 section 3.
const RFC = {
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

function continued(step: AuthStep | Promise<AuthStep>): Extract<AuthStep, { kind: 'continue' }> {
  assert.ok(!(step instanceof Promise));
  assert.equal(step.kind, 'continue');
  return step as Extract<AuthStep, { kind: 'continue' }>;
}

test('RFC 7677 example: credentials from "pencil" give the RFC\'s server-first and v=; the proof is checked', async () => {
  const credentials = await deriveScramCredentials('pencil', 'SCRAM-SHA-256', 4096, Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'));
  const asked: ScramLookupRequest[] = [];
  const c = counters();
  const method = new ScramMethod('SCRAM-SHA-256', { find: (req) => (asked.push(req), { kind: 'found', credentials, accept: { ok: true, username: 'user' } }) }, c, mock, () => '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0');
  const first = continued(method.start({ clientId: 'c', data: Buffer.from(RFC.clientFirst), remoteAddress: '::1', reauthenticating: false }));
  assert.equal(first.data.toString(), RFC.serverFirst);
  assert.deepEqual(asked, [{ username: 'user', mechanism: 'SCRAM-SHA-256', clientId: 'c', remoteAddress: '::1' }]);
  const done = first.next.step(Buffer.from(RFC.clientFinal));
  assert.deepEqual(done, { kind: 'done', result: { ok: true, username: 'user' }, data: Buffer.from(RFC.serverFinal) });
  assert.equal(c.success, 1);

  // The same exchange with one bit of the proof changed.
  const again = continued(method.start({ clientId: 'c', data: Buffer.from(RFC.clientFirst), remoteAddress: '::1', reauthenticating: false }));
  const bad = again.next.step(Buffer.from(RFC.clientFinal.replace('p=dHzb', 'p=dHzc')));
  assert.deepEqual(bad, { kind: 'done', result: { ok: false, reason: 'not_authorized' }, data: Buffer.from('e=invalid-proof') });
  assert.equal(c.invalidProof, 1);
});

test('RFC 5803 text: read and written back; refusals say what is wrong', async () => {
  const made = await deriveScramCredentials('pw', 'SCRAM-SHA-512', 5000, randomBytes(16));
  const text = formatScramCredentials(made);
  assert.match(text, /^SCRAM-SHA-512\$5000:/);
  assert.deepEqual(parseScramCredentials(text), made);
  for (const [bad, why] of [
    ['SCRAM-SHA-1$4096:c2FsdA==$a2V5:a2V5', /must be SCRAM-SHA-256/],
    ['SCRAM-SHA-256$100:c2FsdA==$' + 'A'.repeat(43) + '=:' + 'A'.repeat(43) + '=', /at least 4096/],
    ['SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5', /32 bytes/],
    ['SCRAM-SHA-256$4096:not base64!$a2V5:a2V5', /must be SCRAM|base64/],
  ] as const) assert.match(parseScramCredentials(bad) as string, why, bad);
});

test('client-first: the gs2 header, the username decoded, the nonce; refusals with their server-error', () => {
  assert.deepEqual(parseClientFirst(Buffer.from('y,,n=a=2Cb=3Dc,r=abc,x=ignored')), { gs2Header: 'y,,', bare: 'n=a=2Cb=3Dc,r=abc,x=ignored', username: 'a,b=c', authzid: undefined, nonce: 'abc' });
  assert.equal((parseClientFirst(Buffer.from('n,a=bob,n=bob,r=x')) as { authzid: string }).authzid, 'bob');
  for (const [data, error] of [
    ['p=tls-unique,,n=u,r=x', 'channel-binding-not-supported'],
    ['n,,m=ext,n=u,r=x', 'extensions-not-supported'],
    ['n,,n=a=41,r=x', 'invalid-username-encoding'],
    ['n,,r=x,n=u', 'other-error'],
    ['n,,n=u', 'other-error'],
    ['n,,n=u,r=', 'other-error'],
    ['n,,n=u,r=\u00e9', 'other-error'],
    ['q,,n=u,r=x', 'other-error'],
    ['', 'invalid-encoding'],
    ['x'.repeat(5000), 'invalid-encoding'],
  ] as const) assert.equal(parseClientFirst(Buffer.from(data)), error, data);
  assert.equal(parseClientFirst(Buffer.from([0x6e, 0x2c, 0x2c, 0xff])), 'invalid-encoding');
  assert.equal(parseClientFirst(undefined), 'invalid-encoding');
});

test('client-final: c= must carry the gs2 header, r= the whole nonce, p= a proof of the hash\'s length', () => {
  const proof = Buffer.alloc(32, 1).toString('base64');
  assert.deepEqual(parseClientFinal(Buffer.from(`c=biws,r=nn,p=${proof}`), 'n,,', 'nn', 32), { withoutProof: 'c=biws,r=nn', proof: Buffer.alloc(32, 1) });
  for (const [data, error] of [
    [`c=eSws,r=nn,p=${proof}`, 'channel-bindings-dont-match'],
    [`c=biws,r=other,p=${proof}`, 'other-error'],
    [`c=biws,r=nn,p=${Buffer.alloc(31).toString('base64')}`, 'invalid-proof'],
    ['c=biws,r=nn,p=!!!', 'invalid-encoding'],
    ['c=biws,r=nn', 'other-error'],
  ] as const) assert.equal(parseClientFinal(Buffer.from(data), 'n,,', 'nn', 32), error, data);
});

test('usernames: SASLprep\'d before the lookup; one SASLprep refuses, or that differs from the CONNECT\'s, is refused', () => {
  const asked: string[] = [];
  const c = counters();
  const method = new ScramMethod('SCRAM-SHA-256', { find: (req) => (asked.push(req.username), { kind: 'unknown' }) }, c, mock);
  const start = (data: string, username?: string) => method.start({ clientId: 'c', username, data: Buffer.from(data), remoteAddress: '::1', reauthenticating: false }) as AuthStep;
  assert.equal(start('n,,n=I\u00adX,r=x').kind, 'continue');
  assert.equal(start('n,,n=,r=x', 'from-connect').kind, 'continue');
  assert.deepEqual(asked, ['IX', 'from-connect']);
  assert.deepEqual(start('n,,n=a\u0007b,r=x'), { kind: 'done', result: { ok: false, reason: 'not_authorized' }, data: Buffer.from('e=invalid-username-encoding') });
  assert.deepEqual(start('n,,n=alice,r=x', 'bob'), { kind: 'done', result: { ok: false, reason: 'not_authorized' }, data: Buffer.from('e=other-error') });
  assert.equal(c.badMessage, 2);
});

test('an unknown username: a salt that stays the same for the name, the configured iterations; the proof fails', () => {
  const c = counters();
  const method = new ScramMethod('SCRAM-SHA-512', { find: () => ({ kind: 'unknown' }) }, c, mock);
  const start = (name: string) => continued(method.start({ clientId: 'c', data: Buffer.from(`n,,n=${name},r=x`), remoteAddress: '::1', reauthenticating: false }));
  const salt = (s: ReturnType<typeof start>) => /,s=([^,]+),i=4096$/.exec(s.data.toString())![1];
  const a = start('ghost');
  assert.equal(salt(a), salt(start('ghost')));
  assert.notEqual(salt(a), salt(start('other')));
  const nonce = /^r=([^,]+)/.exec(a.data.toString())![1];
  const done = a.next.step(Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(64).toString('base64')}`));
  assert.deepEqual(done, { kind: 'done', result: { ok: false, reason: 'not_authorized' }, data: Buffer.from('e=invalid-proof') });
  assert.equal(c.unknownUser, 1);
});
