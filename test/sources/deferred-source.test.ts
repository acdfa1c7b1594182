// A source while its driver's module loads (deferred-source.ts, issue 26): it is 'connecting' and
// its operations wait; then everything is the driver's source's; a driver that cannot be loaded
// leaves it down with the load error, which check() answers and operations fail with; closed
// before the driver loaded, no driver source is ever made. A fake driver: no server needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { lazyImport } from '../../src/lazy/lazy-import.ts';
import { createLogger } from '../../src/log/index.ts';
import { DeferredRedisSource, DeferredSqlSource, type CreateSource } from '../../src/sources/deferred-source.ts';
import { SourceError, type RedisSource, type SourceHealth, type SqlSource } from '../../src/sources/types.ts';
import { quietLog } from './helpers.ts';

/** A promise resolved from outside: the driver's module "loads" when the test says so. */
function gate<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const UP: SourceHealth = { state: 'up', since: '2024-01-01T00:00:00.000Z', lastError: null, lastErrorAt: null, reconnects: 3, inFlight: 1 };

function fakeRedis(calls: string[]): CreateSource<RedisSource> {
  return (id, config: { host: string }) => ({
    id,
    type: 'redis',
    health: () => UP,
    check: async () => ({ ok: true, latencyMs: 7 }),
    close: async () => {
      calls.push('close');
    },
    pipeline: async (commands) => {
      calls.push(`pipeline ${commands.length} on ${config.host}`);
    },
    command: async (args) => `reply to ${args.join(' ')}`,
  });
}

test('deferred source: connecting while the driver loads, operations wait for it, then all is the driver source\'s', async () => {
  const loaded = gate<CreateSource<RedisSource>>();
  const calls: string[] = [];
  const source = new DeferredRedisSource('source-1', { host: 'h' }, quietLog(), () => loaded.promise);
  assert.equal(source.type, 'redis');
  assert.equal(source.id, 'source-1');
  const before = source.health();
  assert.equal(before.state, 'connecting');
  assert.equal(before.lastError, null);
  assert.equal(before.reconnects, 0);
  assert.ok(Date.parse(before.since) <= Date.now());

  const piped = source.pipeline([['SET', 'k', 'v']]);
  const replied = source.command(['GET', 'k']);
  assert.equal(source.health().inFlight, 2, 'operations waiting for the driver are in flight');
  assert.deepEqual(calls, []);

  loaded.resolve(fakeRedis(calls));
  await piped;
  assert.equal(await replied, 'reply to GET k');
  assert.deepEqual(calls, ['pipeline 1 on h']);
  assert.deepEqual(source.health(), UP);
  assert.deepEqual(await source.check(100), { ok: true, latencyMs: 7 });
  await source.close();
  assert.deepEqual(calls, ['pipeline 1 on h', 'close']);
});

test('deferred source: a driver that cannot be loaded leaves it down; check and operations answer the load error', async () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', stream: new Writable({ write: (c, _e, done) => { lines.push(String(c)); done(); } }) });
  const load = lazyImport('ioredis', () => Promise.reject(new Error("Cannot find package 'ioredis'")));
  const source = new DeferredRedisSource('source-2', {}, log, load);

  await assert.rejects(source.command(['PING']), (err: unknown) => {
    assert.ok(err instanceof SourceError);
    assert.equal(err.message, "cannot load ioredis: Cannot find package 'ioredis'");
    assert.equal(err.kind, 'other');
    assert.equal(err.transient, false, 'a retry cannot load it');
    return true;
  });
  const health = source.health();
  assert.equal(health.state, 'down');
  assert.equal(health.lastError, "cannot load ioredis: Cannot find package 'ioredis'");
  assert.equal(health.lastErrorAt, health.since);
  assert.equal(health.inFlight, 0);
  const check = await source.check(100);
  assert.equal(check.ok, false);
  assert.equal(check.failure, 'other');
  assert.equal(check.message, "cannot load ioredis: Cannot find package 'ioredis'");
  assert.equal(typeof check.latencyMs, 'number');
  assert.equal(lines.length, 1, 'logged once');
  assert.match(lines[0], /source driver cannot be loaded/);
  assert.match(lines[0], /"source":"source-2"/);
  assert.match(lines[0], /"type":"redis"/);

  await source.close();
  assert.equal(source.health().state, 'closed');
});

test('deferred source: closed before its driver loaded, the driver source is never made (no pool opened)', async () => {
  const loaded = gate<CreateSource<SqlSource>>();
  let made = 0;
  const source = new DeferredSqlSource('postgresql', 'source-3', {}, quietLog(), () => loaded.promise);
  assert.equal(source.type, 'postgresql');
  const query = source.query('SELECT 1', []);
  const closing = source.close();
  loaded.resolve(() => {
    made++;
    throw new Error('not to be called');
  });
  await closing;
  await assert.rejects(query, /closed before its driver loaded/);
  assert.equal(made, 0);
  assert.equal(source.health().state, 'closed');
});

test('deferred source: a driver whose create throws leaves the source down with that error', async () => {
  const source = new DeferredSqlSource('mysql', 'source-4', {}, quietLog(), async () => () => {
    throw new Error('bad option');
  });
  const check = await source.check();
  assert.deepEqual({ ok: check.ok, failure: check.failure, message: check.message }, { ok: false, failure: 'other', message: 'bad option' });
  assert.equal(source.health().state, 'down');
  assert.equal(source.health().lastError, 'bad option');
});
