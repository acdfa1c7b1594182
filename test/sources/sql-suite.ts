// The behaviour both SQL sources (mysql, postgresql) must show against their real server: one
// multi-row INSERT with parameters, identifiers validated, errors classified (bad column and too
// long data refused, a closed port refused and transient), the pool bound, the per-operation
// deadline, and down -> up through the probe when the server comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { Logger } from '../../src/log/index.ts';
import type { SqlConfig } from '../../src/sources/sql-config.ts';
import { SourceError, type SqlSource } from '../../src/sources/types.ts';
import { uniqueName, withHint } from '../store/databases.ts';
import { waitFor } from '../helpers/wait.ts';
import { TcpProxy, closedPort, quietLog } from './helpers.ts';

export interface SqlSuiteOptions {
  name: 'mysql' | 'postgresql';
  url: string;
  parse(raw: unknown): SqlConfig;
  create(id: string, config: SqlConfig, log: Logger): SqlSource;
  /** A statement that takes `seconds`. */
  sleep(seconds: number): string;
  /** The placeholder of parameter n. */
  mark(n: number): string;
}

export function sqlSourceSuite(o: SqlSuiteOptions): void {
  const log = quietLog();

  async function withSource<T>(overrides: Record<string, unknown>, body: (s: SqlSource) => Promise<T>): Promise<T> {
    const source = o.create(`test-${o.name}`, o.parse({ url: o.url, ...overrides }), log);
    try {
      return await body(source);
    } finally {
      await source.close();
    }
  }

  async function withTable<T>(body: (s: SqlSource, table: string) => Promise<T>): Promise<T> {
    return withSource({}, async (s) => {
      const table = uniqueName('src');
      try {
        await s.query(`CREATE TABLE ${table} (id integer, name varchar(8), doc text, n bigint)`, []);
      } catch (err) {
        throw withHint(err, o.url);
      }
      try {
        return await body(s, table);
      } finally {
        await s.query(`DROP TABLE ${table}`, []);
      }
    });
  }

  test(`${o.name}: insert writes every row in one statement, values as parameters`, () =>
    withTable(async (s, table) => {
      await s.insert(table, ['id', 'name', 'doc', 'n'], [
        [1, 'a', '{"t":1}', 1700000000000],
        [2, "b'); --", null, null],
        [3, 'c', undefined, 3],
      ]);
      const rows = await s.query(`SELECT id, name, doc, n FROM ${table} WHERE id >= ${o.mark(1)} ORDER BY id`, [1]);
      assert.deepEqual(rows.map((r) => [Number(r.id), r.name, r.doc, r.n === null ? null : Number(r.n)]), [
        [1, 'a', '{"t":1}', 1700000000000],
        [2, "b'); --", null, null],
        [3, 'c', null, 3],
      ]);
      assert.equal(s.health().state, 'up');
    }));

  test(`${o.name}: queryWithColumns answers the result's column names, even with no row`, () =>
    withTable(async (s, table) => {
      await s.insert(table, ['id', 'name'], [[1, 'a']]);
      const one = await s.queryWithColumns(`SELECT id, name AS label FROM ${table} WHERE id = ${o.mark(1)}`, [1]);
      assert.deepEqual(one.columns, ['id', 'label']);
      assert.deepEqual(one.rows.map((r) => [Number(r.id), r.label]), [[1, 'a']]);
      const none = await s.queryWithColumns(`SELECT name, doc FROM ${table} WHERE id = ${o.mark(1)}`, [2]);
      assert.deepEqual({ rows: [...none.rows], columns: none.columns }, { rows: [], columns: ['name', 'doc'] });
    }));

  test(`${o.name}: more values than one statement may carry are split into several INSERTs`, () =>
    withTable(async (s, table) => {
      const rows = Array.from({ length: 70_000 }, (_, i) => [i]);
      await s.insert(table, ['id'], rows);
      const [count] = await s.query(`SELECT count(*) AS c, count(DISTINCT id) AS d FROM ${table}`, []);
      assert.deepEqual([Number(count.c), Number(count.d)], [70_000, 70_000]);
    }));

  test(`${o.name}: identifiers outside [A-Za-z_][A-Za-z0-9_]* are refused before anything is sent`, () =>
    withTable(async (s, table) => {
      for (const [t, c] of [[`${table}; DROP TABLE x`, 'id'], [table, 'id"'], ['a.b.c', 'id'], [table, '']]) {
        await assert.rejects(s.insert(t, [c], [[1]]), (err: unknown) => err instanceof SourceError && !err.transient);
      }
      const [count] = await s.query(`SELECT count(*) AS c FROM ${table}`, []);
      assert.equal(Number(count.c), 0);
    }));

  test(`${o.name}: an unknown column and data too long are refused, not transient, and the source stays up`, () =>
    withTable(async (s, table) => {
      await assert.rejects(s.insert(table, ['nope'], [[1]]), (err: unknown) => err instanceof SourceError && err.kind === 'database' && !err.transient);
      await assert.rejects(s.insert(table, ['name'], [['far too long for eight']]), (err: unknown) => err instanceof SourceError && err.kind === 'database' && !err.transient);
      await assert.rejects(s.query('SELEC 1', []), (err: unknown) => err instanceof SourceError && !err.transient);
      assert.equal(s.health().state, 'up');
      assert.match(s.health().lastError ?? '', /./);
    }));

  test(`${o.name}: at most poolSize operations run at once`, () =>
    withSource({ poolSize: 2 }, async (s) => {
      let most = 0;
      const sampler = setInterval(() => (most = Math.max(most, s.health().inFlight)), 5);
      try {
        await Promise.all(Array.from({ length: 8 }, () => s.query(o.sleep(0.05), [])));
      } finally {
        clearInterval(sampler);
      }
      assert.equal(most, 2);
      assert.equal(s.health().inFlight, 0);
    }));

  test(`${o.name}: an operation longer than requestTimeout fails with a transient timeout`, () =>
    withSource({ requestTimeout: 300 }, async (s) => {
      const started = Date.now();
      await assert.rejects(s.query(o.sleep(3), []), (err: unknown) => err instanceof SourceError && err.kind === 'timeout' && err.transient);
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
    }));

  test(`${o.name}: against a closed port operations fail fast and transient, and the health says down`, async () => {
    const port = await closedPort();
    await withSource({ host: '127.0.0.1', port }, async (s) => {
      const started = Date.now();
      await assert.rejects(s.insert('t', ['a'], [[1]]), (err: unknown) => err instanceof SourceError && err.kind === 'refused' && err.transient);
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
      assert.equal(s.health().state, 'down');
      const check = await s.check(2000);
      assert.equal(check.ok, false);
      assert.equal(check.failure, 'refused');
    });
  });

  test(`${o.name}: down while the server is away, up again (one reconnect) when it is back`, async () => {
    const target = new URL(o.url);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
    const port = await proxy.start();
    try {
      await withSource({ host: '127.0.0.1', port }, async (s) => {
        await s.query('SELECT 1', []);
        assert.equal(s.health().state, 'up');
        await proxy.stop();
        await waitFor(async () => {
          await s.query('SELECT 1', []).catch(() => {});
          return s.health().state === 'down';
        }, { message: 'the source is down once the proxy is stopped' });
        await assert.rejects(s.query('SELECT 1', []), (err: unknown) => err instanceof SourceError && err.transient);
        await proxy.start(port);
        await waitFor(() => s.health().state === 'up', { timeout: 8000, message: 'the probe finds the server again' });
        assert.equal(s.health().reconnects, 1);
        assert.deepEqual((await s.query('SELECT 1 AS one', [])).map((r) => Number(r.one)), [1]);
      });
    } finally {
      await proxy.stop();
    }
  });

  test(`${o.name}: check answers ok on the real server and auth for a wrong password`, async () => {
    await withSource({}, async (s) => {
      const ok = await s.check(3000);
      assert.equal(ok.ok, true, ok.message);
      assert.ok(ok.latencyMs >= 0);
    });
    await withSource({ password: 'wrong-password' }, async (s) => {
      const bad = await s.check(3000);
      assert.equal(bad.ok, false);
      assert.equal(bad.failure, 'auth', bad.message);
      assert.doesNotMatch(bad.message ?? '', /wrong-password/);
    });
  });
}
