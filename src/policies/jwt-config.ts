// Owns the config of a `jwt` policy as the admin API receives it: exactly one key (secret, publicKey
// or jwksUrl: jwt-key.ts reads it), the accepted algorithms, where the token is, the claims to
// check and the claims to read. A mistake is a PolicyConfigError naming its field. The normalized
// form (what is stored) has every default written out, except `algorithms`, which stays absent
// when not given so that it follows the key if the key changes; parsing it again gives it back.
import { integerField } from './config-fields.ts';
import { algorithmsField, HMAC_ALGORITHMS, PUBLIC_KEY_ALGORITHMS, publicKeyOf, secretBytes, type VerificationKey } from './jwt-key.ts';
import { paramsOf } from './params.ts';
import { PolicyConfigError, type PolicyParam } from './types.ts';

/** What a verifyClaims template may read (the password is the token itself). */
export const CLAIM_PARAMS: readonly PolicyParam[] = ['username', 'clientid', 'peerhost'];

export type JwtPolicyConfig = {
  secret?: string;
  secretBase64Encoded?: boolean;
  publicKey?: string;
  jwksUrl?: string;
  /** Seconds a fetched key set is used before it is fetched again. */
  jwksRefresh?: number;
  /** Seconds after a fetch during which a token with an unknown key id does not fetch again. */
  jwksCooldown?: number;
  algorithms?: string[];
  /** Where the client puts the token. */
  from: 'password' | 'username';
  /** Claim -> template: the claim must equal the filled value. */
  verifyClaims: Record<string, string>;
  superuserClaim: string;
  aclClaim: string;
  usernameClaim?: string;
  /** Seconds of clock skew allowed when checking exp and nbf. */
  clockTolerance: number;
};

type Raw = Record<string, unknown>;

const KEY_FIELDS = ['secret', 'publicKey', 'jwksUrl'] as const;

export function parseJwtPolicyConfig(raw: unknown): Record<string, unknown> {
  return readJwtPolicyConfig(raw).config;
}

/** The normalized config and the key it names. */
export function readJwtPolicyConfig(input: unknown): { config: JwtPolicyConfig; key: VerificationKey } {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new PolicyConfigError('config', 'must be an object');
  const raw = input as Raw;
  const { fields, key } = keyFields(raw);
  const usernameClaim = optionalName(raw, 'usernameClaim');
  const config: JwtPolicyConfig = {
    ...fields,
    ...(raw.algorithms === undefined || raw.algorithms === null ? {} : { algorithms: key.algorithms }),
    from: fromField(raw.from),
    verifyClaims: verifyClaimsField(raw.verifyClaims),
    superuserClaim: optionalName(raw, 'superuserClaim') ?? 'is_superuser',
    aclClaim: optionalName(raw, 'aclClaim') ?? 'acl',
    ...(usernameClaim === undefined ? {} : { usernameClaim }),
    clockTolerance: integerField(raw.clockTolerance, 'config.clockTolerance', 0, 300, 5),
  };
  return { config, key };
}

function keyFields(raw: Raw): { fields: Partial<JwtPolicyConfig>; key: VerificationKey } {
  const given = KEY_FIELDS.filter((f) => raw[f] !== undefined && raw[f] !== null && raw[f] !== '');
  if (given.length === 0) throw new PolicyConfigError('config', 'give one key: secret (HMAC), publicKey (PEM) or jwksUrl');
  if (given.length > 1) throw new PolicyConfigError(`config.${given[1]}`, `cannot be given with config.${given[0]}: give exactly one key`);
  for (const f of given) if (typeof raw[f] !== 'string') throw new PolicyConfigError(`config.${f}`, 'must be a string');
  const base64 = raw.secretBase64Encoded ?? false;
  if (typeof base64 !== 'boolean') throw new PolicyConfigError('config.secretBase64Encoded', 'must be a boolean');
  const jwksRefresh = integerField(raw.jwksRefresh, 'config.jwksRefresh', 1, 86_400, 300);
  const jwksCooldown = integerField(raw.jwksCooldown, 'config.jwksCooldown', 0, 3600, 30);
  switch (given[0]) {
    case 'secret': {
      const secret = raw.secret as string;
      const algorithms = algorithmsField(raw.algorithms, HMAC_ALGORITHMS, 'a secret');
      return { fields: { secret, secretBase64Encoded: base64 }, key: { kind: 'secret', key: secretBytes(secret, base64), algorithms } };
    }
    case 'publicKey': {
      const publicKey = raw.publicKey as string;
      const { key, algorithms: usable } = publicKeyOf(publicKey);
      return { fields: { publicKey }, key: { kind: 'publicKey', key, algorithms: algorithmsField(raw.algorithms, usable, 'this public key') } };
    }
    default: {
      const jwksUrl = raw.jwksUrl as string;
      const url = jwksUrlField(jwksUrl);
      const algorithms = algorithmsField(raw.algorithms, PUBLIC_KEY_ALGORITHMS, 'a JWKS');
      const key: VerificationKey = { kind: 'jwks', url, algorithms, cacheMaxAgeMs: jwksRefresh * 1000, cooldownMs: jwksCooldown * 1000 };
      return { fields: { jwksUrl, jwksRefresh, jwksCooldown }, key };
    }
  }
}

function jwksUrlField(v: string): URL {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new PolicyConfigError('config.jwksUrl', 'is not a valid url');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new PolicyConfigError('config.jwksUrl', 'scheme must be https or http');
  return url;
}

function fromField(v: unknown): 'password' | 'username' {
  if (v === undefined || v === null) return 'password';
  if (v !== 'password' && v !== 'username') throw new PolicyConfigError('config.from', 'must be "password" or "username"');
  return v;
}

function verifyClaimsField(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new PolicyConfigError('config.verifyClaims', 'must be an object of claim -> template string');
  const out: Record<string, string> = {};
  for (const [claim, template] of Object.entries(v as Raw)) {
    if (claim === '') throw new PolicyConfigError('config.verifyClaims', 'a claim name cannot be empty');
    if (typeof template !== 'string') throw new PolicyConfigError(`config.verifyClaims.${claim}`, 'must be a string (a value or a template such as "${clientid}")');
    paramsOf(template, CLAIM_PARAMS, `config.verifyClaims.${claim}`);
    out[claim] = template;
  }
  return out;
}

function optionalName(raw: Raw, key: string): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw new PolicyConfigError(`config.${key}`, 'must be a non-empty claim name');
  return v;
}
