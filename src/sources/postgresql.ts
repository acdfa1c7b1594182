// Owns the postgresql source (postgres.js pool): its config (sql-config.ts with the postgres:// and
// postgresql:// schemes, port 5432), its connection options, and the mapping of postgres.js
// errors and SQLSTATEs to SourceError. Values are `$n` parameters of the extended protocol.
import postgres from 'postgres';

import type { Logger } from '../log/index.ts';
import { classifyNetworkError } from './classify.ts';
import { tlsOptions } from './config-fields.ts';
import type { SqlConfig } from './sql-config.ts';
import { PooledSqlSource, type SqlDriver } from './sql-source.ts';
import { SourceError, type Row, type SqlSource } from './types.ts';

export { parsePostgresqlConfig } from './sql-config.ts';
export type PostgresqlConfig = SqlConfig;

export function createPostgresqlSource(id: string, config: PostgresqlConfig, log: Logger): SqlSource {
  let sql = postgres(connectionOptions(config, config.poolSize, config.connectTimeout));
  const driver: SqlDriver = {
    dialect: 'postgresql',
    maxParams: 65_533, // postgres.js refuses 65 534 parameters and more
    placeholder: (n) => `$${n}`,
    run(text, params, prepare) {
      const q = sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare });
      const result = q.then((rows) => ({ rows: rows as unknown as Row[], columns: (rows.columns ?? []).map((c) => c.name) }));
      return { result, cancel: () => cancelQuery(q) };
    },
    classify: classifyPostgresqlError,
    async checkOnce(timeoutMs) {
      const one = postgres(connectionOptions(config, 1, timeoutMs));
      try {
        await one`SELECT 1`;
      } finally {
        await one.end({ timeout: 0 });
      }
    },
    reset() {
      const old = sql;
      sql = postgres(connectionOptions(config, config.poolSize, config.connectTimeout));
      void old.end({ timeout: 0 }).catch(() => {});
    },
    end: () => sql.end({ timeout: 5 }),
  };
  return new PooledSqlSource(id, 'postgresql', config, driver, log);
}

/** Cancels a query. A cancel request goes on a new connection, which fails while the server is
 * away; postgres.js's Query.cancel() drops the promise of that attempt (its rejection would be
 * unhandled and end the process), so its canceller is called here and its failure ignored. */
function cancelQuery(q: object): void {
  const query = q as unknown as { canceller?: ((q: unknown) => Promise<void>) | null };
  const canceller = query.canceller;
  if (typeof canceller !== 'function') return;
  query.canceller = null;
  try {
    void Promise.resolve(canceller(q)).catch(() => {});
  } catch {
    // A cancel that cannot even start: the query's own deadline has answered the caller.
  }
}

function connectionOptions(config: PostgresqlConfig, max: number, connectTimeoutMs: number): postgres.Options<{}> {
  return {
    host: config.host,
    port: config.port,
    database: config.database,
    username: config.username,
    password: config.password,
    max,
    connect_timeout: Math.max(1, Math.ceil(connectTimeoutMs / 1000)),
    idle_timeout: 60,
    onnotice: () => {},
    // No catalog query for array types on each new connection: postgres.js 3.4.9 drops its
    // promise, and its failure (the server going away meanwhile) would end the thread
    // (porsager/postgres#1192). Values sent here are never arrays (objects go as JSON text);
    // an array column read by a policy arrives as its text.
    fetch_types: false,
    ssl: config.tls ? tlsOptions(config.tls) : false,
  };
}

const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED']);

export function classifyPostgresqlError(err: unknown): SourceError {
  if (err instanceof SourceError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const text = `postgresql: ${err instanceof Error ? err.message : String(err)}`;
  const network = classifyNetworkError(err);
  if (network) return new SourceError(text, network, network !== 'tls', { cause: err });
  if (typeof code !== 'string') return new SourceError(text, 'other', false, { cause: err });
  if (code === 'CONNECT_TIMEOUT') return new SourceError(text, 'timeout', true, { cause: err });
  // 28000 invalid authorization, 28P01 wrong password.
  if (code.startsWith('28')) return new SourceError(text, 'auth', false, { cause: err });
  // Class 08 connection exception, 57P01-03 shutdown/crash/cannot connect now, and the driver's own.
  if (LOST_CODES.has(code) || code.startsWith('08') || /^57P0[1-3]$/.test(code)) return new SourceError(text, 'protocol', true, { cause: err });
  // 53xxx insufficient resources (53300 too many connections), 40001 serialization, 40P01 deadlock.
  if (code.startsWith('53') || code === '40001' || code === '40P01') return new SourceError(text, 'database', true, { cause: err });
  // 42703 unknown column, 42P01 unknown table, 22001 too long, 42601 syntax, 3D000 unknown database...
  return new SourceError(text, 'database', false, { cause: err });
}
