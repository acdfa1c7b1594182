// The database policy's config, without a server: SQL templates become positional parameters per
// dialect and are refused inside quotes and comments (a table of cases, each checked in both
// dialects), redis commands and mongodb filters keep templates to values, passwordHash and
// datasource are validated naming their field, the normalized config parses to itself, and
// compile refuses a source that does not exist, is not a database, or does not fit the query.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseDatabaseAclConfig, parseDatabaseAuthConfig } from '../../src/policies/database-config.ts';
import { compileDatabaseAclPolicy, compileDatabaseAuthPolicy } from '../../src/policies/database.ts';
import { fillMongoFilter, parseMongoFilter } from '../../src/policies/mongo-filter.ts';
import { ACL_PARAMS, AUTH_PARAMS } from '../../src/policies/params.ts';
import { parseRedisCommand, redisReplyRows } from '../../src/policies/redis-command.ts';
import { compileSqlTemplate, type SqlDialect } from '../../src/policies/sql-template.ts';
import { PolicyConfigError, type PolicyContext, type PolicyRecord } from '../../src/policies/types.ts';
import type { SourceType } from '../../src/sources/types.ts';
import { quietLog } from '../sources/helpers.ts';

/** The field of the PolicyConfigError `fn` throws (and its message, for a `match`). */
function refusal(fn: () => unknown): { field: string; message: string } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof PolicyConfigError, `expected a PolicyConfigError, got ${String(err)}`);
    return { field: err.field, message: err.message };
  }
  assert.fail('expected the config to be refused');
}

describe('SQL templates', () => {
  // [sql, mysql text or null (refused), postgresql text or null (refused)]
  const cases: [string, string | null, string | null][] = [
    ['SELECT password_hash FROM u WHERE username = ${username} LIMIT 1', 'SELECT password_hash FROM u WHERE username = ? LIMIT 1', 'SELECT password_hash FROM u WHERE username = $1 LIMIT 1'],
    ['WHERE u = ${username} OR c = ${clientid} OR a = ${username}', 'WHERE u = ? OR c = ? OR a = ?', 'WHERE u = $1 OR c = $2 OR a = $1'],
    ['WHERE (u=${username})', 'WHERE (u=?)', 'WHERE (u=$1)'],
    // A template inside quotes or a comment is refused in both dialects.
    ["WHERE u = '${username}'", null, null],
    ['WHERE u = "${username}"', null, null],
    ['WHERE u = `${username}`', null, null],
    ["WHERE u = 'x' || '${username}'", null, null],
    ['WHERE u = ${username} -- and ${clientid}', null, null],
    ['WHERE u = ${username} /* ${clientid} */', null, null],
    // Quotes that end where each dialect says.
    ["WHERE a = 'it''s' AND u = ${username}", 'WHERE a = \'it\'\'s\' AND u = ?', "WHERE a = 'it''s' AND u = $1"],
    ["WHERE a = 'x\\' AND u = ${username}", null, "WHERE a = 'x\\' AND u = $1"],
    ["WHERE a = E'x\\' AND u = ${username}'", null, null],
    ["WHERE a = 'x\\'' AND u = ${username}", "WHERE a = 'x\\'' AND u = ?", null],
    // mysql: # comments, '-- ' needs a space, and every ? is the driver's.
    ['WHERE u = ${username} # ${clientid}', null, 'WHERE u = $1 # $2'],
    ['WHERE n = 1 --${username}', 'WHERE n = 1 --?', null],
    ['WHERE u = ${username} AND x = ?', null, 'WHERE u = $1 AND x = ?'],
    ["WHERE u = ${username} AND x = '?'", null, "WHERE u = $1 AND x = '?'"],
    // postgresql: dollar quotes, and no $n of the user's.
    ['SELECT $$a$$ AS x WHERE u = ${username}', 'SELECT $$a$$ AS x WHERE u = ?', 'SELECT $$a$$ AS x WHERE u = $1'],
    ['SELECT $q$${username}$q$', null, null],
    ['WHERE u = $1', 'WHERE u = $1', null],
    // A template is a whole value, and a known name.
    ['WHERE u = x${username}', null, null],
    ['WHERE u = ${username}1', null, null],
    ['WHERE u = ${password_hash}', null, null],
    ["WHERE u = 'unterminated", null, null],
  ];
  for (const [sql, mysqlText, pgText] of cases) {
    for (const [dialect, expected] of [['mysql', mysqlText], ['postgresql', pgText]] as [SqlDialect, string | null][]) {
      test(`${dialect}: ${sql}`, () => {
        if (expected === null) {
          const r = refusal(() => compileSqlTemplate(sql, dialect, AUTH_PARAMS));
          assert.equal(r.field, 'config.sql');
        } else {
          assert.equal(compileSqlTemplate(sql, dialect, AUTH_PARAMS).text, expected);
        }
      });
    }
  }

  test('a quoted template is refused with a message saying to write it unquoted', () => {
    const r = refusal(() => compileSqlTemplate("SELECT * FROM u WHERE username = '${username}'", 'postgresql', AUTH_PARAMS));
    assert.match(r.message, /\$\{username\} is inside quoted text .*write it unquoted/);
  });

  test('names give the values in placeholder order', () => {
    const my = compileSqlTemplate('WHERE u = ${username} AND h = ${peerhost} AND v = ${username}', 'mysql', AUTH_PARAMS);
    assert.deepEqual(my.names, ['username', 'peerhost', 'username']);
    const pg = compileSqlTemplate('WHERE u = ${username} AND h = ${peerhost} AND v = ${username}', 'postgresql', AUTH_PARAMS);
    assert.deepEqual(pg.names, ['username', 'peerhost']);
    assert.deepEqual([...pg.params].sort(), ['peerhost', 'username']);
  });

  test('ACL queries take ${topic} and ${action}; auth queries do not', () => {
    assert.deepEqual(compileSqlTemplate('WHERE t = ${topic} AND a = ${action}', 'postgresql', ACL_PARAMS).names, ['topic', 'action']);
    assert.equal(refusal(() => compileSqlTemplate('WHERE t = ${topic}', 'postgresql', AUTH_PARAMS)).field, 'config.sql');
  });
});

