// The redis source against a real Redis (scripts/ensure-redis.sh): config errors name their field,
// check() classifies ok/refused/dns/auth, pipeline writes read back by a separate client, a
// data-level error is non-transient, and a source whose server is unreachable goes down and fails
// fast.
// needs: redis
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/log/index.ts';
import { createRedisSource, parseRedisConfig } from '../../src/sources/redis.ts';
import { SourceConfigError, SourceError, type RedisSource } from '../../src/sources/types.ts';
import { closedPort, ensureRedis } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';

const log = createLogger({ level: 'error' });
const PASSWORD = 'redis-test-secret-7f3a';
const prefix = `spindle-test:${process.pid}:`;
let reader: Redis;

before(async () => {
  ensureRedis();
  reader = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await reader.connect();
  // A user with a password, for the auth cases (the default user stays open for the other tests).
  await reader.call('ACL', 'SETUSER', 'spindle-test', 'on', `>${PASSWORD}`, '~*', '+@all');
});

after(async () => {
  const keys = await reader.keys(`${prefix}*`);
  if (keys.length > 0) await reader.del(...keys);
  await reader.call('ACL', 'DELUSER', 'spindle-test');
  await reader.quit();
});

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SourceConfigError, `expected a SourceConfigError, got ${String(err)}`);
    return err.field;
  }
  assert.fail('expected the config to be refused');
}

describe('parseRedisConfig', () => {
  test('a URL gives host, port, credentials and database', () => {
    const c = parseRedisConfig({ url: 'redis://u:p%40ss@example.com:6380/3' });
    assert.deepEqual(
      { host: c.host, port: c.port, username: c.username, password: c.password, database: c.database, tls: c.tls },
      { host: 'example.com', port: 6380, username: 'u', password: 'p@ss', database: 3, tls: null },
    );
    assert.equal(c.poolSize, 8);
    assert.equal(c.connectTimeout, 5000);
    assert.equal(c.requestTimeout, 5000);
    assert.deepEqual(parseRedisConfig({ url: 'rediss://h' }).tls, { rejectUnauthorized: true });
  });

  test('host/port fields, tls object, explicit database', () => {
    const c = parseRedisConfig({ host: 'h', port: 7000, database: 2, tls: { rejectUnauthorized: false }, poolSize: 2 });
    assert.equal(c.port, 7000);
    assert.equal(c.database, 2);
    assert.deepEqual(c.tls, { rejectUnauthorized: false });
    assert.equal(c.poolSize, 2);
  });

  test('mistakes name their field', () => {
    assert.equal(fieldOf(() => parseRedisConfig({})), 'config.host');
    assert.equal(fieldOf(() => parseRedisConfig({ url: 'http://h' })), 'config.url');
    assert.equal(fieldOf(() => parseRedisConfig({ url: 'redis://h/x' })), 'config.url');
    assert.equal(fieldOf(() => parseRedisConfig({ url: 'redis://h', host: 'h' })), 'config.url');
    assert.equal(fieldOf(() => parseRedisConfig({ host: 'h', port: 70000 })), 'config.port');
    assert.equal(fieldOf(() => parseRedisConfig({ host: 'h', poolSize: 0 })), 'config.poolSize');
    assert.equal(fieldOf(() => parseRedisConfig({ host: 'h', tls: 'yes' })), 'config.tls');
    assert.equal(fieldOf(() => parseRedisConfig({ host: 'h', password: 5 })), 'config.password');
    assert.equal(fieldOf(() => parseRedisConfig({ host: 'h', requestTimeout: 1.5 })), 'config.requestTimeout');
  });
});

