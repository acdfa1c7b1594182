// ActionPipeline against real sources: 20 000 outputs into PostgreSQL in batches, a source on a
// closed port (retries, drops past the bound, close gives up), a refused batch (missing column)
// counted failed while later batches go on, a server that goes away and comes back (nothing
// lost), save_mysql into MariaDB, and webhook to a real node:http receiver.
// needs: postgresql, mariadb
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { ActionPipeline, actionSpec, type CompiledAction, type Output } from '../../../src/rules/actions/index.ts';
import { createHttpSource, parseHttpConfig } from '../../../src/sources/http.ts';
import { createMysqlSource, parseMysqlConfig } from '../../../src/sources/mysql.ts';
import { createPostgresqlSource, parsePostgresqlConfig } from '../../../src/sources/postgresql.ts';
import type { AnySource, SqlSource } from '../../../src/sources/types.ts';
import { MYSQL_URL, PG_URL, uniqueName, withHint } from '../../store/databases.ts';
import { waitFor } from '../../helpers/wait.ts';
import { TcpProxy, closedPort, quietLog } from '../../sources/helpers.ts';

const log = quietLog();

function pipelineFor(action: CompiledAction, source: AnySource | undefined, queueLimit?: number): ActionPipeline {
  return new ActionPipeline({ ruleId: 'r1', index: 0, action, sources: { get: (id) => (id === action.sourceId ? source : undefined) }, log, ...(queueLimit ? { queueLimit } : {}) });
}

function compile(type: string, config: Record<string, unknown>): CompiledAction {
  return actionSpec(type)!.compile(config) as CompiledAction;
}

function reading(i: number): Output {
  return { topic: `dev/${i % 10}`, clientid: `c${i}`, payload: JSON.stringify({ t: i % 40 }), timestamp: 1_700_000_000_000 + i };
}

async function pgTable<T>(body: (pg: SqlSource, table: string) => Promise<T>, config: Record<string, unknown> = {}): Promise<T> {
  const pg = createPostgresqlSource('pg', parsePostgresqlConfig({ url: PG_URL, ...config }), log);
  const table = uniqueName('act');
  try {
    await pg.query(`CREATE TABLE ${table} (topic text, clientid text, payload text, timestamp bigint)`, []);
  } catch (err) {
    await pg.close();
    throw withHint(err, PG_URL);
  }
  try {
    return await body(pg, table);
  } finally {
    await pg.query(`DROP TABLE ${table}`, []).catch(() => {});
    await pg.close();
  }
}

async function count(sql: SqlSource, table: string): Promise<number> {
  return Number((await sql.query(`SELECT count(*) AS n FROM ${table}`, []))[0].n);
}

test('save_postgresql: 20 000 outputs pushed at once arrive as rows, written in batches', () =>
  pgTable(async (pg, table) => {
    const p = pipelineFor(compile('save_postgresql', { source: 'pg', table }), pg, 20_000);
    for (let i = 0; i < 20_000; i += 100) p.push(Array.from({ length: 100 }, (_, j) => reading(i + j)));
    await waitFor(() => p.stats().success === 20_000, { timeout: 30_000, message: 'every output written' });
    const s = p.stats();
    assert.equal(await count(pg, table), 20_000);
    assert.equal(s.failed + s.dropped + s.queued, 0);
    assert.ok(s.batches >= 40 && s.batches < 20_000 / 10, `${s.batches} batches`);
    const [row] = await pg.query(`SELECT * FROM ${table} WHERE clientid = $1`, ['c123']);
    assert.deepEqual({ ...row, timestamp: Number(row.timestamp) }, reading(123));
    await p.close(1000);
  }));

test('a source on a closed port: the batch is retried, outputs past the bound are dropped, close gives up', async () => {
  const port = await closedPort();
  const pg = createPostgresqlSource('pg', parsePostgresqlConfig({ url: PG_URL, host: '127.0.0.1', port }), log);
  try {
    const p = pipelineFor(compile('save_postgresql', { source: 'pg', table: 't', batchSize: 100 }), pg, 1000);
    p.push(Array.from({ length: 3000 }, (_, i) => reading(i)));
    await waitFor(() => p.stats().retries >= 3, { message: 'the batch is retried' });
    let s = p.stats();
    assert.equal(s.dropped, 2000);
    assert.equal(s.queued, 1000);
    assert.equal(s.success + s.failed, 0);
    assert.match(s.lastError ?? '', /ECONNREFUSED|refused/i);
    assert.equal(pg.health().state, 'down');
    await p.close(200);
    s = p.stats();
    assert.equal(s.dropped, 3000, 'what was queued at the deadline is dropped');
    assert.equal(s.queued, 0);
    p.push([reading(1)]);
    assert.equal(p.stats().dropped, 3001, 'a closed pipeline drops');
  } finally {
    await pg.close();
  }
});

