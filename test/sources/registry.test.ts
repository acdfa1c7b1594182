// The source registry over a MemoryStore with real PostgreSQL/MariaDB behind its sources: add,
// list, redaction, persistence and reload, name conflicts, deletion guarded by the in-use check,
// and checks that name why a connection failed (refused, dns, auth).
// needs: postgresql, mariadb
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { SourceInUseError, SourceNameConflictError, SourceNotFoundError } from '../../src/sources/errors.ts';
import { redact } from '../../src/sources/redact.ts';
import { SOURCE_KIND, SourceRegistry } from '../../src/sources/registry.ts';
import { SourceConfigError, type SourceRecord, type SqlSource } from '../../src/sources/types.ts';
import { MYSQL_URL, PG_URL } from '../store/databases.ts';
import { waitFor } from '../helpers/wait.ts';
import { closedPort, quietLog } from './helpers.ts';

async function withRegistry<T>(body: (r: SourceRegistry, store: MemoryStore) => Promise<T>, store = new MemoryStore()): Promise<T> {
  await store.open();
  const registry = new SourceRegistry(store, quietLog());
  await registry.load();
  try {
    return await body(registry, store);
  } finally {
    await registry.close();
  }
}

test('redact removes password, sasl.password, a url password and Authorization header values', () => {
  const record: SourceRecord = {
    id: 'source-1', name: 'n', type: 'kafka', createTime: 't',
    config: { password: 'p1', sasl: { mechanism: 'plain', username: 'u', password: 'p2' }, url: 'redis://u:p3@h:6379/0', headers: { Authorization: 'Bearer p4', 'x-a': 'b' } },
  };
  const shown = redact(record);
  assert.doesNotMatch(JSON.stringify(shown), /p1|p2|p3|p4/);
  assert.deepEqual(shown.config.sasl, { mechanism: 'plain', username: 'u' });
  assert.equal(shown.config.url, 'redis://u@h:6379/0');
  assert.deepEqual(shown.config.headers, { Authorization: '******', 'x-a': 'b' });
  assert.equal(record.config.password, 'p1', 'the stored record is not changed');
});

test('registry: add answers the record without its password; the store keeps it; list pages and filters', () =>
  withRegistry(async (r, store) => {
    const pg = await r.add({ name: 'pg', type: 'postgresql', config: { url: PG_URL } });
    const my = await r.add({ name: 'my', type: 'mysql', config: { url: MYSQL_URL, poolSize: 2 } });
    assert.match(pg.id, /^source-[0-9a-f]{12}$/);
    assert.equal(pg.config.password, undefined);
    assert.equal(pg.config.username, 'spindle');
    const stored = await store.getAdmin<SourceRecord>(SOURCE_KIND, pg.id);
    assert.equal(stored?.config.password, 'spindle');

    const all = r.list();
    assert.equal(all.total, 2);
    assert.deepEqual(all.data.map((s) => s.name), ['pg', 'my']);
    assert.doesNotMatch(JSON.stringify([all, r.export(), r.record(pg.id), r.queryInfo(pg.id)]), /"password"|spindle@/);
    assert.deepEqual(r.list({ type: 'mysql' }).data.map((s) => s.id), [my.id]);
    assert.deepEqual(r.list({ page: 2, size: 1 }).data.map((s) => s.id), [my.id]);

    const info = await waitFor(() => r.queryInfo(pg.id).health.state === 'up' && r.queryInfo(pg.id));
    assert.equal(info.name, 'pg');
    assert.equal(info.health.inFlight, 0);
    await (r.get(my.id) as SqlSource).query('SELECT 1', []);
  }));

test('registry: sources persist and come back with working pools after a reload', async () => {
  const store = new MemoryStore();
  const id = await withRegistry(async (r) => (await r.add({ name: 'pg', type: 'postgresql', config: { url: PG_URL } })).id, store);
  await withRegistry(async (r) => {
    assert.deepEqual(r.list().data.map((s) => [s.id, s.name]), [[id, 'pg']]);
    const rows = await (r.get(id) as SqlSource).query('SELECT 1 AS one', []);
    assert.equal(Number(rows[0].one), 1);
  }, store);
});

test('registry: a source whose server is down at start is added and loaded; its health says down', async () => {
  const store = new MemoryStore();
  const port = await closedPort();
  const id = await withRegistry(async (r) => {
    const s = await r.add({ name: 'away', type: 'mysql', config: { url: MYSQL_URL, port } });
    await waitFor(() => r.queryInfo(s.id).health.state === 'down', { message: 'the background connect finds the server down' });
    return s.id;
  }, store);
  await withRegistry(async (r) => {
    const info = await waitFor(() => r.queryInfo(id).health.state === 'down' && r.queryInfo(id));
    assert.match(info.health.lastError ?? '', /ECONNREFUSED|refused/i);
    assert.equal(info.health.reconnects, 0);
  }, store);
});

