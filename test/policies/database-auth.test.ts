// The database auth policy against the real servers (PostgreSQL, MariaDB, Redis, FerretDB), with a
// shared `source` and with its own `datasource`: every password strategy verifies (rows made with
// hashWithStrategy), is_superuser, an unknown user and a client without a username are ignored, a
// wrong password is denied, an SQL injection attempt finds no row, a row without a password column
// and a source that is down are ignored with an error (logged once, not per call) and a source
// back up allows again; the dry run refuses a syntax error, a missing column, an unknown table and
// an unreachable server, naming the field to fix.
// needs: postgresql, mariadb, redis, ferretdb
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';

import { compileDatabaseAuthPolicy } from '../../src/policies/database.ts';
import type { AuthAnswer } from '../../src/policies/types.ts';
import { createMongoSource, parseMongoConfig } from '../../src/sources/mongodb.ts';
import { createRedisSource, parseRedisConfig } from '../../src/sources/redis.ts';
import type { SqlSource } from '../../src/sources/types.ts';
import { ensureFerretDb, ensureRedis } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';
import { TcpProxy, closedPort, quietLog } from '../sources/helpers.ts';
import { assertDryRunRefused, assertErrorIgnore, client, createTable, record, SQL_SERVERS, stored, testContext, type SqlServer, warnLines, withAuthPolicy } from './database-helpers.ts';

const SALT = 'NaCl-7';

/** The password strategies each SQL server's rows are made with (together: every strategy). */
const STRATEGIES_BY_DIALECT: Record<SqlServer['dialect'], Record<string, unknown>[]> = {
  postgresql: [
    { strategy: 'sha256', saltType: 'prefix' },
    { strategy: 'sha256', saltType: 'suffix' },
    { strategy: 'bcrypt' },
    { strategy: 'pbkdf2', iterations: 1000, digest: 'sha512' },
  ],
  mysql: [
    { strategy: 'plain', saltType: 'disable' },
    { strategy: 'md5', saltType: 'suffix' },
    { strategy: 'sha512', saltType: 'prefix' },
    { strategy: 'argon2' },
  ],
};

function userOf(passwordHash: Record<string, unknown>): string {
  return `user-${Object.values(passwordHash).join('-')}`;
}

function assertAllow(answer: AuthAnswer, superuser: boolean): void {
  assert.deepEqual(answer, { result: 'allow', superuser });
}

