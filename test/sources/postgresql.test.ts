// The postgresql source against the real PostgreSQL (scripts/ensure-databases.sh): its config, and
// the SQL source behaviour every SQL driver shares (sql-suite.ts).
// needs: postgresql
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createPostgresqlSource, parsePostgresqlConfig } from '../../src/sources/postgresql.ts';
import { SourceConfigError } from '../../src/sources/types.ts';
import { PG_URL } from '../store/databases.ts';
import { sqlSourceSuite } from './sql-suite.ts';

test('postgresql config: a url is split into fields, explicit fields win', () => {
  const c = parsePostgresqlConfig({ url: 'postgresql://u:p@h/app', port: 6543, password: 'other', tls: true, requestTimeout: 2000 });
  assert.deepEqual(c, { host: 'h', port: 6543, database: 'app', username: 'u', password: 'other', tls: { rejectUnauthorized: true }, poolSize: 8, connectTimeout: 5000, requestTimeout: 2000 });
  assert.throws(() => parsePostgresqlConfig({ url: 'mysql://h/d' }), (err: unknown) => err instanceof SourceConfigError && err.field === 'config.url');
  assert.throws(() => parsePostgresqlConfig({ url: 'postgres://h/d', requestTimeout: 'x' }), (err: unknown) => err instanceof SourceConfigError && err.field === 'config.requestTimeout');
});

sqlSourceSuite({
  name: 'postgresql',
  url: PG_URL,
  parse: parsePostgresqlConfig,
  create: createPostgresqlSource,
  sleep: (s) => `SELECT pg_sleep(${s})`,
  mark: (n) => `$${n}`,
});
