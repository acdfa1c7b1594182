// Owns verifying (and making) stored password hashes by strategy, with EMQX semantics, for
// database-backed auth: plain, md5, sha1, sha256, sha512 hash salt+password (salt type 'prefix')
// or password+salt ('suffix') or the password alone ('disable') and store a hex digest, compared
// case-insensitively ('plain' stores the salted text itself, compared exactly); bcrypt and argon2
// hashes carry their own salt (the salt type is ignored); pbkdf2 derives `keyLength` bytes from the
// password and the stored salt with `iterations` rounds of HMAC-`digest`, stored as hex.
// Comparisons are constant-time. The CPU-heavy strategies never block the calling thread:
// @node-rs/bcrypt and @node-rs/argon2 `verify`/`hash` run on native thread pools, and pbkdf2 uses
// the async crypto.pbkdf2, which runs on libuv's thread pool. The digests are one pass of a fast hash
// and run inline. A malformed stored hash verifies as false; verifyWithStrategy never rejects.
// At most `hashConcurrency` heavy verifications run at once (the others wait in order): a storm of
// logins must leave cores to the workers that carry the connected clients' traffic.
import { createHash, pbkdf2 as pbkdf2Callback } from 'node:crypto';
import { promisify } from 'node:util';

import { argon2, bcrypt } from '../password.ts';

import { availableParallelism } from 'node:os';

import { constantTimeEqual } from './constant-time.ts';

const pbkdf2 = promisify(pbkdf2Callback);

