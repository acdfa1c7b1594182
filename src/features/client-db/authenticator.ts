// Owns authentication by the built-in client database (worker thread): first in the chain, it
// decides for every username it holds and passes the others on (the policy chain, then the static
// users). A password is verified off the event loop (argon2 and bcrypt on the libuv pool, a
// Mosquitto PBKDF2 hash with the async crypto.pbkdf2). With the verified cache on, the HMAC-SHA256
// of username and password under a key made at random by this worker (never stored, never sent)
// is kept per client once verified; the next CONNECT with the same password compares digests in
// constant time instead of hashing again. A change of the client (a new password, disabled,
// removed) replaces its entry and drops the digest. A TLS-PSK identity (an endpoint with
// identityAsUsername) that names one of its clients is that client: the key proved in the
// handshake is the credential, its enabled flag and client id binding still apply.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { parseMosquittoHash, verifyMosquittoHash } from '../../auth/mosquitto/passwd-file.ts';
import { verifyPassword } from '../../auth/password.ts';
import type { AuthRequest, AuthResult, Authenticator } from '../../auth/types.ts';
import type { HeldClient, WorkerClientDb } from './worker-db.ts';

const EMPTY = Buffer.alloc(0);
const BAD_CREDENTIALS: AuthResult = Object.freeze({ ok: false as const, reason: 'bad_credentials' as const });
const NOT_AUTHORIZED: AuthResult = Object.freeze({ ok: false as const, reason: 'not_authorized' as const });

export class ClientDbAuthenticator implements Authenticator {
  private readonly key = randomBytes(32);

  constructor(
    private readonly db: WorkerClientDb,
    private readonly next: Authenticator,
    private readonly verifiedCache: boolean,
  ) {}

  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult> {
    if (req.pskIdentity !== undefined) return this.byPsk(req);
    // A certificate is the credential of the static users; anonymous clients are theirs too.
    if (req.username === undefined || req.certificateCN !== undefined || this.db.size === 0) return this.next.authenticate(req);
    const client = this.db.clients.get(req.username);
    if (client === undefined) return this.next.authenticate(req);
    if (!this.db.admits(client, req.clientId)) return NOT_AUTHORIZED;
    const counters = this.db.counters;
    const password = req.password ?? EMPTY;
    const digest = this.verifiedCache ? this.digest(req.username, password) : null;
    if (digest !== null && client.verified !== null && timingSafeEqual(digest, client.verified)) {
      counters.authCacheHits++;
      counters.authSuccess++;
      return this.accepted(client);
    }
    return this.verify(client, password, digest);
  }

  /** A PSK identity: a client of the database, or (not one) the next authenticator's. */
  private byPsk(req: AuthRequest): AuthResult | Promise<AuthResult> {
    const client = this.db.size === 0 ? undefined : this.db.clients.get(req.pskIdentity!);
    if (client === undefined) return this.next.authenticate(req);
    if (!this.db.admits(client, req.clientId)) return NOT_AUTHORIZED;
    this.db.counters.authSuccess++;
    return this.accepted(client);
  }

  private async verify(client: HeldClient, password: Buffer, digest: Buffer | null): Promise<AuthResult> {
    // A client with SCRAM credentials only signs in with SCRAM (MQTT 5 AUTH), never a password.
    const valid = client.passwordHash !== undefined && await verifyHash(client.passwordHash, password);
    if (!valid) {
      this.db.counters.authBadCredentials++;
      return BAD_CREDENTIALS;
    }
    // Kept only while this is still the client's entry (a change made meanwhile replaced it).
    if (digest !== null && this.db.clients.get(client.username) === client) client.verified = digest;
    this.db.counters.authSuccess++;
    return this.accepted(client);
  }

  /** Signed in: its rate limit (its own or a role's) goes with it, over its endpoint's. */
  private accepted(client: HeldClient): AuthResult {
    const rateLimit = this.db.rateLimitOf(client);
    return rateLimit === undefined ? { ok: true, username: client.username } : { ok: true, username: client.username, rateLimit };
  }

  private digest(username: string, password: Buffer): Buffer {
    return createHmac('sha256', this.key).update(username).update('\0').update(password).digest();
  }
}

/** True when `password` matches a stored hash: argon2, bcrypt, or Mosquitto's $7$ / $6$. */
export async function verifyHash(hash: string, password: Buffer): Promise<boolean> {
  if (hash.startsWith('$7$') || hash.startsWith('$6$')) {
    const parsed = parseMosquittoHash(hash);
    if (typeof parsed === 'string') return false; // checked when stored; never trusted
    return verifyMosquittoHash(parsed, password);
  }
  return verifyPassword(hash, password);
}
