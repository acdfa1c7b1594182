// Owns the `jwt` auth policy type (main thread), as EMQX's JWT authentication: the token is taken
// from the password (or the username), verified with jose against the configured key (jwt-key.ts;
// a remote JWKS through jose's cached key set), checked against the verifyClaims templates, and
// read: the superuser claim, the username claim and the ACL claim (jwt-acl.ts).
//   no token there (absent, or not three base64url parts) -> ignore (another policy may know it);
//   verification fails (signature, exp/nbf, algorithm, unknown key id, claim mismatch) -> deny;
//   the key set cannot be fetched, or something unexpected -> ignore with error, warned at most
//   once per 10 s with a count. authenticate() never throws and never allows on a failure.
import type { JWTPayload, JWTVerifyGetKey, JWTVerifyOptions, RemoteJWKSet } from 'jose';

type Jose = typeof import('jose');
type JwksKey = Extract<VerificationKey, { kind: 'jwks' }>;

import { lazyImport } from '../lazy/lazy-import.ts';

import { aclOfClaim } from './jwt-acl.ts';
import { CLAIM_PARAMS, readJwtPolicyConfig, type JwtPolicyConfig } from './jwt-config.ts';
import type { VerificationKey } from './jwt-key.ts';
import { fill, paramValue, paramsOf } from './params.ts';
import { superuserOf } from './superuser-flag.ts';
import { RateLimitedWarn } from './rate-limited-warn.ts';
import { PolicyConfigError, type AclGrant, type AuthAnswer, type AuthQuery, type CompiledAuthPolicy, type PolicyContext, type PolicyParam, type PolicyRecord } from './types.ts';

// jose loads with the first token a JWT policy verifies (the admin API's tokens load it too).
const loadJose = lazyImport('jose', () => import('jose'));

export { parseJwtPolicyConfig } from './jwt-config.ts';

