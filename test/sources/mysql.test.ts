// The mysql source against the real MariaDB (scripts/ensure-databases.sh): its config, and the SQL
// source behaviour every SQL driver shares (sql-suite.ts).
// needs: mariadb
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createMysqlSource, parseMysqlConfig } from '../../src/sources/mysql.ts';
import { SourceConfigError } from '../../src/sources/types.ts';
import { MYSQL_URL } from '../store/databases.ts';
import { sqlSourceSuite } from './sql-suite.ts';

test('mysql config: a url is split into fields, defaults filled in', () => {
  assert.deepEqual(parseMysqlConfig({ url: 'mysql://u:p%40ss@db.example:3307/app' }), {
    host: 'db.example', port: 3307, database: 'app', username: 'u', password: 'p@ss',
    tls: null, poolSize: 8, connectTimeout: 5000, requestTimeout: 10000,
  });
  const c = parseMysqlConfig({ host: 'h', database: 'd', username: 'u', tls: { rejectUnauthorized: false }, poolSize: 3 });
  assert.equal(c.port, 3306);
  assert.deepEqual(c.tls, { rejectUnauthorized: false });
  assert.equal(c.poolSize, 3);
});

test('mysql config: mistakes name their field', () => {
  const cases: [unknown, string][] = [
    [null, 'config'],
    [{ url: 'postgres://h/d' }, 'config.url'],
    [{ url: 'not a url' }, 'config.url'],
    [{ database: 'd' }, 'config.host'],
    [{ host: 'h' }, 'config.database'],
    [{ url: 'mysql://h/d', poolSize: 0 }, 'config.poolSize'],
    [{ url: 'mysql://h/d', poolSize: 101 }, 'config.poolSize'],
    [{ url: 'mysql://h/d', port: 70000 }, 'config.port'],
    [{ url: 'mysql://h/d', tls: 'yes' }, 'config.tls'],
    [{ url: 'mysql://h/d', tls: { ca: 5 } }, 'config.tls.ca'],
    [{ url: 'mysql://h/d', connectTimeout: 1.5 }, 'config.connectTimeout'],
    [{ url: 'mysql://h/d', password: 5 }, 'config.password'],
  ];
  for (const [raw, field] of cases) {
    assert.throws(() => parseMysqlConfig(raw), (err: unknown) => err instanceof SourceConfigError && err.field === field, `${JSON.stringify(raw)} -> ${field}`);
  }
});

sqlSourceSuite({
  name: 'mysql',
  url: MYSQL_URL,
  parse: parseMysqlConfig,
  create: createMysqlSource,
  sleep: (s) => `SELECT SLEEP(${s})`,
  mark: () => '?',
});
