// save_postgresql and save_mysql at saturation: N rule outputs (4 fields: topic, clientid, payload
// JSON, timestamp) pushed into ActionPipelines at once, timed until the last row is written. One
// pipeline is one rule action (one batch in flight at a time); several pipelines on one source
// show the pool's concurrency. Needs the test databases (make databases).
// Run: node --import tsx bench/actions-sql.ts   (ACTIONS_BENCH_N=100000 ACTIONS_BENCH_ROUNDS=2)
import { createLogger } from '../src/log/index.ts';
import { ActionPipeline, actionSpec, type CompiledAction, type Output } from '../src/rules/actions/index.ts';
import { createMysqlSource, parseMysqlConfig } from '../src/sources/mysql.ts';
import { createPostgresqlSource, parsePostgresqlConfig } from '../src/sources/postgresql.ts';
import type { SqlSource } from '../src/sources/types.ts';
import { writeResults, type Row } from './lib/report.ts';

const PG_URL = process.env.SPINDLE_TEST_PG_URL || 'postgres://spindle:spindle@127.0.0.1:5432/spindle_test';
const MYSQL_URL = process.env.SPINDLE_TEST_MYSQL_URL || 'mysql://spindle:spindle@127.0.0.1:3306/spindle_test';
const N = Number(process.env.ACTIONS_BENCH_N ?? 100_000);
const ROUNDS = Number(process.env.ACTIONS_BENCH_ROUNDS ?? 2);
const log = createLogger({ level: 'error', name: 'bench' });

function output(i: number): Output {
  return { topic: `sensors/${i % 100}/temp`, clientid: `dev-${i % 1000}`, payload: `{"t":${(i % 400) / 10},"seq":${i}}`, timestamp: 1_700_000_000_000 + i };
}

async function run(type: 'postgresql' | 'mysql', source: SqlSource, pipelines: number, batchSize: number): Promise<{ rate: number; batches: number }> {
  const table = `bench_actions_${process.pid}_${type}`;
  await source.query(`DROP TABLE IF EXISTS ${table}`, []);
  await source.query(`CREATE TABLE ${table} (topic varchar(64), clientid varchar(32), payload varchar(128), timestamp bigint)`, []);
  try {
    const action = actionSpec(`save_${type}`)!.compile({ source: 's', table, batchSize }) as CompiledAction;
    const ps = Array.from({ length: pipelines }, (_, i) => new ActionPipeline({ ruleId: `bench${i}`, index: 0, action, sources: { get: () => source }, log, queueLimit: N }));
    const outputs = Array.from({ length: N }, (_, i) => output(i));
    const t0 = performance.now();
    const share = Math.ceil(N / pipelines);
    ps.forEach((p, i) => {
      const mine = outputs.slice(i * share, (i + 1) * share);
      for (let k = 0; k < mine.length; k += 100) p.push(mine.slice(k, k + 100)); // as a rule engine would, in small pushes
    });
    await new Promise<void>((resolve, reject) => {
      const poll = setInterval(() => {
        const done = ps.reduce((n, p) => n + p.stats().success, 0);
        const bad = ps.reduce((n, p) => n + p.stats().failed + p.stats().dropped, 0);
        if (bad > 0) {
          clearInterval(poll);
          reject(new Error(`lost outputs: ${JSON.stringify(ps.map((p) => p.stats()))}`));
        } else if (done === N) {
          clearInterval(poll);
          resolve();
        }
      }, 2);
    });
    const rate = N / ((performance.now() - t0) / 1000);
    const [{ n }] = await source.query(`SELECT count(*) AS n FROM ${table}`, []);
    if (Number(n) !== N) throw new Error(`expected ${N} rows, found ${n}`);
    const batches = ps.reduce((b, p) => b + p.stats().batches, 0);
    await Promise.all(ps.map((p) => p.close(100)));
    return { rate, batches };
  } finally {
    await source.query(`DROP TABLE IF EXISTS ${table}`, []);
  }
}

const rows: Row[] = [];
for (const type of ['postgresql', 'mysql'] as const) {
  const source = type === 'postgresql'
    ? createPostgresqlSource('s', parsePostgresqlConfig({ url: PG_URL }), log)
    : createMysqlSource('s', parseMysqlConfig({ url: MYSQL_URL }), log);
  try {
    for (const [pipelines, batchSize] of [[1, 100], [1, 500], [1, 2000], [4, 500]] as const) {
      const results = [];
      for (let r = 0; r < ROUNDS; r++) results.push(await run(type, source, pipelines, batchSize));
      results.sort((a, b) => a.rate - b.rate);
      const best = results[results.length - 1];
      rows.push({
        action: `save_${type}`,
        pipelines,
        batchSize,
        rows: N,
        'rows/s (median)': Math.round(results[Math.floor(results.length / 2)].rate),
        'rows/s (best)': Math.round(best.rate),
        batches: best.batches,
      });
    }
  } finally {
    await source.close();
  }
}

writeResults('actions-sql', 'save_postgresql / save_mysql: rows written per second at saturation', rows, [
  `${ROUNDS} rounds per row; ${N.toLocaleString('en-US')} outputs pushed at once (in pushes of 100), timed until the last batch was written and counted back with SELECT count(*).`,
  'One pipeline writes one batch at a time (one multi-row INSERT per batch, autocommit); 4 pipelines share one source (pool of 8 connections).',
  'Local PostgreSQL 15 and MariaDB on the same 2-core machine as the broker process, default server settings, shared with other work.',
]);
