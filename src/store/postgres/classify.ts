// Maps postgres.js errors to StoreError: connection-level failures are STORE_UNAVAILABLE (the
// server is gone or restarting), everything else STORE_IO; the driver error is kept as `cause`.
import { StoreError } from '../errors.ts';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH',
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
]);

export function classifyPostgres(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const text = err instanceof Error ? err.message : String(err);
  // SQLSTATE class 08 (connection exception) and 57P01-57P03 (admin shutdown, crash, cannot connect now).
  const unavailable = typeof code === 'string' && (CONNECTION_CODES.has(code) || code.startsWith('08') || /^57P0[1-3]$/.test(code));
  return new StoreError(unavailable ? 'STORE_UNAVAILABLE' : 'STORE_IO', `postgresql: ${text}`, { cause: err });
}