describe('redis commands', () => {
  test('one string is split on spaces; the command name is upper-cased; the key may hold templates', () => {
    assert.deepEqual(parseRedisCommand('hmget  mqtt_user:${username} password_hash salt is_superuser', 'auth', AUTH_PARAMS), [
      'HMGET',
      'mqtt_user:${username}',
      'password_hash',
      'salt',
      'is_superuser',
    ]);
    assert.deepEqual(parseRedisCommand(['HGET', 'u:${clientid}', 'password'], 'auth', AUTH_PARAMS), ['HGET', 'u:${clientid}', 'password']);
    assert.deepEqual(parseRedisCommand('HGETALL mqtt_acl:${username}', 'acl', ACL_PARAMS), ['HGETALL', 'mqtt_acl:${username}']);
  });

  test('what is refused, each naming config.command', () => {
    const bad: [unknown, 'auth' | 'acl'][] = [
      ['GET mqtt_user:${username}', 'auth'],
      ['HMGET mqtt_user:${username}', 'auth'],
      ['HMGET mqtt_user:${username} salt is_superuser', 'auth'],
      ['HGET mqtt_user:${username} ${username}', 'auth'],
      ['HGET k password_hash salt', 'auth'],
      ['HGETALL k extra', 'auth'],
      ['HMGET k password_hash', 'acl'],
      ['HGETALL k:${password_hash}', 'acl'],
      ['', 'auth'],
      [['HGET', 1], 'auth'],
      [42, 'auth'],
    ];
    for (const [command, purpose] of bad) {
      assert.equal(refusal(() => parseRedisCommand(command, purpose, purpose === 'auth' ? AUTH_PARAMS : ACL_PARAMS)).field, 'config.command', JSON.stringify(command));
    }
  });

  test('replies become rows: HMGET by position, HGET its field, nil is no row, ACL hashes are allow rules', () => {
    const hmget = ['HMGET', 'k', 'password_hash', 'salt', 'is_superuser'];
    assert.deepEqual(redisReplyRows(hmget, ['h', null, '1'], 'auth'), [{ password_hash: 'h', is_superuser: '1' }]);
    assert.deepEqual(redisReplyRows(hmget, [null, null, null], 'auth'), []);
    assert.deepEqual(redisReplyRows(['HGET', 'k', 'password'], 'h', 'auth'), [{ password: 'h' }]);
    assert.deepEqual(redisReplyRows(['HGET', 'k', 'password'], null, 'auth'), []);
    assert.deepEqual(redisReplyRows(['HGETALL', 'k'], ['password_hash', 'h', 'salt', 's'], 'auth'), [{ password_hash: 'h', salt: 's' }]);
    assert.deepEqual(redisReplyRows(['HGETALL', 'k'], [], 'auth'), []);
    assert.deepEqual(redisReplyRows(['HGETALL', 'k'], ['a/#', 'publish', '__proto__', 'all'], 'acl'), [
      { permission: 'allow', action: 'publish', topic: 'a/#' },
      { permission: 'allow', action: 'all', topic: '__proto__' },
    ]);
    assert.throws(() => redisReplyRows(hmget, 'h', 'auth'), /unexpected reply/);
  });
});

