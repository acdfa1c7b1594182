// Owns reading the row (document, hash) a database auth policy found for a client: the stored
// hash from `password_hash` (else `password`), the optional `salt`, and `is_superuser`, true for
// 1, true, '1', 'true', 't', 'on', 'yes' (any case) and a BIT(1) set, false for anything else. Binary columns
// (mysql BINARY/BLOB) are read as UTF-8 text, since hashes are stored as text (hex, bcrypt, PHC).
import type { StoredPassword } from '../auth/strategies/password-strategy.ts';
import type { Row } from '../sources/types.ts';

const TRUE_TEXT = new Set(['1', 'true', 't', 'on', 'yes']);

/** The stored password of `row`, or a string saying which column is missing. */
export function storedPasswordOf(row: Row): StoredPassword | string {
  const hash = text(row.password_hash) ?? text(row.password);
  if (hash === undefined) return 'the row has no password_hash (or password) column, or it is null';
  const salt = text(row.salt);
  return salt === undefined ? { hash } : { hash, salt };
}

export function isSuperuser(row: Row): boolean {
  const v = row.is_superuser;
  if (v === true) return true;
  if (typeof v === 'number' || typeof v === 'bigint') return Number(v) === 1;
  if (Buffer.isBuffer(v) && v.length === 1 && v[0] === 1) return true; // mysql BIT(1)
  const t = text(v);
  return t !== undefined && TRUE_TEXT.has(t.trim().toLowerCase());
}

function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return undefined;
}
