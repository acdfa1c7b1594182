// Owns the key material of a `jwt` policy and the algorithms each kind of key verifies: an HMAC
// secret (HS256/384/512), a PEM public key or certificate (the algorithms of its type: RSA -> RS*
// and PS*, RSA-PSS -> PS*, EC -> the ES* of its curve, Ed25519 -> EdDSA/Ed25519), or a JWKS url
// (every public-key algorithm). A key that cannot be read is a PolicyConfigError naming its field,
// found when the config is parsed, never when a client connects.
//
// The public key is read with node:crypto rather than jose's importSPKI/importX509: those bind a
// key to one algorithm, while one KeyObject serves every algorithm of its type (jose accepts it),
// and node:crypto tells the key's type, curve and size, from which the default algorithms follow.
import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';

import { PolicyConfigError } from './types.ts';

export const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
const RSA_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
const PSS_ALGORITHMS = ['PS256', 'PS384', 'PS512'] as const;
const EDDSA_ALGORITHMS = ['EdDSA', 'Ed25519'] as const;
const EC_ALGORITHM: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };
export const PUBLIC_KEY_ALGORITHMS: readonly string[] = [...RSA_ALGORITHMS, 'ES256', 'ES384', 'ES512', ...EDDSA_ALGORITHMS];

/** jose refuses RSA keys below this for RS* and PS*. */
const MIN_RSA_BITS = 2048;

export type VerificationKey =
  | { kind: 'secret'; key: Uint8Array; algorithms: string[] }
  | { kind: 'publicKey'; key: KeyObject; algorithms: string[] }
  | { kind: 'jwks'; url: URL; algorithms: string[]; cacheMaxAgeMs: number; cooldownMs: number };

/** The bytes of an HMAC secret: its UTF-8 text, or its base64 (or base64url) decoding. */
export function secretBytes(secret: string, base64: boolean): Uint8Array {
  if (!base64) return new Uint8Array(Buffer.from(secret, 'utf8'));
  const bare = secret.replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/_-]+$/.test(bare) || bare.length % 4 === 1) {
    throw new PolicyConfigError('config.secret', 'is not base64 (secretBase64Encoded is true)');
  }
  return new Uint8Array(Buffer.from(bare, 'base64'));
}

/** The key of a PEM public key or X.509 certificate, and the algorithms it can verify. */
export function publicKeyOf(pem: string): { key: KeyObject; algorithms: readonly string[] } {
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw new PolicyConfigError('config.publicKey', 'is a private key: give the public key (or a certificate) instead');
  }
  let key: KeyObject;
  try {
    key = pem.includes('-----BEGIN CERTIFICATE-----') ? new X509Certificate(pem).publicKey : createPublicKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new PolicyConfigError('config.publicKey', `is not a PEM public key or certificate (${err instanceof Error ? err.message : String(err)})`);
  }
  return { key, algorithms: algorithmsOfKey(key) };
}

function algorithmsOfKey(key: KeyObject): readonly string[] {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
    case 'rsa-pss':
      if ((details.modulusLength ?? 0) < MIN_RSA_BITS) {
        throw new PolicyConfigError('config.publicKey', `is a ${details.modulusLength}-bit RSA key: at least ${MIN_RSA_BITS} bits are needed`);
      }
      return key.asymmetricKeyType === 'rsa' ? RSA_ALGORITHMS : PSS_ALGORITHMS;
    case 'ec': {
      const alg = EC_ALGORITHM[details.namedCurve ?? ''];
      if (alg === undefined) throw new PolicyConfigError('config.publicKey', `is an EC key on curve ${details.namedCurve}: P-256, P-384 or P-521 are supported`);
      return [alg];
    }
    case 'ed25519':
      return EDDSA_ALGORITHMS;
    default:
      throw new PolicyConfigError('config.publicKey', `is a ${key.asymmetricKeyType} key: RSA, EC (P-256, P-384, P-521) or Ed25519 are supported`);
  }
}

/** `given` (absent: every algorithm of the key) checked against what the key can verify. */
export function algorithmsField(given: unknown, usable: readonly string[], keyText: string): string[] {
  if (given === undefined || given === null) return [...usable];
  if (!Array.isArray(given) || given.length === 0) throw new PolicyConfigError('config.algorithms', 'must be a non-empty list of algorithm names');
  for (const alg of given) {
    if (typeof alg !== 'string' || !usable.includes(alg)) {
      throw new PolicyConfigError('config.algorithms', `${JSON.stringify(alg)} cannot be verified with ${keyText} (use ${usable.join(', ')})`);
    }
  }
  return [...new Set(given as string[])];
}