describe('mongodb filters', () => {
  test('templates in values (also under $or and $in), as object or JSON text', () => {
    const { filter, params } = parseMongoFilter('{"$or": [{"username": "${username}"}, {"clients": {"$in": ["${clientid}"]}}]}', AUTH_PARAMS);
    assert.deepEqual([...params].sort(), ['clientid', 'username']);
    const filled = fillMongoFilter(filter, { clientid: 'c1', username: '{"$ne": null}', peerhost: '::1' });
    assert.deepEqual(filled, { $or: [{ username: '{"$ne": null}' }, { clients: { $in: ['c1'] } }] });
    assert.deepEqual(filter, { $or: [{ username: '${username}' }, { clients: { $in: ['${clientid}'] } }] }, 'the compiled filter is not changed');
  });

  test('refused: a template in a key, under $regex, $where or $expr, an unknown name, a non-object', () => {
    for (const raw of [
      { '${username}': 1 },
      { username: { $regex: '^${username}' } },
      { $where: 'this.username == "${username}"' },
      { $expr: { $eq: ['$username', '${username}'] } },
      { username: '${topic}' },
      '{"username": ',
      ['${username}'],
    ]) {
      assert.equal(refusal(() => parseMongoFilter(raw, AUTH_PARAMS)).field, 'config.filter', JSON.stringify(raw));
    }
    assert.doesNotThrow(() => parseMongoFilter({ username: { $regex: '^admin' }, n: { $gt: 1 } }, AUTH_PARAMS), 'operators without templates are fine');
  });
});