for (const server of SQL_SERVERS) {
  describe(`database auth policy on ${server.dialect}`, () => {
    const ctx = testContext();
    let admin: SqlSource;
    let table: string;
    let select: string;

    before(async () => {
      admin = server.open('shared');
      ctx.sources.set('shared', admin);
      table = await createTable(admin, server, 'pol_auth', `username varchar(128), password_hash varchar(512), salt varchar(64), is_superuser ${server.boolean}`);
      const rows: unknown[][] = [];
      for (const passwordHash of STRATEGIES_BY_DIALECT[server.dialect]) {
        rows.push([userOf(passwordHash), await stored(passwordHash, `pw of ${userOf(passwordHash)}`, SALT), SALT, false]);
      }
      rows.push(['root', await stored({}, 'root pw', SALT), SALT, true]);
      rows.push(['nosalt', await stored({}, 'nosalt pw'), null, null]);
      await admin.insert(table, ['username', 'password_hash', 'salt', 'is_superuser'], rows);
      select = `SELECT password_hash, salt, is_superuser FROM ${table} WHERE username = \${username} LIMIT 1`;
    });

    after(async () => {
      await admin.query(`DROP TABLE ${table}`, []);
      await admin.close();
    });

    for (const passwordHash of STRATEGIES_BY_DIALECT[server.dialect]) {
      test(`${JSON.stringify(passwordHash)}: the right password is allowed, a wrong one denied`, () =>
        withAuthPolicy(ctx, { source: 'shared', sql: select, passwordHash }, async (p) => {
          const user = userOf(passwordHash);
          assertAllow(await p.authenticate(client(user, `pw of ${user}`)), false);
          assert.deepEqual(await p.authenticate(client(user, `pw of ${user}!`)), { result: 'deny', reason: 'bad password' });
          assert.deepEqual(await p.authenticate(client(user, undefined)), { result: 'deny', reason: 'bad password' }, 'no password is the empty one');
        }));
    }

    test('is_superuser; a null salt; unknown user, no username and an injection attempt are ignored', () =>
      withAuthPolicy(ctx, { source: 'shared', sql: select }, async (p) => {
        assertAllow(await p.authenticate(client('root', 'root pw')), true);
        assertAllow(await p.authenticate(client('nosalt', 'nosalt pw')), false);
        assert.deepEqual(await p.authenticate(client('nobody', 'x')), { result: 'ignore', reason: 'not found' });
        const anonymous = await p.authenticate(client(undefined, 'root pw'));
        assert.equal(anonymous.result, 'ignore');
        assert.equal((anonymous as { error?: boolean }).error, undefined, 'not an error');
        for (const attack of ["' OR '1'='1", "root' -- ", "x' OR 1=1 #", 'root"; DROP TABLE x; --']) {
          assert.deepEqual(await p.authenticate(client(attack, 'root pw')), { result: 'ignore', reason: 'not found' }, attack);
        }
        assert.deepEqual([...p.params], ['username']);
        const [count] = await admin.query(`SELECT count(*) AS n FROM ${table}`, []);
        assert.equal(Number(count.n), STRATEGIES_BY_DIALECT[server.dialect].length + 2, 'the table is intact');
      }));

    test('a query reading ${clientid} and ${peerhost} gets them as parameters', () =>
      withAuthPolicy(
        ctx,
        { source: 'shared', sql: `SELECT password_hash, salt FROM ${table} WHERE username = \${clientid} AND \${peerhost} = \${peerhost}` },
        async (p) => {
          assertAllow(await p.authenticate({ ...client(undefined, 'root pw'), clientid: 'root' }), false);
          assert.deepEqual([...p.params].sort(), ['clientid', 'peerhost']);
        },
      ));

    test('with its own datasource (credentials in the URL); close() ends its pool', async () => {
      const p = compileDatabaseAuthPolicy(record({ datasource: { url: `jdbc:${server.url}`, poolSize: 1 }, sql: select }), ctx);
      try {
        await p.dryRun();
        assertAllow(await p.authenticate(client('root', 'root pw')), true);
      } finally {
        await p.close();
      }
      assertErrorIgnore(await p.authenticate(client('root', 'root pw')), /closed/);
    });

    test('a row without a password column is ignored with an error; the dry run names the column', () =>
      withAuthPolicy(ctx, { source: 'shared', sql: `SELECT salt, is_superuser FROM ${table} WHERE username = \${username}` }, async (p) => {
        assertErrorIgnore(await p.authenticate(client('root', 'root pw')), /password_hash/);
        await assertDryRunRefused(p, 'config.sql', /no column password_hash or password or scram_sha_256 or scram_sha_512 or stored_key \(it has salt, is_superuser\)/);
      }));

    test('dry run: ok, a renamed column is fine, a syntax error and an unknown table name config.sql', async () => {
      await withAuthPolicy(ctx, { source: 'shared', sql: select }, (p) => p.dryRun());
      await withAuthPolicy(ctx, { source: 'shared', sql: `SELECT password_hash AS password FROM ${table} WHERE username = \${username}` }, (p) => p.dryRun());
      await withAuthPolicy(ctx, { source: 'shared', sql: `SELEC password_hash FROM ${table} WHERE username = \${username}` }, (p) => assertDryRunRefused(p, 'config.sql', /the query failed: .*(syntax|SELEC)/i));
      await withAuthPolicy(ctx, { source: 'shared', sql: `SELECT password_hash FROM ${table}_none WHERE username = \${username}` }, (p) => assertDryRunRefused(p, 'config.sql', /the query failed: .*(exist|doesn't)/));
    });

    test('an unreachable server: the dry run names config.datasource (refused); authenticate ignores with an error, logged once', async () => {
      const port = await closedPort();
      await withAuthPolicy(ctx, { datasource: { url: server.url.replace(/@[^/]+\//, `@127.0.0.1:${port}/`) }, sql: select }, async (p) => {
        await assertDryRunRefused(p, 'config.datasource', /connection refused/);
        // Once down, a pool waits out a 2 s deadline (a server coming back may hang a connect): in parallel.
        const answers = await Promise.all(Array.from({ length: 20 }, () => p.authenticate(client('root', 'root pw'))));
        for (const a of answers) assertErrorIgnore(a, /refused|timed out/i);
        const lines = warnLines(ctx, p.id);
        assert.equal(lines.length, 1, JSON.stringify(lines));
        assert.equal(lines[0].count, 1);
      });
    });

    test('a shared source that goes down is ignored with an error, and allows again once it is back', async () => {
      const target = new URL(server.url);
      const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
      const port = await proxy.start();
      const proxied = server.open('proxied', { host: '127.0.0.1', port });
      ctx.sources.set('proxied', proxied);
      try {
        await withAuthPolicy(ctx, { source: 'proxied', sql: select }, async (p) => {
          assertAllow(await p.authenticate(client('root', 'root pw')), true);
          await proxy.stop();
          const down = await waitFor(async () => {
            const a = await p.authenticate(client('root', 'root pw'));
            return a.result === 'ignore' && a.error === true && a;
          }, { message: 'the policy ignores with an error while the server is away' });
          assert.ok(down.result === 'ignore' && down.reason);
          await assertDryRunRefused(p, 'config.source', /cannot use the server/);
          await proxy.start(port);
          await waitFor(async () => (await p.authenticate(client('root', 'root pw'))).result === 'allow', { message: 'allowed again once the server is back' });
        });
      } finally {
        ctx.sources.delete('proxied');
        await proxied.close();
        await proxy.stop();
      }
    });
  });
}

describe('database auth policy on redis', () => {
  const ctx = testContext();
  const prefix = `spindle-pol-test:${process.pid}:`;
  let writer: Redis;

  before(async () => {
    ensureRedis();
    writer = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
    await writer.connect();
    ctx.sources.set('redis', createRedisSource('redis', parseRedisConfig({ url: 'redis://127.0.0.1:6379' }), quietLog()));
    const sha1 = { strategy: 'sha1', saltType: 'prefix' };
    await writer.hset(`${prefix}user:alice`, { password_hash: await stored(sha1, 'alice pw', SALT), salt: SALT, is_superuser: '1' });
    await writer.hset(`${prefix}user:bob`, { password_hash: await stored(sha1, 'bob pw', SALT), salt: SALT });
    await writer.hset(`${prefix}user:carol`, { salt: SALT, is_superuser: 'true' });
    await writer.hset(`${prefix}bcrypt:dave`, { password: await stored({ strategy: 'bcrypt' }, 'dave pw') });
    await writer.set(`${prefix}string:__spindle_dry_run__`, 'not a hash');
  });

  after(async () => {
    const keys = await writer.keys(`${prefix}*`);
    if (keys.length > 0) await writer.del(...keys);
    await writer.quit();
    await ctx.sources.get('redis')?.close();
  });

  const hmget = `HMGET ${prefix}user:\${username} password_hash salt is_superuser`;
  const sha1 = { strategy: 'sha1', saltType: 'prefix' };

  test('HMGET with a shared source: allow (superuser from the third field), deny, ignore', () =>
    withAuthPolicy(ctx, { source: 'redis', command: hmget, passwordHash: sha1 }, async (p) => {
      assertAllow(await p.authenticate(client('alice', 'alice pw')), true);
      assertAllow(await p.authenticate(client('bob', 'bob pw')), false);
      assert.deepEqual(await p.authenticate(client('bob', 'alice pw')), { result: 'deny', reason: 'bad password' });
      assert.deepEqual(await p.authenticate(client('nobody', 'x')), { result: 'ignore', reason: 'not found' });
      assert.equal((await p.authenticate(client(undefined, 'x'))).result, 'ignore');
      for (const attack of ['alice password_hash', '*', 'alice\r\nFLUSHALL']) {
        assert.deepEqual(await p.authenticate(client(attack, 'alice pw')), { result: 'ignore', reason: 'not found' }, attack);
      }
      assert.equal(await writer.exists(`${prefix}user:bob`), 1, 'nothing was flushed');
    }));

  test('a hash without the password field is ignored with an error', () =>
    withAuthPolicy(ctx, { source: 'redis', command: hmget, passwordHash: sha1 }, async (p) => {
      assertErrorIgnore(await p.authenticate(client('carol', 'x')), /password_hash/);
    }));

  test('HGET and HGETALL with their own datasource (bcrypt, the password field)', async () => {
    await withAuthPolicy(ctx, { datasource: { url: 'redis://127.0.0.1:6379/0' }, command: ['HGET', `${prefix}bcrypt:\${username}`, 'password'], passwordHash: { strategy: 'bcrypt' } }, async (p) => {
      await p.dryRun();
      assertAllow(await p.authenticate(client('dave', 'dave pw')), false);
      assert.equal((await p.authenticate(client('dave', 'dave pw?'))).result, 'deny');
    });
    await withAuthPolicy(ctx, { datasource: { url: 'redis://127.0.0.1:6379' }, command: `HGETALL ${prefix}user:\${username}`, passwordHash: sha1 }, async (p) => {
      assertAllow(await p.authenticate(client('alice', 'alice pw')), true);
      assert.deepEqual(await p.authenticate(client('nobody', 'x')), { result: 'ignore', reason: 'not found' });
    });
  });

  test('dry run: a key of the wrong type names config.command; an unreachable server config.datasource', async () => {
    await withAuthPolicy(ctx, { source: 'redis', command: hmget, passwordHash: sha1 }, (p) => p.dryRun());
    await withAuthPolicy(ctx, { source: 'redis', command: `HMGET ${prefix}string:\${username} password_hash` }, (p) => assertDryRunRefused(p, 'config.command', /WRONGTYPE/));
    const port = await closedPort();
    await withAuthPolicy(ctx, { datasource: { url: `redis://127.0.0.1:${port}`, connectTimeout: 1000 }, command: hmget }, async (p) => {
      await assertDryRunRefused(p, 'config.datasource', /connection refused/);
      assertErrorIgnore(await p.authenticate(client('alice', 'alice pw')), /./);
    });
  });

  test('a shared source that goes down is ignored with an error, and allows again once it is back', async () => {
    const proxy = new TcpProxy({ host: '127.0.0.1', port: 6379 });
    const port = await proxy.start();
    const proxied = createRedisSource('redis-proxied', parseRedisConfig({ url: `redis://127.0.0.1:${port}` }), quietLog());
    ctx.sources.set('redis-proxied', proxied);
    try {
      await withAuthPolicy(ctx, { source: 'redis-proxied', command: hmget, passwordHash: sha1 }, async (p) => {
        assertAllow(await p.authenticate(client('alice', 'alice pw')), true);
        await proxy.stop();
        await waitFor(async () => {
          const a = await p.authenticate(client('alice', 'alice pw'));
          return a.result === 'ignore' && a.error === true;
        }, { message: 'ignored with an error while redis is away' });
        await proxy.start(port);
        await waitFor(async () => (await p.authenticate(client('alice', 'alice pw'))).result === 'allow', { message: 'allowed again once redis is back' });
      });
    } finally {
      ctx.sources.delete('redis-proxied');
      await proxied.close();
      await proxy.stop();
    }
  });
});

describe('database auth policy on mongodb', () => {
  const ctx = testContext();
  const database = 'spindle_test';
  const collection = `pol_auth_${process.pid}_${Date.now()}`;
  const url = `mongodb://127.0.0.1:27017/${database}`;
  const sha256suffix = { strategy: 'sha256', saltType: 'suffix' };
  let reader: MongoClient;

  before(async () => {
    ensureFerretDb();
    reader = new MongoClient('mongodb://127.0.0.1:27017/', { serverSelectionTimeoutMS: 5000 });
    await reader.connect();
    await reader.db(database).collection(collection).insertMany([
      { username: 'alice', password_hash: await stored(sha256suffix, 'alice pw', SALT), salt: SALT, is_superuser: true },
      { username: 'bob', password: await stored(sha256suffix, 'bob pw'), is_superuser: false },
    ]);
    ctx.sources.set('mongo', createMongoSource('mongo', parseMongoConfig({ url }), quietLog()));
  });

  after(async () => {
    await reader.db(database).collection(collection).drop().catch(() => {});
    await reader.close();
    await ctx.sources.get('mongo')?.close();
  });

  const filter = { username: '${username}' };

  test('a shared source: allow (superuser, the password field), deny, ignore, an operator as username finds nothing', () =>
    withAuthPolicy(ctx, { source: 'mongo', collection, filter, passwordHash: sha256suffix }, async (p) => {
      assertAllow(await p.authenticate(client('alice', 'alice pw')), true);
      assertAllow(await p.authenticate(client('bob', 'bob pw')), false);
      assert.deepEqual(await p.authenticate(client('alice', 'bob pw')), { result: 'deny', reason: 'bad password' });
      assert.deepEqual(await p.authenticate(client('nobody', 'x')), { result: 'ignore', reason: 'not found' });
      assert.deepEqual(await p.authenticate(client('{"$ne": null}', 'alice pw')), { result: 'ignore', reason: 'not found' });
      await p.dryRun();
    }));

  test('its own datasource, with the filter as JSON text', () =>
    withAuthPolicy(ctx, { datasource: { url }, collection, filter: '{"username": "${username}"}', passwordHash: sha256suffix }, async (p) => {
      assertAllow(await p.authenticate(client('alice', 'alice pw')), true);
    }));

  test('dry run: a filter the server refuses names config.filter; an unreachable server config.datasource', async () => {
    // (FerretDB checks operators as it meets documents, so the filter must reach some.)
    await withAuthPolicy(ctx, { source: 'mongo', collection, filter: { is_superuser: { $bogus: 1 } } }, (p) => assertDryRunRefused(p, 'config.filter', /the query failed: .*\$bogus/));
    const port = await closedPort();
    await withAuthPolicy(ctx, { datasource: { url: `mongodb://127.0.0.1:${port}/${database}`, connectTimeout: 1000 }, collection, filter }, async (p) => {
      await assertDryRunRefused(p, 'config.datasource', /cannot use the server/);
      assertErrorIgnore(await p.authenticate(client('alice', 'alice pw')), /./);
    });
  });
});