export const STRATEGIES = ['plain', 'md5', 'sha1', 'sha256', 'sha512', 'bcrypt', 'pbkdf2', 'argon2'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export const SALT_TYPES = ['disable', 'prefix', 'suffix'] as const;
export type SaltType = (typeof SALT_TYPES)[number];

export const PBKDF2_DIGESTS = ['sha1', 'sha256', 'sha512'] as const;
export type Pbkdf2Digest = (typeof PBKDF2_DIGESTS)[number];

export interface Pbkdf2Options {
  iterations: number;
  digest: Pbkdf2Digest;
  /** Derived key length in bytes (EMQX's dk_length). */
  keyLength: number;
}

export interface StrategyOptions {
  strategy: Strategy;
  saltType: SaltType;
  /** Required for the pbkdf2 strategy. */
  pbkdf2?: Pbkdf2Options;
  /** bcrypt work factor used by hashWithStrategy (default 10). */
  bcryptCost?: number;
}

export interface StoredPassword {
  hash: string;
  salt?: string;
}

const DEFAULT_BCRYPT_COST = 10;
const HEX = /^[0-9a-fA-F]*$/;

/** Heavy verifications (bcrypt, argon2, pbkdf2): running, waiting, and how many had to wait. */
export const heavyVerifications = { running: 0, waiting: 0, waited: 0, limit: Math.max(1, Math.floor(availableParallelism() / 2)) };
const queue: (() => void)[] = [];

/** How many heavy verifications may run at once; 0: half the CPUs (at least 1). */
export function setHashConcurrency(n: number): void {
  heavyVerifications.limit = n > 0 ? n : Math.max(1, Math.floor(availableParallelism() / 2));
  while (heavyVerifications.running < heavyVerifications.limit && queue.length > 0) {
    heavyVerifications.running++;
    heavyVerifications.waiting--;
    queue.shift()!();
  }
}

async function heavy<T>(work: () => Promise<T>): Promise<T> {
  const h = heavyVerifications;
  if (h.running >= h.limit) {
    h.waited++;
    h.waiting++;
    await new Promise<void>((resolve) => queue.push(resolve)); // the slot is handed over, already counted
  } else {
    h.running++;
  }
  try {
    return await work();
  } finally {
    const next = queue.shift();
    if (next !== undefined) {
      h.waiting--;
      next();
    } else {
      h.running--;
    }
  }
}

/** True when `password` matches `stored` under `opts`; false for a wrong password or a malformed hash. */
export async function verifyWithStrategy(opts: StrategyOptions, password: Buffer | string, stored: StoredPassword): Promise<boolean> {
  if (opts.strategy === 'bcrypt' || opts.strategy === 'argon2' || opts.strategy === 'pbkdf2') return heavy(() => verifyNow(opts, password, stored));
  return verifyNow(opts, password, stored);
}

async function verifyNow(opts: StrategyOptions, password: Buffer | string, stored: StoredPassword): Promise<boolean> {
  const given = typeof password === 'string' ? Buffer.from(password, 'utf8') : password;
  try {
    switch (opts.strategy) {
      case 'plain':
        return constantTimeEqual(salted(opts.saltType, given, stored.salt), Buffer.from(stored.hash, 'utf8'));
      case 'md5':
      case 'sha1':
      case 'sha256':
      case 'sha512':
        return equalHex(createHash(opts.strategy).update(salted(opts.saltType, given, stored.salt)).digest(), stored.hash);
      case 'pbkdf2': {
        const o = checkedPbkdf2(opts.pbkdf2);
        const derived = await pbkdf2(given, stored.salt ?? '', o.iterations, o.keyLength, o.digest);
        return equalHex(derived, stored.hash);
      }
      case 'bcrypt':
        return await bcrypt().verify(given, stored.hash);
      case 'argon2':
        return await argon2().verify(stored.hash, given);
      default:
        return false;
    }
  } catch {
    // A malformed stored hash (bcrypt/argon2 parse errors) or bad options: no match.
    return false;
  }
}

/** A stored hash of `password` under `opts` with `salt` (digests, plain and pbkdf2); bcrypt and
 * argon2 make their own salt. For tests and for tools that write credentials. */
export async function hashWithStrategy(opts: StrategyOptions, password: Buffer | string, salt = ''): Promise<string> {
  const given = typeof password === 'string' ? Buffer.from(password, 'utf8') : password;
  switch (opts.strategy) {
    case 'plain':
      return salted(opts.saltType, given, salt).toString('utf8');
    case 'md5':
    case 'sha1':
    case 'sha256':
    case 'sha512':
      return createHash(opts.strategy).update(salted(opts.saltType, given, salt)).digest('hex');
    case 'pbkdf2': {
      const o = checkedPbkdf2(opts.pbkdf2);
      return (await pbkdf2(given, salt, o.iterations, o.keyLength, o.digest)).toString('hex');
    }
    case 'bcrypt':
      return bcrypt().hash(given, { cost: opts.bcryptCost ?? DEFAULT_BCRYPT_COST });
    case 'argon2':
      return argon2().hash(given);
    default:
      throw new TypeError(`hashWithStrategy: unknown strategy ${JSON.stringify(opts.strategy)} (one of ${STRATEGIES.join(', ')})`);
  }
}

/** The bytes the digest strategies hash: the salt before or after the password, or no salt. */
function salted(saltType: SaltType, password: Buffer, salt: string | undefined): Buffer {
  if (saltType === 'disable' || !salt) return password;
  const s = Buffer.from(salt, 'utf8');
  if (saltType === 'prefix') return Buffer.concat([s, password]);
  if (saltType === 'suffix') return Buffer.concat([password, s]);
  throw new TypeError(`unknown salt type ${JSON.stringify(saltType)} (one of ${SALT_TYPES.join(', ')})`);
}

/** Compares a digest with a stored hex string, case-insensitively and in constant time. */
function equalHex(digest: Buffer, storedHex: string): boolean {
  const expected = HEX.test(storedHex) && storedHex.length % 2 === 0 ? Buffer.from(storedHex, 'hex') : Buffer.alloc(0);
  return constantTimeEqual(digest, expected) && expected.length > 0;
}

function checkedPbkdf2(o: Pbkdf2Options | undefined): Pbkdf2Options {
  if (!o) throw new TypeError('the pbkdf2 strategy needs pbkdf2 options {iterations, digest, keyLength}');
  if (!Number.isInteger(o.iterations) || o.iterations < 1) throw new TypeError('pbkdf2.iterations must be a positive integer');
  if (!Number.isInteger(o.keyLength) || o.keyLength < 1) throw new TypeError('pbkdf2.keyLength must be a positive integer');
  if (!PBKDF2_DIGESTS.includes(o.digest)) throw new TypeError(`pbkdf2.digest must be one of ${PBKDF2_DIGESTS.join(', ')}`);
  return o;
}
