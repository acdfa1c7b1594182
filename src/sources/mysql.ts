// Owns the mysql source (MySQL and MariaDB through mysql2's pool): its config (sql-config.ts with
// the mysql:// and mariadb:// schemes, port 3306), its connection options, and the mapping of
// mysql2 errors to SourceError. Values are sent as `?` parameters that mysql2 escapes; objects
// that are not Buffers or Dates are sent as JSON text (mysql2 would otherwise expand them).
import mysql from 'mysql2/promise';

import type { Logger } from '../log/index.ts';
import { classifyNetworkError } from './classify.ts';
import { tlsOptions } from './config-fields.ts';
import type { SqlConfig } from './sql-config.ts';
import { PooledSqlSource, type SqlDriver } from './sql-source.ts';
import { SourceError, type Row, type SqlSource } from './types.ts';

export { parseMysqlConfig } from './sql-config.ts';
export type MysqlConfig = SqlConfig;

export function createMysqlSource(id: string, config: MysqlConfig, log: Logger): SqlSource {
  const options = connectionOptions(config);
  const newPool = () => {
    const p = mysql.createPool({
      ...options,
      connectionLimit: config.poolSize,
      maxIdle: config.poolSize,
      idleTimeout: 60_000,
      waitForConnections: true,
      queueLimit: 0, // bounded in time instead: every operation has its deadline
      enableKeepAlive: true,
    });
    // An idle connection the server closes reports it here; mysql2 drops it from the pool, and
    // without a listener the error would crash the process.
    p.pool.on('connection', (conn: { on(event: 'error', listener: (err: unknown) => void): unknown }) => {
      conn.on('error', (err) => log.debug('mysql connection error', { source: id, error: (err as Error).message }));
    });
    return p;
  };
  let pool = newPool();
  const driver: SqlDriver = {
    dialect: 'mysql',
    maxParams: 65_535,
    placeholder: () => '?',
    run(sql, params) {
      const result = pool.query({ sql, timeout: config.requestTimeout }, params.map(toMysqlValue)).then(([rows, fields]) => ({
        rows: Array.isArray(rows) ? (rows as Row[]) : [],
        columns: Array.isArray(fields) ? fields.map((f) => f.name) : [],
      }));
      return { result, cancel() {} }; // mysql2 ends the statement itself at `timeout`
    },
    classify: classifyMysqlError,
    async checkOnce(timeoutMs) {
      const conn = await mysql.createConnection({ ...options, connectTimeout: timeoutMs });
      conn.on('error', () => {});
      try {
        await conn.query('SELECT 1');
      } finally {
        conn.destroy();
      }
    },
    reset() {
      const old = pool;
      pool = newPool();
      old.end().catch(() => {});
    },
    end: () => pool.end(),
  };
  return new PooledSqlSource(id, 'mysql', config, driver, log);
}

function connectionOptions(config: MysqlConfig): mysql.ConnectionOptions {
  return {
    host: config.host,
    port: config.port,
    user: config.username,
    password: config.password,
    database: config.database,
    connectTimeout: config.connectTimeout,
    charset: 'UTF8MB4_UNICODE_CI',
    supportBigNumbers: true,
    bigNumberStrings: true,
    multipleStatements: false,
    ...(config.tls ? { ssl: tlsOptions(config.tls) } : {}),
  };
}

function toMysqlValue(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array) && !(v instanceof Date)) return JSON.stringify(v);
  return v;
}

/** Connection lost, killed, or a protocol timeout: the server or the link went away. */
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_SERVER_SHUTDOWN', 'ER_CONNECTION_KILLED', 'POOL_CLOSED']);
/** 1053 shutdown, 1927 killed (MariaDB), 2006/2013 gone/lost, 4031 idle disconnect (MySQL 8). */
const LOST_ERRNOS = new Set([1053, 1927, 2006, 2013, 4031]);
/** 1040 too many connections, 1205 lock wait timeout, 1213 deadlock: the server is busy. */
const BUSY_ERRNOS = new Set([1040, 1205, 1213]);
/** 1044/1045 access denied, 1698 no password plugin (auth socket). */
const AUTH_ERRNOS = new Set([1044, 1045, 1698]);

export function classifyMysqlError(err: unknown): SourceError {
  if (err instanceof SourceError) return err;
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; fatal?: unknown };
  const text = `mysql: ${err instanceof Error ? err.message : String(err)}`;
  const network = classifyNetworkError(err);
  if (network) return new SourceError(text, network, network !== 'tls', { cause: err });
  if (typeof e.errno === 'number' && AUTH_ERRNOS.has(e.errno)) return new SourceError(text, 'auth', false, { cause: err });
  if (typeof e.errno === 'number' && BUSY_ERRNOS.has(e.errno)) return new SourceError(text, 'database', true, { cause: err });
  if ((typeof e.code === 'string' && LOST_CODES.has(e.code)) || (typeof e.errno === 'number' && LOST_ERRNOS.has(e.errno)) || e.fatal === true) {
    return new SourceError(text, 'protocol', true, { cause: err });
  }
  // Unknown column/table, data too long, syntax, constraint: the data was refused.
  return new SourceError(text, 'database', false, { cause: err });
}
