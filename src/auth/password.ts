// Owns password hashes: recognising an argon2 or bcrypt hash, checking that it can be verified,
// hashing a new password and verifying one. Hashing and verifying run on the libuv thread pool
// (@node-rs/argon2, @node-rs/bcrypt), off the event loop.
import { lazyRequire } from '../lazy/lazy-require.ts';

// Loaded on first use (both are native addons, ~50 ms of a start that has no password to check).
export const argon2 = lazyRequire<typeof import('@node-rs/argon2')>('@node-rs/argon2');
export const bcrypt = lazyRequire<typeof import('@node-rs/bcrypt')>('@node-rs/bcrypt');

export type PasswordAlgorithm = 'argon2' | 'bcrypt';
export const PASSWORD_ALGORITHMS: readonly PasswordAlgorithm[] = ['argon2', 'bcrypt'];

/** bcrypt work factor used by hashPassword() unless told otherwise. */
export const DEFAULT_BCRYPT_COST = 12;

/** The algorithm a stored hash was made with, from its prefix; undefined when neither. */
export function hashAlgorithmOf(hash: string): PasswordAlgorithm | undefined {
  if (hash.startsWith('$argon2')) return 'argon2';
  if (hash.startsWith('$2a$') || hash.startsWith('$2b$') || hash.startsWith('$2y$')) return 'bcrypt';
  return undefined;
}

/** Why `hash` is not a usable argon2 or bcrypt hash, or undefined when it is. */
export function passwordHashProblem(hash: string): string | undefined {
  const algorithm = hashAlgorithmOf(hash);
  if (algorithm === undefined) {
    return 'must be an argon2 ($argon2...) or bcrypt ($2a$/$2b$/$2y$) hash, not a plain password (make one with spindle hash-password)';
  }
  const parse = algorithm === 'argon2' ? argon2().parseOptions : bcrypt().parseOptions;
  try {
    parse(hash);
  } catch (err) {
    return `is a malformed ${algorithm} hash (${(err as Error).message})`;
  }
  return undefined;
}

/** A new hash of `plain` for the configuration file. */
export async function hashPassword(plain: string | Uint8Array, algorithm: PasswordAlgorithm = 'argon2', bcryptCost = DEFAULT_BCRYPT_COST): Promise<string> {
  if (algorithm === 'argon2') return argon2().hash(plain);
  if (algorithm === 'bcrypt') return bcrypt().hash(plain, { cost: bcryptCost });
  throw new TypeError(`hashPassword: algorithm must be 'argon2' or 'bcrypt' (got ${JSON.stringify(algorithm)})`);
}

/** True when `password` matches the stored `hash`; rejects when the hash is unusable. */
export async function verifyPassword(hash: string, password: Uint8Array | string): Promise<boolean> {
  const algorithm = hashAlgorithmOf(hash);
  if (algorithm === 'argon2') return argon2().verify(hash, password);
  if (algorithm === 'bcrypt') return bcrypt().verify(password, hash);
  throw new TypeError('verifyPassword: the stored hash is neither argon2 nor bcrypt');
}
