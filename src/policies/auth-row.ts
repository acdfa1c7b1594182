// Owns reading the row (document, hash) a database auth policy found for a client: the stored
// hash from `password_hash` (else `password`), the optional `salt`, and `is_superuser`, true for
// 1, true, '1', 'true', 't', 'on', 'yes' (any case) and a BIT(1) set, false for anything else. Binary columns
// (mysql BINARY/BLOB) are read as UTF-8 text, since hashes are stored as text (hex, bcrypt, PHC).
import type { StoredPassword } from '../auth/strategies/password-strategy.ts';
import { SCRAM_MECHANISMS, credentialsProblem, parseScramCredentials, strictBase64, type ScramCredentials, type ScramMechanism } from '../auth/scram/credentials.ts';
import type { Row } from '../sources/types.ts';

const TRUE_TEXT = new Set(['1', 'true', 't', 'on', 'yes']);

/** The stored password of `row`, or a string saying which column is missing. */
export function storedPasswordOf(row: Row): StoredPassword | string {
  const hash = text(row.password_hash) ?? text(row.password);
  if (hash === undefined) return 'the row has no password_hash (or password) column, or it is null';
  const salt = text(row.salt);
  return salt === undefined ? { hash } : { hash, salt };
}

/** The column of a mechanism's credentials in RFC 5803 form. */
export const SCRAM_COLUMNS: Record<ScramMechanism, string> = { 'SCRAM-SHA-256': 'scram_sha_256', 'SCRAM-SHA-512': 'scram_sha_512' };

/**
 * The SCRAM credentials of `mechanism` in `row`: the RFC 5803 text of its column (scram_sha_256,
 * scram_sha_512), else the columns salt, iterations, stored_key and server_key, whose key length
 * tells the mechanism (32 bytes: SHA-256, 64: SHA-512). Binary columns (bytea, VARBINARY) hold
 * the bytes; text columns base64. Undefined: the row has none of this mechanism; a string: what
 * is wrong with them.
 */
export function scramCredentialsOf(row: Row, mechanism: ScramMechanism): ScramCredentials | string | undefined {
  const column = SCRAM_COLUMNS[mechanism];
  const rfc5803 = text(row[column]);
  if (rfc5803 !== undefined) {
    const parsed = parseScramCredentials(rfc5803);
    if (typeof parsed === 'string') return `${column} ${parsed}`;
    return parsed.mechanism === mechanism ? parsed : `${column} holds ${parsed.mechanism} credentials`;
  }
  if (row.stored_key == null && row.server_key == null) return undefined;
  const keyLength = SCRAM_MECHANISMS[mechanism].keyLength;
  const storedKey = bytes(row.stored_key, keyLength);
  const serverKey = bytes(row.server_key, keyLength);
  const salt = bytes(row.salt, -1);
  const iterations = integer(row.iterations);
  if (storedKey === undefined || serverKey === undefined || salt === undefined || iterations === undefined) {
    return 'a row with SCRAM columns needs stored_key, server_key and salt (bytes, or base64 text) and iterations (an integer)';
  }
  // Keys of the other mechanism: none of this one.
  if (storedKey.length !== keyLength && serverKey.length !== keyLength) return undefined;
  return credentialsProblem(mechanism, iterations, salt, storedKey, serverKey) ?? { mechanism, iterations, salt, storedKey, serverKey };
}

/** Whether the row carries SCRAM credentials of either mechanism. */
export function hasScramColumns(row: Row): boolean {
  return row.scram_sha_256 != null || row.scram_sha_512 != null || row.stored_key != null;
}

/** A binary column as it is, or base64 text decoded; a binary value of `rawLength` bytes is
 * taken as raw bytes even when stored in a text-like binary column (MySQL BLOB). */
function bytes(v: unknown, rawLength: number): Buffer | undefined {
  if (v instanceof Uint8Array) {
    const b = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    if (b.length === rawLength || rawLength < 0) return b;
    return strictBase64(b.toString('latin1')) ?? b;
  }
  return typeof v === 'string' ? strictBase64(v.trim()) : undefined;
}

function integer(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : typeof v === 'string' && /^\d{1,10}$/.test(v.trim()) ? Number(v.trim()) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
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