describe('redis source check()', () => {
  test('ok against the real server', async () => {
    const s = createRedisSource('r1', parseRedisConfig({ url: 'redis://127.0.0.1:6379' }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, true, r.message);
      assert.ok(r.latencyMs >= 0);
    } finally {
      await s.close();
    }
  });

  test('a closed port is refused', async () => {
    const s = createRedisSource('r2', parseRedisConfig({ host: '127.0.0.1', port: await closedPort() }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'refused', r.message);
    } finally {
      await s.close();
    }
  });

  test('an unresolvable host is dns', async () => {
    const s = createRedisSource('r3', parseRedisConfig({ host: 'nonexistent.invalid' }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'dns', r.message);
    } finally {
      await s.close();
    }
  });

  test('a wrong password is auth, and the password is in no message', async () => {
    const wrong = 'not-the-password-91c2';
    const s = createRedisSource('r4', parseRedisConfig({ url: `redis://spindle-test:${wrong}@127.0.0.1:6379` }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'auth', r.message);
      assert.ok(!r.message?.includes(wrong));
      await assert.rejects(s.command(['PING']), (err: unknown) => {
        assert.ok(err instanceof SourceError);
        assert.equal(err.transient, true);
        assert.ok(!err.message.includes(wrong));
        return true;
      });
    } finally {
      await s.close();
    }
    const right = createRedisSource('r5', parseRedisConfig({ url: `redis://spindle-test:${PASSWORD}@127.0.0.1:6379` }), log);
    try {
      assert.equal((await right.check(3000)).ok, true);
    } finally {
      await right.close();
    }
  });
});

describe('redis source operations', () => {
  let source: RedisSource;
  before(() => {
    source = createRedisSource('ops', parseRedisConfig({ host: '127.0.0.1', port: 6379, poolSize: 2 }), log);
  });
  after(() => source.close());

  test('a pipeline writes what a separate client reads back', async () => {
    await source.pipeline([
      ['HSET', `${prefix}h`, 'f', 'v'],
      ['LPUSH', `${prefix}l`, 'x', 'y'],
      ['SET', `${prefix}b`, Buffer.from([0, 1, 2])],
    ]);
    assert.deepEqual(await reader.hgetall(`${prefix}h`), { f: 'v' });
    assert.deepEqual(await reader.lrange(`${prefix}l`, 0, -1), ['y', 'x']);
    assert.deepEqual(await reader.getBuffer(`${prefix}b`), Buffer.from([0, 1, 2]));
    assert.equal(source.health().state, 'up');
    assert.equal(await source.command(['HGET', `${prefix}h`, 'f']), 'v');
  });

  test('a data-level error (WRONGTYPE) is non-transient and leaves the source up', async () => {
    await assert.rejects(source.pipeline([['SET', `${prefix}s`, 'a'], ['LPUSH', `${prefix}s`, 'b']]), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.equal(err.transient, false);
      assert.equal(err.kind, 'database');
      assert.match(err.message, /WRONGTYPE/);
      return true;
    });
    await assert.rejects(source.command(['NOSUCHCOMMAND']), (err: unknown) => err instanceof SourceError && !err.transient);
    assert.equal(source.health().state, 'up');
  });

  test('at most poolSize operations are in flight; the others wait in order', async () => {
    const order: number[] = [];
    let peak = 0;
    const ops = Array.from({ length: 6 }, (_, i) =>
      source.command(['BLPOP', `${prefix}empty`, '0.05']).then(() => {
        order.push(i);
      }),
    );
    const sampler = setInterval(() => (peak = Math.max(peak, source.health().inFlight)), 5);
    try {
      await Promise.all(ops);
    } finally {
      clearInterval(sampler);
    }
    assert.ok(peak <= 2, `peak in flight ${peak}`);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
    assert.equal(source.health().inFlight, 0);
  });
});

describe('redis source with its server unreachable', () => {
  test('goes down and fails fast with transient errors', async () => {
    const s = createRedisSource('down', parseRedisConfig({ host: '127.0.0.1', port: await closedPort(), requestTimeout: 1000 }), log);
    try {
      const started = Date.now();
      const err = await s.pipeline([['SET', 'k', 'v']]).then(
        () => assert.fail('the pipeline should fail'),
        (e: unknown) => e,
      );
      assert.ok(Date.now() - started < 1500, `failed after ${Date.now() - started} ms`);
      assert.ok(err instanceof SourceError);
      assert.equal(err.transient, true);
      await waitFor(() => s.health().state === 'down', { message: 'the source goes down' });
      const h = s.health();
      assert.ok(h.lastError !== null);
      const again = Date.now();
      await assert.rejects(s.command(['PING']), (e: unknown) => e instanceof SourceError && e.transient && e.kind === 'refused');
      assert.ok(Date.now() - again < 200, 'refused at once while down');
    } finally {
      await s.close();
    }
    assert.equal(s.health().state, 'closed');
  });
});