/** Three base64url parts; the signature may be empty (then verification refuses it, a deny). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** How long one fetch of the key set may take. */
const JWKS_TIMEOUT_MS = 5000;
/** Key errors that are the token's fault (its kid, its alg), not the key set's. */
const TOKEN_KEY_ERRORS = new Set(['ERR_JWKS_NO_MATCHING_KEY', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS', 'ERR_JOSE_NOT_SUPPORTED']);

type VerifyOptions = JWTVerifyOptions & { algorithms: string[]; clockTolerance: number };
type Checked = { payload: JWTPayload } | AuthAnswer;

/** The key set could not be fetched (or read): the token was not judged. */
class KeySetUnavailable extends Error {
  override name = 'KeySetUnavailable';
}

export function compileJwtAuthPolicy(record: PolicyRecord<'jwt'>, ctx: PolicyContext): CompiledAuthPolicy {
  const { config, key } = readJwtPolicyConfig(record.config);
  return new JwtAuthPolicy(record, config, key, ctx);
}

class JwtAuthPolicy implements CompiledAuthPolicy {
  readonly id: string;
  readonly name: string;
  readonly type = 'jwt' as const;
  readonly params: ReadonlySet<PolicyParam>;
  /** The remote key set (jwks) and its key resolver, made with the first verification or dry run. */
  private remote: RemoteJWKSet | undefined;
  private getKey: JWTVerifyGetKey | undefined;
  private readonly claimParams: Map<string, Set<PolicyParam>>;
  private readonly failureWarning: RateLimitedWarn;
  private readonly aclWarning: RateLimitedWarn;

  constructor(
    record: PolicyRecord<'jwt'>,
    private readonly config: JwtPolicyConfig,
    private readonly verification: VerificationKey,
    ctx: PolicyContext,
  ) {
    this.id = record.id;
    this.name = record.name;
    this.claimParams = new Map(Object.entries(config.verifyClaims).map(([claim, t]) => [claim, paramsOf(t, CLAIM_PARAMS, `config.verifyClaims.${claim}`)]));
    this.params = new Set<PolicyParam>([config.from, ...[...this.claimParams.values()].flatMap((s) => [...s])]);
    const log = ctx.log.child({ policy: record.name, policyId: record.id, type: 'jwt' });
    this.failureWarning = new RateLimitedWarn(log);
    this.aclWarning = new RateLimitedWarn(log);
  }

  async authenticate(q: AuthQuery): Promise<AuthAnswer> {
    try {
      const token = this.tokenOf(q);
      if (token === undefined) return { result: 'ignore', reason: `no JWT in the ${this.config.from}` };
      const checked = await this.verify(token);
      if (!('payload' in checked)) return checked;
      return this.answerOf(checked.payload, q);
    } catch (err) {
      return this.failed(`unexpected: ${errorText(err)}`);
    }
  }

  async dryRun(): Promise<void> {
    if (this.verification.kind !== 'jwks') return; // a secret or a public key was checked when parsed
    const remote = this.keySet(await loadJose(), this.verification);
    try {
      await remote.reload();
    } catch (err) {
      throw new PolicyConfigError('config.jwksUrl', `cannot fetch the key set: ${errorText(err)}`);
    }
  }

  async close(): Promise<void> {
    // Nothing to end: the key set is fetched with the global fetch, whose idle sockets time out.
  }

  private tokenOf(q: AuthQuery): string | undefined {
    const text = this.config.from === 'password' ? q.password?.toString('utf8') : q.username;
    return text !== undefined && JWT_SHAPE.test(text) ? text : undefined;
  }

  /** The remote key set, made once. */
  private keySet(jose: Jose, v: JwksKey): RemoteJWKSet {
    return (this.remote ??= jose.createRemoteJWKSet(v.url, { timeoutDuration: JWKS_TIMEOUT_MS, cacheMaxAge: v.cacheMaxAgeMs, cooldownDuration: v.cooldownMs }));
  }

  private async verify(token: string): Promise<Checked> {
    const jose = await loadJose();
    const v = this.verification;
    const options: VerifyOptions = { algorithms: v.algorithms, clockTolerance: this.config.clockTolerance };
    try {
      // jwtVerify with this policy's key: a fixed key, or the remote set's resolver.
      const verified = v.kind === 'jwks'
        ? await jose.jwtVerify(token, (this.getKey ??= keyFromSet(jose, this.keySet(jose, v), v.url)), options)
        : await jose.jwtVerify(token, v.key, options);
      return { payload: verified.payload };
    } catch (err) {
      if (err instanceof jose.errors.JWKSMultipleMatchingKeys) return this.verifyWithEach(jose, token, err, options);
      return this.verifyFailure(jose, err);
    }
  }

  /** A token without a kid that several keys of the set could have signed: try each. */
  private async verifyWithEach(jose: Jose, token: string, candidates: InstanceType<Jose['errors']['JWKSMultipleMatchingKeys']>, options: VerifyOptions): Promise<Checked> {
    for await (const key of candidates) {
      try {
        return { payload: (await jose.jwtVerify(token, key, options)).payload };
      } catch (err) {
        if (!(err instanceof jose.errors.JWSSignatureVerificationFailed)) return this.verifyFailure(jose, err);
      }
    }
    return { result: 'deny', reason: 'JWT signature invalid' };
  }

  private verifyFailure({ errors }: Jose, err: unknown): AuthAnswer {
    if (err instanceof KeySetUnavailable) return this.failed(err.message);
    if (err instanceof errors.JWTExpired) return { result: 'deny', reason: 'JWT expired' };
    if (err instanceof errors.JWSSignatureVerificationFailed) return { result: 'deny', reason: 'JWT signature invalid' };
    if (err instanceof errors.JOSEError) return { result: 'deny', reason: `JWT refused: ${err.message}` };
    return this.failed(`unexpected: ${errorText(err)}`);
  }

  /** The claims checked and read; a mismatch is a deny. */
  private answerOf(payload: JWTPayload, q: AuthQuery): AuthAnswer {
    const mismatch = this.claimMismatch(payload, q);
    if (mismatch !== undefined) return { result: 'deny', reason: mismatch };
    const answer: AuthAnswer & { result: 'allow' } = { result: 'allow', superuser: superuserOf(payload[this.config.superuserClaim]) === true };
    // A cached allow must not outlive the token.
    if (typeof payload.exp === 'number') answer.validUntil = payload.exp * 1000;
    if (this.config.usernameClaim !== undefined) {
      const username = payload[this.config.usernameClaim];
      if (typeof username !== 'string' || username === '') return { result: 'deny', reason: `JWT claim ${this.config.usernameClaim} (the username) is missing or not a string` };
      answer.username = username;
    }
    const acl = this.aclOf(payload[this.config.aclClaim]);
    if (typeof acl === 'string') return { result: 'deny', reason: `JWT claim ${this.config.aclClaim} (the ACL) is invalid: ${acl}` };
    if (acl !== undefined) answer.acl = acl;
    return answer;
  }

  private claimMismatch(payload: JWTPayload, q: AuthQuery): string | undefined {
    for (const [claim, template] of Object.entries(this.config.verifyClaims)) {
      for (const p of this.claimParams.get(claim) ?? []) {
        if (paramValue(p, q) === undefined) return `JWT claim ${claim} cannot be checked: the client gave no ${p}`;
      }
      const expected = fill(template, q);
      const value = payload[claim];
      if (value === undefined) return `JWT claim ${claim} is missing`;
      const matches = value === expected || (Array.isArray(value) && value.includes(expected));
      if (!matches) return `JWT claim ${claim} does not match`;
    }
    return undefined;
  }

  /** The grants of the ACL claim, undefined when absent, or the problem that refuses the token. */
  private aclOf(claim: unknown): AclGrant[] | undefined | string {
    if (claim === undefined || claim === null) return undefined;
    const acl = aclOfClaim(claim);
    if ('problem' in acl) return acl.problem;
    if (acl.dropped.length > 0) this.aclWarning.warn('jwt policy: ACL rules of a token were dropped', { dropped: acl.dropped.length, first: acl.dropped[0] });
    return acl.grants;
  }

  private failed(reason: string): AuthAnswer {
    this.failureWarning.warn('jwt policy: a token could not be verified (the client was ignored)', { reason });
    return { result: 'ignore', reason, error: true };
  }
}

/** jose's remote key set, with its fetch failures told apart from the token's own key errors. */
function keyFromSet({ errors }: Jose, remote: RemoteJWKSet, url: URL): JWTVerifyGetKey {
  return async function keyOfToken(header, token) {
    try {
      return await remote(header, token);
    } catch (err) {
      if (err instanceof errors.JOSEError && TOKEN_KEY_ERRORS.has(err.code)) throw err;
      throw new KeySetUnavailable(`the key set ${url.href} is unavailable: ${errorText(err)}`, { cause: err });
    }
  };
}

/** An error's message with the messages of its causes (fetch hides the socket error there). */
function errorText(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': ');
}