test('registry: invalid input names its field; a second source of one name is a conflict', () =>
  withRegistry(async (r) => {
    const bad: [Record<string, unknown>, string][] = [
      [{ type: 'mysql', config: { url: MYSQL_URL } }, 'name'],
      [{ name: 'x', type: 'oracle', config: {} }, 'type'],
      [{ name: 'x', type: 'redis', config: { port: 70000 } }, 'config.port'],
      [{ name: 'x', type: 'mysql', config: { url: MYSQL_URL, port: 'a' } }, 'config.port'],
      [{ name: 'x', type: 'http', config: { url: 'ftp://h/' } }, 'config.url'],
    ];
    for (const [input, field] of bad) {
      await assert.rejects(r.add(input as never), (err: unknown) => err instanceof SourceConfigError && err.field === field, field);
    }
    const results = await Promise.allSettled([
      r.add({ name: 'same', type: 'http', config: { url: 'http://127.0.0.1:1/' } }),
      r.add({ name: 'same', type: 'http', config: { url: 'http://127.0.0.1:2/' } }),
    ]);
    assert.deepEqual(results.map((x) => x.status).sort(), ['fulfilled', 'rejected']);
    const rejected = results.find((x) => x.status === 'rejected') as PromiseRejectedResult;
    assert.ok(rejected.reason instanceof SourceNameConflictError);
    assert.equal(rejected.reason.code, 'CONFLICT');
    assert.equal(rejected.reason.field, 'name');
    assert.equal(r.list().total, 1);
  }));

test('registry: delete refuses a source a rule uses, then closes and removes it', () =>
  withRegistry(async (r, store) => {
    const s = await r.add({ name: 'pg', type: 'postgresql', config: { url: PG_URL } });
    const used = new Set([s.id]);
    r.setInUseCheck((id) => used.has(id));
    await assert.rejects(r.delete(s.id), (err: unknown) => err instanceof SourceInUseError && err.code === 'CONFLICT');
    assert.ok(r.get(s.id));
    used.clear();
    const source = r.get(s.id)!;
    await r.delete(s.id);
    assert.equal(source.health().state, 'closed');
    assert.equal(r.get(s.id), undefined);
    assert.equal(await store.getAdmin(SOURCE_KIND, s.id), undefined);
    await assert.rejects(r.delete(s.id), SourceNotFoundError);
    assert.throws(() => r.queryInfo(s.id), SourceNotFoundError);
    await assert.rejects(r.check(s.id), SourceNotFoundError);
  }));

test('registry: check answers ok for the real servers and names refused, dns and auth failures', () =>
  withRegistry(async (r) => {
    const pg = await r.add({ name: 'pg', type: 'postgresql', config: { url: PG_URL } });
    const ok = await r.check(pg.id);
    assert.equal(ok.ok, true, ok.message);
    const my = await r.checkConfig('mysql', { url: MYSQL_URL });
    assert.equal(my.ok, true, my.message);

    const port = await closedPort();
    const cases: [string, Record<string, unknown>, string][] = [
      ['postgresql', { url: PG_URL, host: '127.0.0.1', port }, 'refused'],
      ['mysql', { url: MYSQL_URL, host: '127.0.0.1', port }, 'refused'],
      ['http', { url: `http://127.0.0.1:${port}/` }, 'refused'],
      ['postgresql', { url: PG_URL, host: 'nonexistent.invalid' }, 'dns'],
      ['mysql', { url: MYSQL_URL, host: 'nonexistent.invalid' }, 'dns'],
      ['postgresql', { url: PG_URL, password: 'wrong' }, 'auth'],
      ['mysql', { url: MYSQL_URL, password: 'wrong' }, 'auth'],
    ];
    for (const [type, config, failure] of cases) {
      const result = await r.checkConfig(type, config, 3000);
      assert.equal(result.ok, false, `${type} ${JSON.stringify(config)}`);
      assert.equal(result.failure, failure, `${type} ${JSON.stringify(config)}: ${result.message}`);
    }
    assert.equal(r.list().total, 1, 'checkConfig saves nothing');
    await assert.rejects(r.checkConfig('mysql', { url: 'x' }), (err: unknown) => err instanceof SourceConfigError && err.field === 'config.url');
  }));
