// Owns authentication against the users listed in the configuration. Anonymous clients (no
// username) are accepted when allowAnonymous; a named client needs a configured user and the
// right password, except on a broker with anonymous access and no users at all, where the
// username is taken as the client's identity (as Mosquitto does: clients pointed at a fresh broker
// often send credentials); a client whose verified certificate CN the listener passes is identified by
// that CN, accepted when allowAnonymous or when the CN is a configured username; a client whose
// TLS-PSK identity the listener passes (identityAsUsername) is identified by it and accepted, the
// key it proved being its credential (as Mosquitto's use_identity_as_username). Unknown users
// still cost one hash verification, so response time does not reveal which usernames exist.
// A Mosquitto password file adds users: a name is looked up in the configured users first, then in
// the file (a configured user shadows the file's entry of the same name).
import { AuthError } from './errors.ts';
import { passwordHashProblem, verifyPassword } from './password.ts';
import type { AuthRequest, AuthResult, Authenticator, RateLimit } from './types.ts';
import { verifyMosquittoHash, type PasswdFile } from './mosquitto/passwd-file.ts';

export interface StaticUser {
  username: string;
  /** An argon2 or bcrypt hash. */
  password: string;
  /** The user's own inbound rate limit (AuthResult.rateLimit), over its endpoint's. */
  rateLimit?: RateLimit;
}

export interface StaticAuthenticatorOptions {
  allowAnonymous: boolean;
  users: readonly StaticUser[];
  /** A Mosquitto password file; its contents may be replaced (reload). */
  mosquittoUsers?: { readonly current: PasswdFile };
}

/** Verified against when nobody is configured: the argon2id hash of a random, discarded string. */
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$pm0qJu94iCbalGqzR/fIbg$zLfWs2cHpjjNtUtsPv5wppfUoM0gTdwoUBKgnzq0Noo';
const EMPTY = Buffer.alloc(0);
const ANONYMOUS: AuthResult = Object.freeze({ ok: true as const });
const NOT_AUTHORIZED: AuthResult = Object.freeze({ ok: false as const, reason: 'not_authorized' as const });

export class StaticAuthenticator implements Authenticator {
  private readonly allowAnonymous: boolean;
  private readonly users: Map<string, string>;
  private readonly limits = new Map<string, RateLimit>();
  /** A hash verified for unknown users: a configured one, so the cost matches a real check. */
  private readonly dummyHash: string;
  private readonly passwordFile: StaticAuthenticatorOptions['mosquittoUsers'];

  constructor(options: StaticAuthenticatorOptions) {
    this.allowAnonymous = options.allowAnonymous === true;
    this.users = new Map();
    options.users.forEach((user, i) => {
      if (typeof user.username !== 'string' || user.username === '') {
        throw new AuthError('AUTH_CONFIG_INVALID', `users[${i}].username must be a non-empty string`);
      }
      if (this.users.has(user.username)) {
        throw new AuthError('AUTH_CONFIG_INVALID', `users[${i}].username ${JSON.stringify(user.username)} is listed twice`);
      }
      const problem = typeof user.password === 'string' ? passwordHashProblem(user.password) : 'must be a string';
      if (problem !== undefined) throw new AuthError('AUTH_CONFIG_INVALID', `users[${i}].password ${problem}`);
      this.users.set(user.username, user.password);
      if (user.rateLimit !== undefined) this.limits.set(user.username, user.rateLimit);
    });
    this.passwordFile = options.mosquittoUsers;
    this.dummyHash = options.users.length > 0 ? options.users[0].password : DUMMY_HASH;
  }

  /** Anonymous clients, certificates and a broker without users are answered at once; a password
   * is verified off the event loop. */
  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult> {
    if (req.pskIdentity !== undefined) return this.byPsk(req.pskIdentity);
    if (req.certificateCN !== undefined) return this.byCertificate(req.certificateCN);
    if (req.username === undefined) {
      return this.allowAnonymous ? ANONYMOUS : NOT_AUTHORIZED;
    }
    if (this.allowAnonymous && this.users.size === 0 && this.passwordFile === undefined) return { ok: true, username: req.username };
    return this.byPassword(req.username, req.password);
  }

  private async byPassword(username: string, given: Buffer | undefined): Promise<AuthResult> {
    const req = { username, password: given };
    const hash = this.users.get(req.username);
    const password = req.password ?? EMPTY;
    if (hash === undefined) {
      const entry = this.passwordFile?.current.get(username);
      if (entry !== undefined) {
        const valid = await verifyMosquittoHash(entry, password);
        return valid ? { ok: true, username } : { ok: false, reason: 'bad_credentials' };
      }
      // Cost like a real check: against a file entry when the file holds every user.
      const fileDummy = this.users.size === 0 ? this.passwordFile?.current.values().next().value : undefined;
      if (fileDummy !== undefined) await verifyMosquittoHash(fileDummy, password);
      else await verifyPassword(this.dummyHash, password);
      return { ok: false, reason: 'bad_credentials' };
    }
    const valid = await verifyPassword(hash, password);
    if (!valid) return { ok: false, reason: 'bad_credentials' };
    const rateLimit = this.limits.get(req.username);
    return rateLimit !== undefined ? { ok: true, username: req.username, rateLimit } : { ok: true, username: req.username };
  }

  /** The PSK is the credential (the handshake checked it against the endpoint's keys): no
   * password is checked; a configured user of that name keeps its rate limit. */
  private byPsk(identity: string): AuthResult {
    const rateLimit = this.limits.get(identity);
    return rateLimit !== undefined ? { ok: true, username: identity, rateLimit } : { ok: true, username: identity };
  }

  /** The certificate is the credential: no password is checked. */
  private byCertificate(cn: string): AuthResult {
    if (this.allowAnonymous || this.users.has(cn) || this.passwordFile?.current.has(cn) === true) return { ok: true, username: cn };
    return { ok: false, reason: 'not_authorized' };
  }
}
