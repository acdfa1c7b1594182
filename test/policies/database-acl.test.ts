// The database ACL policy against the real servers: rows (SQL, mongodb documents) and redis
// HGETALL hashes become rules with %u/%c expanded, tried in order (a deny row before an allow row
// wins), subscribe needing a rule that covers the whole filter (`a/+` does not grant `a/#`), an
// unreadable row skipped and logged, ${topic}/${action} as query parameters, no applying row
// ignored; a missing or unreachable source is ignored with an error, and the dry run names the
// missing column, the unknown table, or the server.
// needs: postgresql, mariadb, redis, ferretdb
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';

import type { CompiledAclPolicy } from '../../src/policies/types.ts';
import { createMongoSource, parseMongoConfig } from '../../src/sources/mongodb.ts';
import { createRedisSource, parseRedisConfig } from '../../src/sources/redis.ts';
import type { SqlSource } from '../../src/sources/types.ts';
import { ensureFerretDb, ensureRedis } from '../helpers/services.ts';
import { closedPort, quietLog } from '../sources/helpers.ts';
import { asks, assertDryRunRefused, assertErrorIgnore, createTable, SQL_SERVERS, testContext, warnLines, withAclPolicy } from './database-helpers.ts';

/** The answers of `policy` to each [action, topic, username?], as their results. */
async function results(policy: CompiledAclPolicy, questions: [('publish' | 'subscribe'), string, string?][]): Promise<string[]> {
  const out: string[] = [];
  for (const [action, topic, username] of questions) out.push((await policy.authorize(asks(action, topic, username ?? 'alice'))).result);
  return out;
}

const IGNORE = { result: 'ignore', reason: 'no rule applies' };

