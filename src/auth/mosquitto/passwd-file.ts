// Owns Mosquitto password files (what `mosquitto_passwd` writes), so a Mosquitto deployment's file
// works unchanged: one `username:hash` per line, blank lines and lines starting with '#' ignored.
// Hashes: `$7$<iterations>$<base64 salt>$<base64 hash>` is PBKDF2-HMAC-SHA512 of the password with
// the salt (Mosquitto 2.x default, 101 iterations, 64 bytes); `$6$<base64 salt>$<base64 hash>` is
// one SHA-512 of password+salt (Mosquitto 1.6 and earlier). Parsing checks every line and throws a
// MosquittoFileError naming the line number; verifying compares in constant time, and PBKDF2 runs
// on libuv's thread pool (the async crypto.pbkdf2), off the calling thread.
import { createHash, pbkdf2 as pbkdf2Callback } from 'node:crypto';
import { promisify } from 'node:util';

import { constantTimeEqual } from '../strategies/constant-time.ts';
import { MosquittoFileError } from './errors.ts';
import { colonLines } from './colon-lines.ts';

const pbkdf2 = promisify(pbkdf2Callback);

export type MosquittoHash =
  | { kind: 'sha512'; salt: Buffer; hash: Buffer }
  | { kind: 'pbkdf2-sha512'; iterations: number; salt: Buffer; hash: Buffer };

/** The users of a password file: username to hash. */
export type PasswdFile = ReadonlyMap<string, MosquittoHash>;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Mosquitto refuses more; a larger count in a file is a typo or an attempt to burn CPU. */
const MAX_ITERATIONS = 10_000_000;

/** Parses the text of a password file; `source` names it in errors. */
export function parsePasswdFile(text: string, source = 'password file'): PasswdFile {
  const users = new Map<string, MosquittoHash>();
  for (const { name: username, value, at } of colonLines(text, source, 'MOSQUITTO_PASSWD_INVALID', 'username:hash', 'user')) {
    const problem = parseMosquittoHash(value);
    if (typeof problem === 'string') throw new MosquittoFileError('MOSQUITTO_PASSWD_INVALID', `${at}: ${problem}`);
    users.set(username, problem);
  }
  return users;
}

/** The parsed hash (`$7$...` or `$6$...`), or why it cannot be used. */
export function parseMosquittoHash(text: string): MosquittoHash | string {
  const parts = text.split('$');
  if (parts[0] !== '') return 'the password is not hashed (run mosquitto_passwd -U on the file)';
  if (parts[1] === '6' && parts.length === 4) {
    const salt = base64(parts[2]);
    const hash = base64(parts[3]);
    if (!salt || !hash || hash.length !== 64) return 'malformed $6$ (SHA-512) hash';
    return { kind: 'sha512', salt, hash };
  }
  if (parts[1] === '7' && parts.length === 5) {
    const iterations = /^[0-9]{1,9}$/.test(parts[2]) ? Number(parts[2]) : NaN;
    if (!(iterations >= 1 && iterations <= MAX_ITERATIONS)) return `malformed $7$ hash: iterations must be 1..${MAX_ITERATIONS}`;
    const salt = base64(parts[3]);
    const hash = base64(parts[4]);
    if (!salt || !hash) return 'malformed $7$ (PBKDF2-SHA512) hash';
    return { kind: 'pbkdf2-sha512', iterations, salt, hash };
  }
  return 'unknown hash type (expected $6$ or $7$ as written by mosquitto_passwd)';
}

function base64(text: string): Buffer | undefined {
  if (!BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length > 0 ? bytes : undefined;
}

/** True when `password` matches the stored Mosquitto hash. */
export async function verifyMosquittoHash(stored: MosquittoHash, password: Uint8Array | string): Promise<boolean> {
  const given = typeof password === 'string' ? Buffer.from(password, 'utf8') : password;
  if (stored.kind === 'sha512') {
    return constantTimeEqual(createHash('sha512').update(given).update(stored.salt).digest(), stored.hash);
  }
  const derived = await pbkdf2(given, stored.salt, stored.iterations, stored.hash.length, 'sha512');
  return constantTimeEqual(derived, stored.hash);
}
