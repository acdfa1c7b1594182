// Maps mysql2 errors to StoreError: connection-level failures are STORE_UNAVAILABLE (the server is
// gone, restarting, or killed our connection), everything else STORE_IO; the driver error is kept
// as `cause`.
import { StoreError } from '../errors.ts';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH',
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_SERVER_SHUTDOWN', 'ER_CONNECTION_KILLED',
  'ER_CON_COUNT_ERROR', 'ER_SERVER_GONE_ERROR', 'CR_SERVER_GONE_ERROR', 'CR_SERVER_LOST',
]);
/** 1040 too many connections, 1053 server shutdown, 1927 connection killed (MariaDB), 2006/2013 gone/lost, 4031 idle disconnect (MySQL 8). */
const CONNECTION_ERRNOS = new Set([1040, 1053, 1927, 2002, 2003, 2006, 2013, 4031]);

export function classifyMysql(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; fatal?: unknown };
  const text = err instanceof Error ? err.message : String(err);
  // mysql2 marks every error after which the connection is unusable as fatal.
  const unavailable =
    e.fatal === true ||
    (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) ||
    (typeof e.errno === 'number' && CONNECTION_ERRNOS.has(e.errno));
  return new StoreError(unavailable ? 'STORE_UNAVAILABLE' : 'STORE_IO', `mysql: ${text}`, { cause: err });
}