describe('parseDatabaseAuthConfig / parseDatabaseAclConfig', () => {
  test('defaults, normalized form, and the normalized form parses to itself', () => {
    const c = parseDatabaseAuthConfig({ source: 'source-1', sql: 'SELECT password_hash FROM u WHERE username = ${username}' });
    assert.deepEqual(c, { source: 'source-1', sql: 'SELECT password_hash FROM u WHERE username = ${username}', passwordHash: { strategy: 'sha256', saltType: 'prefix' } });
    assert.deepEqual(parseDatabaseAuthConfig(c), c);
    const r = parseDatabaseAuthConfig({ source: 's', command: 'HMGET u:${username} password_hash salt', passwordHash: { strategy: 'pbkdf2', iterations: 1000, digest: 'sha512' } });
    assert.deepEqual(r.passwordHash, { strategy: 'pbkdf2', saltType: 'prefix', iterations: 1000, digest: 'sha512', keyLength: 64 });
    assert.deepEqual(r.command, ['HMGET', 'u:${username}', 'password_hash', 'salt']);
    assert.deepEqual(parseDatabaseAuthConfig(r), r);
    const m = parseDatabaseAclConfig({ datasource: { url: 'mongodb://u:p@127.0.0.1:27017/app' }, collection: 'acl', filter: '{"username": "${username}"}', unused: null });
    assert.deepEqual(m, { datasource: { url: 'mongodb://127.0.0.1:27017/app', username: 'u', password: 'p' }, collection: 'acl', filter: { username: '${username}' } });
    assert.deepEqual(parseDatabaseAclConfig(m), m);
  });

  test('datasource: the type from the scheme, jdbc: dropped, credentials moved to fields (explicit ones win)', () => {
    const my = parseDatabaseAuthConfig({ datasource: { url: 'jdbc:mysql://u:p%40ss@db:3306/app', type: 'mysql', password: 'explicit', poolSize: 2 }, sql: 'SELECT password FROM u WHERE n = ${username}' });
    assert.deepEqual(my.datasource, { url: 'mysql://db:3306/app', username: 'u', password: 'explicit', poolSize: 2 });
    const jdbc = parseDatabaseAuthConfig({ datasource: { url: 'jdbc:postgresql://db/app?user=a&password=b' }, sql: 'SELECT password FROM u WHERE n = ${username}' });
    assert.deepEqual(jdbc.datasource, { url: 'postgresql://db/app', username: 'a', password: 'b' });
    assert.doesNotThrow(() => parseDatabaseAuthConfig({ datasource: { url: 'mariadb://db/app' }, sql: 'SELECT password FROM u WHERE n = ${username}' }));
    assert.doesNotThrow(() => parseDatabaseAuthConfig({ datasource: { url: 'rediss://db:6380/2' }, command: 'HGET u:${username} password' }));
  });

  test('mistakes name their field', () => {
    const sql = 'SELECT password_hash FROM u WHERE username = ${username}';
    const cases: [unknown, string][] = [
      [null, 'config'],
      [{ sql }, 'config.source'],
      [{ source: 's', datasource: { url: 'mysql://h/d' }, sql }, 'config.source'],
      [{ source: 7, sql }, 'config.source'],
      [{ source: 's' }, 'config.sql'],
      [{ source: 's', sql, command: 'HGET k password' }, 'config.command'],
      [{ source: 's', sql: "WHERE u = '${usr}'" }, 'config.sql'],
      [{ source: 's', sql: "WHERE u = '${username}'" }, 'config.sql'],
      [{ datasource: { url: 'mysql://h/d', type: 'postgresql' }, sql }, 'config.datasource.type'],
      [{ source: 's', sql, password_hash: { strategy: 'md5' } }, 'config.password_hash'],
      [{ source: 's', sql, passwordHash: { strategy: 'rot13' } }, 'config.passwordHash.strategy'],
      [{ source: 's', sql, passwordHash: { saltType: 'middle' } }, 'config.passwordHash.saltType'],
      [{ source: 's', sql, passwordHash: { strategy: 'pbkdf2', digest: 'sha256' } }, 'config.passwordHash.iterations'],
      [{ source: 's', sql, passwordHash: { strategy: 'pbkdf2', iterations: 10 } }, 'config.passwordHash.digest'],
      [{ source: 's', sql, passwordHash: { strategy: 'pbkdf2', iterations: 0, digest: 'sha1' } }, 'config.passwordHash.iterations'],
      [{ source: 's', sql, passwordHash: { strategy: 'pbkdf2', iterations: 9, digest: 'md5' } }, 'config.passwordHash.digest'],
      [{ source: 's', sql, passwordHash: { strategy: 'md5', iterations: 9 } }, 'config.passwordHash.iterations'],
      [{ source: 's', sql, passwordHash: { strategy: 'bcrypt', cost: 9 } }, 'config.passwordHash.cost'],
      [{ datasource: 'mysql://h/d', sql }, 'config.datasource'],
      [{ datasource: {}, sql }, 'config.datasource.url'],
      [{ datasource: { url: 'ftp://h/d' }, sql }, 'config.datasource.url'],
      [{ datasource: { url: 'postgres://h/d?sslmode=require' }, sql }, 'config.datasource.url'],
      [{ datasource: { url: 'postgres://h' }, sql }, 'config.datasource.database'],
      [{ datasource: { url: 'postgres://h/d', poolSize: 0 }, sql }, 'config.datasource.poolSize'],
      [{ datasource: { url: 'redis://h:6379', requestTimeout: 'x' }, command: 'HGET k password' }, 'config.datasource.requestTimeout'],
      [{ datasource: { url: 'redis://h:6379' }, sql }, 'config.sql'],
      [{ datasource: { url: 'mongodb://h/d' }, command: 'HGET k password' }, 'config.command'],
      [{ datasource: { url: 'mysql://h/d' }, collection: 'u', filter: {} }, 'config.collection'],
      [{ datasource: { url: 'mysql://h/d' }, sql: "WHERE u = '${username}'" }, 'config.sql'],
      [{ datasource: { url: 'mysql://h/d' }, sql: 'WHERE u = ${username} AND ?' }, 'config.sql'],
      [{ source: 's', collection: 'u' }, 'config.filter'],
      [{ source: 's', filter: { u: 1 }, sql }, 'config.filter'],
      [{ source: 's', collection: 'system.users', filter: {} }, 'config.collection'],
    ];
    for (const [raw, field] of cases) {
      assert.equal(refusal(() => parseDatabaseAuthConfig(raw)).field, field, JSON.stringify(raw));
    }
    assert.equal(refusal(() => parseDatabaseAclConfig({ source: 's', sql, passwordHash: {} })).field, 'config.passwordHash');
    // With a source id the dialect is not known yet: a mysql-only or postgresql-only form waits for compile.
    assert.doesNotThrow(() => parseDatabaseAuthConfig({ source: 's', sql: 'SELECT password FROM u WHERE n = ${username} AND d ? \'k\'' }));
    assert.doesNotThrow(() => parseDatabaseAuthConfig({ source: 's', sql: 'SELECT password FROM u WHERE n = ${username} # $1' }));
    assert.equal(refusal(() => parseDatabaseAclConfig({ source: 's', command: 'HGET k password' })).field, 'config.command');
  });
});

