// The admin API's bearer tokens: HS256 JWTs signed and verified with `jose`. A token names the
// user record by its immutable id (`sub`) and carries the record's credential version (`ver`);
// auth.ts refuses a token whose user is gone or whose version has moved on. HS256 only: a token
// with any other `alg` (none, RS256, ...) is refused before its signature is looked at.
import { lazyImport } from '../lazy/lazy-import.ts';

const ALG = 'HS256';
// Loaded at the first sign-in or token (~60 ms of a start that has none yet).
const loadJose = lazyImport('jose', () => import('jose'));

export interface TokenClaims {
  /** The user record's id (never the username: a re-created user is another record). */
  sub: string;
  /** The user's credential version when the token was issued. */
  ver: number;
  iat: number;
  exp: number;
}

/** A signed token for `claims.sub` and `claims.ver`, valid from `iat` to `exp` (seconds). */
export async function signToken(claims: TokenClaims, secret: Uint8Array): Promise<string> {
  const { SignJWT } = await loadJose();
  return new SignJWT({ ver: claims.ver })
    .setProtectedHeader({ alg: ALG, typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt(claims.iat)
    .setExpirationTime(claims.exp)
    .sign(secret);
}

/** The claims of a well-signed, unexpired HS256 token; null for anything else. */
export async function verifyToken(token: string, secret: Uint8Array, now = Date.now()): Promise<TokenClaims | null> {
  const { errors, jwtVerify } = await loadJose();
  try {
    const { payload } = await jwtVerify(token, secret, { algorithms: [ALG], currentDate: new Date(now), requiredClaims: ['sub', 'exp', 'iat'] });
    if (typeof payload.sub !== 'string' || typeof payload.ver !== 'number' || !Number.isInteger(payload.ver)) return null;
    return { sub: payload.sub, ver: payload.ver, iat: payload.iat!, exp: payload.exp! };
  } catch (err) {
    // jose throws a JOSEError for every refusal (bad signature, expired, wrong alg, malformed):
    // each is a "no". Anything else is a fault, not a refusal.
    if (err instanceof errors.JOSEError) return null;
    throw err;
  }
}
