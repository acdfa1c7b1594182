// What the rows of a database policy mean, without a server: the auth row's password, salt and
// is_superuser; ACL rows deciding in order (publish matches, subscribe must cover, %u/%c expand,
// unreadable rows are skipped and reported); and the failure log thinned to one line per interval.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';

import { createLogger } from '../../src/log/index.ts';
import { decideAcl, rulesOfRow } from '../../src/policies/acl-rows.ts';
import { hasScramColumns, isSuperuser, scramCredentialsOf, storedPasswordOf } from '../../src/policies/auth-row.ts';
import { RateLimitedWarn } from '../../src/policies/rate-limited-warn.ts';
import type { AclQuery } from '../../src/policies/types.ts';
import type { Row } from '../../src/sources/types.ts';

describe('auth rows', () => {
  test('SCRAM credentials: RFC 5803 text per mechanism, or salt/iterations/stored_key/server_key whose key length names the mechanism', () => {
    const key32 = Buffer.alloc(32, 1);
    const key64 = Buffer.alloc(64, 2);
    const text = `SCRAM-SHA-256$4096:c2FsdA==$${key32.toString('base64')}:${key32.toString('base64')}`;
    assert.deepEqual(scramCredentialsOf({ scram_sha_256: text }, 'SCRAM-SHA-256'), { mechanism: 'SCRAM-SHA-256', iterations: 4096, salt: Buffer.from('salt'), storedKey: key32, serverKey: key32 });
    assert.equal(scramCredentialsOf({ scram_sha_256: text }, 'SCRAM-SHA-512'), undefined);
    assert.match(String(scramCredentialsOf({ scram_sha_512: text }, 'SCRAM-SHA-512')), /scram_sha_512 holds SCRAM-SHA-256/);
    assert.match(String(scramCredentialsOf({ scram_sha_256: 'plain' }, 'SCRAM-SHA-256')), /RFC 5803/);
    // bytea keys (Buffers), iterations as text; base64 text keys; the other mechanism's length: none.
    const parts = { salt: Buffer.from('pepper'), iterations: '5000', stored_key: key64, server_key: key64 };
    assert.deepEqual(scramCredentialsOf(parts, 'SCRAM-SHA-512'), { mechanism: 'SCRAM-SHA-512', iterations: 5000, salt: Buffer.from('pepper'), storedKey: key64, serverKey: key64 });
    assert.equal(scramCredentialsOf(parts, 'SCRAM-SHA-256'), undefined);
    const b64 = { salt: 'cGVwcGVy', iterations: 4096, stored_key: key32.toString('base64'), server_key: key32.toString('base64') };
    assert.equal((scramCredentialsOf(b64, 'SCRAM-SHA-256') as { iterations: number }).iterations, 4096);
    assert.match(String(scramCredentialsOf({ ...b64, iterations: 10 }, 'SCRAM-SHA-256')), /at least 4096/);
    assert.match(String(scramCredentialsOf({ stored_key: key32 }, 'SCRAM-SHA-256')), /needs stored_key, server_key and salt/);
    assert.equal(scramCredentialsOf({ password_hash: 'h' }, 'SCRAM-SHA-256'), undefined);
    assert.deepEqual([hasScramColumns({ scram_sha_512: text }), hasScramColumns({ password_hash: 'h', salt: 's' })], [true, false]);
  });

  test('password_hash, else password; salt optional; a row without either says so', () => {
    assert.deepEqual(storedPasswordOf({ password_hash: 'h', password: 'p', salt: 's' }), { hash: 'h', salt: 's' });
    assert.deepEqual(storedPasswordOf({ password: Buffer.from('p'), salt: null }), { hash: 'p' });
    assert.match(String(storedPasswordOf({ hash: 'h' })), /password_hash/);
    assert.match(String(storedPasswordOf({ password_hash: null })), /password_hash/);
  });

  test('is_superuser: 1, true, "1", "true", "t", "on", "yes" and BIT(1) set; anything else is false', () => {
    for (const v of [1, true, 1n, '1', 'true', 'TRUE', 't', 'on', 'yes', ' Yes ', Buffer.from([1])]) assert.equal(isSuperuser({ is_superuser: v }), true, String(v));
    for (const v of [0, false, '0', 'false', 'f', 'off', 'no', '', null, undefined, 2, 'admin', Buffer.from([0])]) assert.equal(isSuperuser({ is_superuser: v }), false, String(v));
  });
});