for (const server of SQL_SERVERS) {
  describe(`database ACL policy on ${server.dialect}`, () => {
    const ctx = testContext();
    let admin: SqlSource;
    let table: string;
    let select: string;

    before(async () => {
      admin = server.open('shared');
      ctx.sources.set('shared', admin);
      table = await createTable(admin, server, 'pol_acl', 'seq integer, username varchar(64), permission varchar(16), action varchar(16), topic varchar(256)');
      await admin.insert(table, ['seq', 'username', 'permission', 'action', 'topic'], [
        [1, 'alice', 'deny', 'publish', 'users/%u/secret'],
        [2, 'alice', 'allow', 'all', 'users/%u/#'],
        [3, 'alice', 'allow', 'subscribe', 'clients/%c/+'],
        [4, 'alice', 'allow', 'publish', 'bad/#/x'],
        [5, 'alice', 'allow', 'publish', 'after/bad'],
        [6, 'bob', 'allow', 'all', '#'],
      ]);
      select = `SELECT permission, action, topic FROM ${table} WHERE username = \${username} ORDER BY seq`;
    });

    after(async () => {
      await admin.query(`DROP TABLE ${table}`, []);
      await admin.close();
    });

    test('rows in order: deny before allow, %u and %c, subscribe coverage, other users ignored', () =>
      withAclPolicy(ctx, { source: 'shared', sql: select }, async (p) => {
        assert.deepEqual(
          await results(p, [
            ['publish', 'users/alice/secret'],
            ['publish', 'users/alice/x'],
            ['subscribe', 'users/alice/secret'],
            ['subscribe', 'users/alice/#'],
            ['publish', 'users/bob/x'],
            ['subscribe', 'clients/c1/a'],
            ['subscribe', 'clients/c1/+'],
            ['subscribe', 'clients/c1/#'],
            ['subscribe', 'clients/c2/a'],
            ['publish', 'clients/c1/a'],
            ['publish', 'users/bob/x', 'bob'],
            ['publish', 'after/bad'],
          ]),
          ['deny', 'allow', 'allow', 'allow', 'ignore', 'allow', 'allow', 'ignore', 'ignore', 'ignore', 'allow', 'allow'],
        );
        assert.deepEqual(await p.authorize(asks('publish', 'elsewhere')), IGNORE);
        assert.deepEqual(await p.authorize({ ...asks('publish', 'users/alice/x'), username: undefined }), { result: 'ignore', reason: 'the client gave no username and the query uses ${username}' });
        const skipped = warnLines(ctx, p.id).filter((l) => l.msg === 'database ACL policy skipped a row');
        assert.equal(skipped.length, 1, 'the bad row is logged once');
        assert.match(String(skipped[0].problem), /bad\/#\/x/);
        assert.deepEqual([...p.params].sort(), ['action', 'clientid', 'topic', 'username']);
      }));

    test('${action} and ${topic} are parameters of the query', () =>
      withAclPolicy(
        ctx,
        { source: 'shared', sql: `SELECT permission, action, topic FROM ${table} WHERE (action = \${action} OR action = 'all') AND username <> \${topic} AND username = \${username} ORDER BY seq` },
        async (p) => {
          assert.deepEqual(await results(p, [['publish', 'users/alice/secret'], ['subscribe', 'clients/c1/a']]), ['deny', 'allow']);
          await p.dryRun();
        },
      ));

    test('dry run: a missing column and an unknown table name config.sql; an unreachable server config.datasource', async () => {
      await withAclPolicy(ctx, { source: 'shared', sql: select }, (p) => p.dryRun());
      await withAclPolicy(ctx, { source: 'shared', sql: `SELECT permission, topic FROM ${table} WHERE username = \${username}` }, (p) => assertDryRunRefused(p, 'config.sql', /no column action/));
      await withAclPolicy(ctx, { source: 'shared', sql: `SELECT permission, action, topic FROM ${table}_gone WHERE username = \${username}` }, (p) => assertDryRunRefused(p, 'config.sql', /the query failed/));
      const port = await closedPort();
      await withAclPolicy(ctx, { datasource: { url: server.url.replace(/@[^/]+\//, `@127.0.0.1:${port}/`) }, sql: select }, async (p) => {
        await assertDryRunRefused(p, 'config.datasource', /connection refused/);
        assertErrorIgnore(await p.authorize(asks('publish', 'users/alice/x')), /refused|timed out/i);
      });
    });

    test('a shared source deleted while the policy lives: ignored with an error', () =>
      withAclPolicy(ctx, { source: 'shared', sql: select }, async (p) => {
        assert.equal((await p.authorize(asks('publish', 'users/alice/x'))).result, 'allow');
        ctx.sources.delete('shared');
        try {
          assertErrorIgnore(await p.authorize(asks('publish', 'users/alice/x')), /does not exist/);
        } finally {
          ctx.sources.set('shared', admin);
        }
      }));
  });
}

describe('database ACL policy on mysql with its own datasource: EMQX 4 integer rows', () => {
  const server = SQL_SERVERS.find((s) => s.dialect === 'mysql')!;
  let admin: SqlSource;
  let table: string;

  before(async () => {
    admin = server.open('admin');
    table = await createTable(admin, server, 'pol_acl4', 'id integer, clientid varchar(64), allow_ integer, access integer, topic varchar(256)');
    await admin.insert(table, ['id', 'clientid', 'allow_', 'access', 'topic'], [
      [1, 'c1', 0, 2, 'x/private'],
      [2, 'c1', 1, 3, 'x/#'],
      [3, 'c1', 1, 1, '%c/in'],
    ]);
  });

  after(async () => {
    await admin.query(`DROP TABLE ${table}`, []);
    await admin.close();
  });

  test('permission 1/0 and access 1 (subscribe), 2 (publish), 3 (both)', () =>
    withAclPolicy(
      testContext(),
      { datasource: { url: server.url, poolSize: 1 }, sql: `SELECT allow_ AS permission, access AS action, topic FROM ${table} WHERE clientid = \${clientid} ORDER BY id` },
      async (p) => {
        await p.dryRun();
        assert.deepEqual(
          await results(p, [['publish', 'x/private'], ['subscribe', 'x/private'], ['publish', 'x/a'], ['subscribe', 'c1/in'], ['publish', 'c1/in']]),
          ['deny', 'allow', 'allow', 'allow', 'ignore'],
        );
        assert.deepEqual([...p.params].sort(), ['action', 'clientid', 'topic', 'username'], 'username: a row may use %u');
      },
    ));
});

describe('database ACL policy on redis (HGETALL: field = topic, value = action)', () => {
  const ctx = testContext();
  const prefix = `spindle-pol-acl:${process.pid}:`;
  let writer: Redis;

  before(async () => {
    ensureRedis();
    writer = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
    await writer.connect();
    ctx.sources.set('redis', createRedisSource('redis', parseRedisConfig({ url: 'redis://127.0.0.1:6379' }), quietLog()));
    await writer.hset(`${prefix}alice`, { 'users/%u/#': 'all', 'in/%c': 'subscribe', out: 'publish', 'a/+': 'subscribe', odd: 'fly' });
  });

  after(async () => {
    const keys = await writer.keys(`${prefix}*`);
    if (keys.length > 0) await writer.del(...keys);
    await writer.quit();
    await ctx.sources.get('redis')?.close();
  });

  test('each field allows its action; subscribe coverage; an unknown action is skipped', () =>
    withAclPolicy(ctx, { source: 'redis', command: `HGETALL ${prefix}\${username}` }, async (p) => {
      assert.deepEqual(
        await results(p, [
          ['publish', 'users/alice/x'],
          ['subscribe', 'users/alice/#'],
          ['subscribe', 'in/c1'],
          ['publish', 'in/c1'],
          ['publish', 'out'],
          ['subscribe', 'out'],
          ['subscribe', 'a/b'],
          ['subscribe', 'a/#'],
          ['publish', 'odd'],
          ['publish', 'users/alice/x', 'bob'],
        ]),
        ['allow', 'allow', 'allow', 'ignore', 'allow', 'ignore', 'allow', 'ignore', 'ignore', 'ignore'],
      );
      await p.dryRun();
      assert.ok(warnLines(ctx, p.id).some((l) => /action "fly"/.test(String(l.problem))), 'the unknown action is logged');
    }));

  test('an unreachable server: ignored with an error; the dry run names config.datasource', async () => {
    const port = await closedPort();
    await withAclPolicy(ctx, { datasource: { url: `redis://127.0.0.1:${port}`, connectTimeout: 1000 }, command: `HGETALL ${prefix}\${username}` }, async (p) => {
      assertErrorIgnore(await p.authorize(asks('publish', 'out')), /./);
      await assertDryRunRefused(p, 'config.datasource', /cannot use the server/);
    });
  });
});

describe('database ACL policy on mongodb', () => {
  const ctx = testContext();
  const database = 'spindle_test';
  const collection = `pol_acl_${process.pid}_${Date.now()}`;
  const url = `mongodb://127.0.0.1:27017/${database}`;
  let reader: MongoClient;

  before(async () => {
    ensureFerretDb();
    reader = new MongoClient('mongodb://127.0.0.1:27017/', { serverSelectionTimeoutMS: 5000 });
    await reader.connect();
    await reader.db(database).collection(collection).insertMany([
      { username: 'alice', permission: 'deny', action: 'publish', topic: 'users/%u/secret' },
      { username: 'alice', permission: 'allow', action: 'all', topics: ['users/%u/#', 'shared/+'] },
      { username: 'alice', permission: 'allow', action: 'subscribe', topic: '%c/in' },
      { username: 'bob', permission: 'allow', action: 'all', topic: '#' },
    ]);
    ctx.sources.set('mongo', createMongoSource('mongo', parseMongoConfig({ url }), quietLog()));
  });

  after(async () => {
    await reader.db(database).collection(collection).drop().catch(() => {});
    await reader.close();
    await ctx.sources.get('mongo')?.close();
  });

  const questions: [('publish' | 'subscribe'), string, string?][] = [
    ['publish', 'users/alice/secret'],
    ['publish', 'users/alice/x'],
    ['subscribe', 'shared/a'],
    ['subscribe', 'shared/#'],
    ['subscribe', 'c1/in'],
    ['publish', 'c1/in'],
    ['publish', 'any', 'carol'],
  ];
  const expected = ['deny', 'allow', 'allow', 'ignore', 'allow', 'ignore', 'ignore'];

  test('documents with topic or topics, in order, through a shared source and its own datasource', async () => {
    await withAclPolicy(ctx, { source: 'mongo', collection, filter: { username: '${username}' } }, async (p) => {
      assert.deepEqual(await results(p, questions), expected);
      await p.dryRun();
    });
    await withAclPolicy(ctx, { datasource: { url }, collection, filter: '{"$or": [{"username": "${username}"}]}' }, async (p) => {
      assert.deepEqual(await results(p, questions), expected);
    });
  });
});