test('a refused batch (unknown column) is counted failed and the pipeline goes on', () =>
  pgTable(async (pg, table) => {
    const p = pipelineFor(compile('save_postgresql', { source: 'pg', table, batchSize: 10 }), pg);
    p.push(Array.from({ length: 5 }, (_, i) => ({ ...reading(i), nope: 1 })));
    p.push(Array.from({ length: 5 }, (_, i) => reading(i)));
    await waitFor(() => p.stats().success === 5 && p.stats().failed === 5);
    const s = p.stats();
    assert.match(s.lastError ?? '', /nope/);
    assert.ok(s.lastErrorAt);
    assert.equal(s.retries, 0);
    assert.equal(await count(pg, table), 5);
    await p.close(1000);
  }));

test('when the server goes away the outputs wait, and all of them arrive once it is back', async () => {
  const target = new URL(PG_URL);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
  const port = await proxy.start();
  try {
    await pgTable(async (direct, table) => {
      const pg = createPostgresqlSource('pg', parsePostgresqlConfig({ url: PG_URL, host: '127.0.0.1', port }), log);
      try {
        const p = pipelineFor(compile('save_postgresql', { source: 'pg', table }), pg);
        p.push([reading(0)]);
        await waitFor(() => p.stats().success === 1);
        await proxy.stop();
        p.push(Array.from({ length: 99 }, (_, i) => reading(i + 1)));
        await waitFor(() => p.stats().retries >= 2, { message: 'retrying while the server is away' });
        await proxy.start(port);
        await waitFor(() => p.stats().success === 100, { timeout: 15_000, message: 'all outputs written after the server came back' });
        assert.equal(await count(direct, table), 100);
        assert.equal(p.stats().dropped + p.stats().failed, 0);
        await p.close(1000);
      } finally {
        await pg.close();
      }
    });
  } finally {
    await proxy.stop();
  }
});

test('a source that does not exist yet: outputs wait and are written once it does', () =>
  pgTable(async (pg, table) => {
    let source: AnySource | undefined;
    const action = compile('save_postgresql', { source: 'later', table });
    const p = new ActionPipeline({ ruleId: 'r1', index: 1, action, sources: { get: () => source }, log });
    p.push([reading(1), reading(2)]);
    await waitFor(() => p.stats().retries >= 1);
    source = pg;
    await waitFor(() => p.stats().success === 2);
    assert.equal(await count(pg, table), 2);
    await p.close(100);
  }));

test('save_mysql: outputs into MariaDB through column templates', async () => {
  const my = createMysqlSource('my', parseMysqlConfig({ url: MYSQL_URL }), log);
  const table = uniqueName('act');
  try {
    await my.query(`CREATE TABLE ${table} (device varchar(32), temp double, raw json, at bigint)`, []).catch((err) => {
      throw withHint(err, MYSQL_URL);
    });
    const action = compile('save_mysql', { source: 'my', table, columns: { device: '${clientid}', temp: '${payload.t}', raw: '${payload}', at: '${timestamp}' } });
    const p = pipelineFor(action, my);
    p.push(Array.from({ length: 1200 }, (_, i) => reading(i)));
    await waitFor(() => p.stats().success === 1200, { timeout: 15_000 });
    assert.equal(p.stats().batches, 3);
    const rows = await my.query(`SELECT device, temp, raw, at FROM ${table} WHERE device = ?`, ['c45']);
    assert.deepEqual(rows.map((r) => [r.device, Number(r.temp), typeof r.raw === 'string' ? JSON.parse(r.raw) : r.raw, Number(r.at)]), [['c45', 5, { t: 5 }, 1_700_000_000_045]]);
    await p.close(1000);
  } finally {
    await my.query(`DROP TABLE IF EXISTS ${table}`, []).catch(() => {});
    await my.close();
  }
});

test('webhook: one request per output to a real receiver; a 503 is retried alone, a 400 counted failed', async () => {
  const received: { url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  const failedOnce = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      received.push({ url: req.url ?? '', headers: req.headers, body });
      if (req.url === '/dev/c7' && !failedOnce.has('c7')) {
        failedOnce.add('c7');
        res.writeHead(503).end('busy');
      } else if (req.url === '/dev/c9') res.writeHead(400).end('bad');
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const source = createHttpSource('hook', parseHttpConfig({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, poolSize: 4 }), log);
  try {
    const action = compile('webhook', { source: 'hook', path: '/dev/${clientid}', headers: { 'x-topic': '${topic}' } });
    const errors = new Set<string>();
    const p = new ActionPipeline({ ruleId: 'r1', index: 0, action, sources: { get: () => source }, log, onStats: (st) => st.lastError && errors.add(st.lastError) });
    p.push(Array.from({ length: 20 }, (_, i) => reading(i)));
    await waitFor(() => p.stats().success === 19 && p.stats().failed === 1);
    const s = p.stats();
    assert.equal(s.retries, 1);
    assert.equal(received.length, 21, '20 requests and one retry of c7');
    assert.equal(received.filter((r) => r.url === '/dev/c7').length, 2);
    const r3 = received.find((r) => r.url === '/dev/c3')!;
    assert.deepEqual(JSON.parse(r3.body), reading(3));
    assert.equal(r3.headers['x-topic'], 'dev/3');
    assert.equal(r3.headers['content-type'], 'application/json');
    assert.deepEqual([...errors].map((e) => e.match(/http (\d+)/)?.[1]).sort(), ['400', '503']);
    await p.close(1000);
  } finally {
    await source.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
