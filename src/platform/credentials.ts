// An application's MQTT credentials: an app key (the username) and a secret (the password),
// both random. Only the secret's SHA-256 is kept: a 192-bit random secret needs no slow hash, and
// the check stays cheap on every CONNECT. Compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Usernames with this prefix are the platform's: an unknown one is refused, not passed on. */
export const APP_KEY_PREFIX = 'ak_';

export function newAppKey(): string {
  return `${APP_KEY_PREFIX}${randomBytes(12).toString('base64url')}`;
}

export function newSecret(): string {
  return `sk_${randomBytes(24).toString('base64url')}`;
}

export function hashSecret(secret: string | Buffer): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function secretMatches(secret: Buffer | undefined, hash: string): boolean {
  if (secret === undefined) return false;
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
