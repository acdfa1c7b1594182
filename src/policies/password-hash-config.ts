// Owns the `passwordHash` field of a database auth policy: how stored passwords are hashed,
// {strategy (default sha256), saltType (default prefix), iterations, digest, keyLength}, checked
// against the strategies of auth/strategies/password-strategy.ts. pbkdf2 needs iterations and
// digest (keyLength defaults to the digest's size); the other strategies refuse those fields, so
// a misplaced one is seen instead of silently ignored. bcrypt and argon2 keep their own salt: their
// saltType is accepted and unused.
import { PBKDF2_DIGESTS, SALT_TYPES, STRATEGIES, type Pbkdf2Digest, type SaltType, type Strategy, type StrategyOptions } from '../auth/strategies/password-strategy.ts';
import { integerField } from './config-fields.ts';
import { PolicyConfigError } from './types.ts';

export interface PasswordHashConfig {
  strategy: Strategy;
  saltType: SaltType;
  /** pbkdf2 only. */
  iterations?: number;
  digest?: Pbkdf2Digest;
  keyLength?: number;
}

const DIGEST_BYTES: Record<Pbkdf2Digest, number> = { sha1: 20, sha256: 32, sha512: 64 };
const MAX_ITERATIONS = 10_000_000;
const MAX_KEY_LENGTH = 1024;
const FIELDS = new Set(['strategy', 'saltType', 'iterations', 'digest', 'keyLength']);

export function parsePasswordHash(raw: unknown, field = 'config.passwordHash'): PasswordHashConfig {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyConfigError(field, 'must be an object {strategy, saltType, iterations, digest, keyLength}');
  const o = raw as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!FIELDS.has(key)) throw new PolicyConfigError(`${field}.${key}`, `is not a field of passwordHash (${[...FIELDS].join(', ')})`);
  }
  const config: PasswordHashConfig = {
    strategy: oneOf(o.strategy, STRATEGIES, 'sha256', `${field}.strategy`),
    saltType: oneOf(o.saltType, SALT_TYPES, 'prefix', `${field}.saltType`),
  };
  if (config.strategy !== 'pbkdf2') {
    for (const key of ['iterations', 'digest', 'keyLength']) {
      if (o[key] !== undefined) throw new PolicyConfigError(`${field}.${key}`, `is for the pbkdf2 strategy only (strategy is ${config.strategy})`);
    }
    return config;
  }
  if (o.iterations === undefined) throw new PolicyConfigError(`${field}.iterations`, 'is required for pbkdf2');
  if (o.digest === undefined) throw new PolicyConfigError(`${field}.digest`, `is required for pbkdf2 (one of ${PBKDF2_DIGESTS.join(', ')})`);
  config.iterations = integerField(o.iterations, `${field}.iterations`, 1, MAX_ITERATIONS);
  config.digest = oneOf(o.digest, PBKDF2_DIGESTS, 'sha256', `${field}.digest`);
  config.keyLength = o.keyLength === undefined ? DIGEST_BYTES[config.digest] : integerField(o.keyLength, `${field}.keyLength`, 1, MAX_KEY_LENGTH);
  return config;
}

/** What verifyWithStrategy takes. */
export function strategyOptions(c: PasswordHashConfig): StrategyOptions {
  const opts: StrategyOptions = { strategy: c.strategy, saltType: c.saltType };
  if (c.strategy === 'pbkdf2') opts.pbkdf2 = { iterations: c.iterations as number, digest: c.digest as Pbkdf2Digest, keyLength: c.keyLength as number };
  return opts;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T, field: string): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new PolicyConfigError(field, `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}