describe('compile checks the source', () => {
  const types: Record<string, SourceType> = { pg: 'postgresql', my: 'mysql', kafka: 'kafka', redis: 'redis' };
  const ctx: PolicyContext = { source: () => undefined, typeOf: (id) => types[id], log: quietLog() };
  const record = (config: Record<string, unknown>): PolicyRecord<'database'> => ({ id: 'p1', name: 'p', type: 'database', config, enabled: true, order: 0, createTime: '' });
  const sql = 'SELECT password_hash FROM u WHERE username = ${username}';

  test('a missing source, a source that is no database, a query that does not fit: each names its field', () => {
    assert.equal(refusal(() => compileDatabaseAuthPolicy(record({ source: 'gone', sql }), ctx)).field, 'config.source');
    assert.equal(refusal(() => compileDatabaseAuthPolicy(record({ source: 'kafka', sql }), ctx)).field, 'config.source');
    assert.equal(refusal(() => compileDatabaseAuthPolicy(record({ source: 'redis', sql }), ctx)).field, 'config.sql');
    assert.equal(refusal(() => compileDatabaseAuthPolicy(record({ source: 'pg', command: 'HGET k password' }), ctx)).field, 'config.command');
    assert.equal(refusal(() => compileDatabaseAclPolicy(record({ source: 'my', sql: "SELECT * FROM acl WHERE u = ${username} AND t = '?'" }), ctx)).field, 'config.sql');
  });

  test('params: the templates for auth; for ACL also topic, action, username and clientid (rows use %u and %c)', async () => {
    const auth = compileDatabaseAuthPolicy(record({ source: 'pg', sql: 'SELECT password FROM u WHERE username = ${username} AND h = ${peerhost}' }), ctx);
    assert.deepEqual([...auth.params].sort(), ['peerhost', 'username']);
    const acl = compileDatabaseAclPolicy(record({ source: 'pg', sql: 'SELECT permission, action, topic FROM acl WHERE h = ${peerhost}' }), ctx);
    assert.deepEqual([...acl.params].sort(), ['action', 'clientid', 'peerhost', 'topic', 'username']);
    assert.equal(acl.type, 'database');
    await auth.close();
    await acl.close();
  });

  test('a deleted shared source: authenticate ignores with error, dryRun names config.source', async () => {
    const auth = compileDatabaseAuthPolicy(record({ source: 'pg', sql }), ctx);
    const answer = await auth.authenticate({ clientid: 'c', username: 'u', password: Buffer.from('x'), peerhost: '::1' });
    assert.equal(answer.result, 'ignore');
    assert.ok(answer.result === 'ignore' && answer.error === true && /does not exist/.test(answer.reason ?? ''), JSON.stringify(answer));
    await assert.rejects(auth.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.source');
  });
});
