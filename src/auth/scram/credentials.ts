// Owns SCRAM credentials (RFC 5802 section 3, RFC 7677): the two mechanisms the broker offers,
// the salted keys kept per mechanism (salt, iteration count, StoredKey, ServerKey; never the
// password), their text form (RFC 5803: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`,
// base64), and deriving them from a password. PBKDF2 runs on the libuv pool (crypto.pbkdf2),
// off the event loop; it is needed only when credentials are made, never per sign-in.
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';

import { normalizePassword } from './saslprep.ts';

export const SCRAM_MECHANISMS = {
  'SCRAM-SHA-256': { hash: 'sha256', keyLength: 32 },
  'SCRAM-SHA-512': { hash: 'sha512', keyLength: 64 },
} as const;
export type ScramMechanism = keyof typeof SCRAM_MECHANISMS;
export const SCRAM_MECHANISM_NAMES = Object.keys(SCRAM_MECHANISMS) as ScramMechanism[];

/** RFC 7677 section 4: an iteration count of at least 4096. The upper bound keeps a client's
 * PBKDF2 within reason (the client computes it at every sign-in). */
export const MIN_ITERATIONS = 4096;
export const MAX_ITERATIONS = 10_000_000;
/** Bytes of salt made for new credentials. */
export const SALT_BYTES = 16;
/** Salts longer than this are refused (imported credentials, a database row). */
export const MAX_SALT_BYTES = 1024;

export interface ScramCredentials {
  readonly mechanism: ScramMechanism;
  readonly iterations: number;
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

export function isScramMechanism(name: string): name is ScramMechanism {
  return Object.hasOwn(SCRAM_MECHANISMS, name);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The bytes of strict base64 text (padding required, no whitespace), or undefined. */
export function strictBase64(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

/** Why `iterations`, `salt` and the keys cannot be credentials of `mechanism`, or undefined. */
export function credentialsProblem(mechanism: ScramMechanism, iterations: number, salt: Buffer, storedKey: Buffer, serverKey: Buffer): string | undefined {
  if (!Number.isSafeInteger(iterations) || iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) return `the iteration count must be an integer ${MIN_ITERATIONS}..${MAX_ITERATIONS} (RFC 7677: at least 4096), not ${iterations}`;
  if (salt.length === 0 || salt.length > MAX_SALT_BYTES) return `the salt must be 1..${MAX_SALT_BYTES} bytes`;
  const n = SCRAM_MECHANISMS[mechanism].keyLength;
  if (storedKey.length !== n || serverKey.length !== n) return `StoredKey and ServerKey of ${mechanism} are ${n} bytes each`;
  return undefined;
}

/** Credentials from their RFC 5803 text, or a string saying what is wrong with it. */
export function parseScramCredentials(text: string): ScramCredentials | string {
  const m = /^(SCRAM-SHA-(?:256|512))\$(\d{1,9}):([^$:]+)\$([^$:]+):([^$:]+)$/.exec(text);
  if (m === null) return 'must be SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (or SCRAM-SHA-512$...), base64 (RFC 5803)';
  const mechanism = m[1] as ScramMechanism;
  const iterations = Number(m[2]);
  const salt = strictBase64(m[3]);
  const storedKey = strictBase64(m[4]);
  const serverKey = strictBase64(m[5]);
  if (salt === undefined || storedKey === undefined || serverKey === undefined) return 'salt, StoredKey and ServerKey must be base64';
  const problem = credentialsProblem(mechanism, iterations, salt, storedKey, serverKey);
  return problem ?? { mechanism, iterations, salt, storedKey, serverKey };
}

export function formatScramCredentials(c: ScramCredentials): string {
  return `${c.mechanism}$${c.iterations}:${c.salt.toString('base64')}$${c.storedKey.toString('base64')}:${c.serverKey.toString('base64')}`;
}

/** The mechanism of an RFC 5803 text, read from its prefix (no check of the rest). */
export function mechanismOf(text: string): ScramMechanism | undefined {
  const name = text.slice(0, text.indexOf('$'));
  return isScramMechanism(name) ? name : undefined;
}

/** New credentials for `password` (SASLprep'd first, RFC 5802 Normalize), with a random salt. */
export async function deriveScramCredentials(password: string, mechanism: ScramMechanism, iterations: number, salt: Buffer = randomBytes(SALT_BYTES)): Promise<ScramCredentials> {
  const { hash, keyLength } = SCRAM_MECHANISMS[mechanism];
  // SaltedPassword := Hi(Normalize(password), salt, i): PBKDF2 with HMAC-H, one block.
  const salted = await new Promise<Buffer>((resolve, reject) => {
    pbkdf2(normalizePassword(password), salt, iterations, keyLength, hash, (err, key) => (err ? reject(err) : resolve(key)));
  });
  const clientKey = createHmac(hash, salted).update('Client Key').digest();
  return {
    mechanism,
    iterations,
    salt,
    storedKey: createHash(hash).update(clientKey).digest(),
    serverKey: createHmac(hash, salted).update('Server Key').digest(),
  };
}