describe('ACL rows', () => {
  const who = { clientid: 'c1', username: 'alice', peerhost: '10.0.0.1' };
  const pub = (topic: string): AclQuery => ({ ...who, action: 'publish', topic });
  const sub = (topic: string): AclQuery => ({ ...who, action: 'subscribe', topic });
  const decide = (rows: Row[], q: AclQuery): string | undefined => decideAcl(rows, q, () => {});

  test('the first row that applies decides: deny before allow', () => {
    const rows = [
      { permission: 'deny', action: 'publish', topic: 'a/secret' },
      { permission: 'allow', action: 'all', topic: 'a/#' },
    ];
    assert.equal(decide(rows, pub('a/secret')), 'deny');
    assert.equal(decide(rows, pub('a/open')), 'allow');
    assert.equal(decide(rows, sub('a/secret')), 'allow', 'the deny row is for publish only');
    assert.equal(decide(rows, pub('b')), undefined);
    assert.equal(decide([...rows].reverse(), pub('a/secret')), 'allow', 'order decides');
  });

  test('%u and %c expand; a %u row never applies to a client without a username', () => {
    const rows = [{ permission: 'allow', action: 'publish', topic: 'users/%u/%c/#' }];
    assert.equal(decide(rows, pub('users/alice/c1/x')), 'allow');
    assert.equal(decide(rows, pub('users/bob/c1/x')), undefined);
    assert.equal(decide(rows, { ...pub('users//c1/x'), username: undefined }), undefined);
  });

  test('subscribe: the rule must cover the whole requested filter', () => {
    const rows = [{ permission: 'allow', action: 'subscribe', topic: 'a/+' }];
    assert.equal(decide(rows, sub('a/b')), 'allow');
    assert.equal(decide(rows, sub('a/+')), 'allow');
    assert.equal(decide(rows, sub('a/#')), undefined);
    assert.equal(decide(rows, pub('a/b')), undefined, 'a subscribe rule does not grant publish');
  });

  test('accepted spellings: permission allow/deny, true/false, 1/0; action names and EMQX access 1/2/3', () => {
    const one = (row: Row) => rulesOfRow(row);
    assert.deepEqual(
      [one({ permission: 'ALLOW', action: 'pubsub', topic: 't' }), one({ permission: 0, action: 3, topic: 't' }), one({ permission: true, action: '2', topic: 't' }), one({ permission: '1', action: 1, topic: 't' })].map((r) =>
        typeof r === 'string' ? r : r.map(({ allow, publish, subscribe }) => [allow, publish, subscribe]),
      ),
      [[[true, true, true]], [[false, true, true]], [[true, true, false]], [[true, false, true]]],
    );
    const topics = one({ permission: 'allow', action: 'all', topic: 'a', topics: ['b', 'c/%u'] });
    assert.ok(Array.isArray(topics));
    assert.deepEqual(topics.map((r) => r.pattern.source), ['a', 'b', 'c/%u']);
  });

  test('an unreadable row is skipped and reported; the rows after it still decide', () => {
    const problems: string[] = [];
    const rows = [
      { permission: 'maybe', action: 'all', topic: 'a' },
      { permission: 'allow', action: 'read', topic: 'a' },
      { permission: 'allow', action: 'all', topic: 'a/#/b' },
      { permission: 'allow', action: 'all', topic: '%x' },
      { permission: 'allow', action: 'all' },
      { permission: 'allow', action: 'all', topics: 'a' },
      { permission: 'deny', action: 'all', topic: 'a' },
    ];
    assert.equal(decideAcl(rows, pub('a'), (p) => problems.push(p)), 'deny');
    assert.equal(problems.length, 6, problems.join('\n'));
    assert.match(problems[0], /permission "maybe"/);
    assert.match(problems[2], /topic "a\/#\/b" is not a valid pattern/);
  });
});

describe('RateLimitedWarn', () => {
  test('one line per interval, carrying the count of failures since the last line', () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _e, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    let now = 1_000_000;
    const warn = new RateLimitedWarn(createLogger({ level: 'warn', stream }), 10_000, () => now);
    warn.warn('down', { reason: 'r1' });
    for (let i = 0; i < 5; i++) {
      now += 1000;
      warn.warn('down', { reason: `r${i + 2}` });
    }
    assert.deepEqual(lines.map((l) => [l.msg, l.reason, l.count]), [['down', 'r1', 1]]);
    now += 5000; // 10 s after the first line
    warn.warn('down', { reason: 'r7' });
    assert.deepEqual(lines.map((l) => [l.reason, l.count, l.level]), [['r1', 1, 'warn'], ['r7', 6, 'warn']]);
  });
});
