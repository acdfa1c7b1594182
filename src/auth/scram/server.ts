// Owns the server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as MQTT 5
// enhanced-authentication methods (worker thread): client-first -> server-first (AUTH 0x18) ->
// client-final -> server-final (CONNACK 0x00, or AUTH 0x00 for a re-authentication, with v=).
// The credentials come from a ScramLookup (the built-in client database, then the database
// policies); verifying a proof is one HMAC and one hash with the stored keys, no PBKDF2. A
// username nobody holds gets a made-up salt that stays the same for that name (derived from a
// key kept in the store), so the exchange looks the same as for a real client and fails only at
// the proof: usernames cannot be told apart from the outside.
import { createHash, createHmac, randomBytes } from 'node:crypto';

import { constantTimeEqual } from '../strategies/constant-time.ts';
import type { AuthContinuation, AuthExchangeRequest, AuthMethod, AuthResult, AuthStep } from '../types.ts';
import { SALT_BYTES, SCRAM_MECHANISMS, type ScramCredentials, type ScramMechanism } from './credentials.ts';
import { parseClientFinal, parseClientFirst, serverFirst, type ClientFirst, type ScramError } from './messages.ts';
import { prepareUsername } from './saslprep.ts';

export interface ScramLookupRequest {
  /** SASLprep'd. */
  username: string;
  mechanism: ScramMechanism;
  clientId: string;
  remoteAddress: string;
}

/** found: the credentials, and what the sign-in gives once the proof is verified (a refusal when
 * the client is disabled, say). unknown: nobody holds credentials of this mechanism for the name.
 * unavailable: a source that should answer did not (CONNACK 0x88). */
export type ScramLookupResult =
  | { kind: 'found'; credentials: ScramCredentials; accept: AuthResult }
  | { kind: 'unknown' }
  | { kind: 'unavailable' };

/** Where a worker finds SCRAM credentials; each link answers for the names it holds and passes
 * the others on. */
export interface ScramLookup {
  find(req: ScramLookupRequest): ScramLookupResult | Promise<ScramLookupResult>;
}

export const NO_SCRAM_CREDENTIALS: ScramLookup = { find: () => UNKNOWN };
const UNKNOWN: ScramLookupResult = Object.freeze({ kind: 'unknown' as const });

/** How the exchanges of one mechanism ended (WorkerStats.scram, metric spindle_auth_scram_total). */
export interface ScramResultCounters {
  success: number;
  /** The proof did not match: a wrong password. */
  invalidProof: number;
  /** Nobody holds credentials of this mechanism for the username (fails at the proof). */
  unknownUser: number;
  /** The proof matched but the client may not connect (disabled, bound to another client id). */
  refused: number;
  /** A message that is not SCRAM, or asks for what is not offered (channel binding, extensions). */
  badMessage: number;
  /** The credentials' source did not answer. */
  unavailable: number;
}

/** The salt and iteration count shown for a username nobody holds: derived from `key()` (kept in
 * the store by the client database, the same on every worker and across restarts). */
export interface MockSalts {
  key(): Buffer;
  readonly iterations: number;
}

const UNAVAILABLE: AuthResult = Object.freeze({ ok: false as const, reason: 'unavailable' as const });
const NOT_AUTHORIZED: AuthResult = Object.freeze({ ok: false as const, reason: 'not_authorized' as const });

export class ScramMethod implements AuthMethod {
  readonly hash: 'sha256' | 'sha512';
  readonly keyLength: number;

  constructor(
    readonly mechanism: ScramMechanism,
    private readonly lookup: ScramLookup,
    readonly counters: ScramResultCounters,
    private readonly mock: MockSalts,
    /** The server's part of the nonce (a test gives RFC 7677's). */
    private readonly serverNonce: () => string = randomNonce,
  ) {
    this.hash = SCRAM_MECHANISMS[mechanism].hash;
    this.keyLength = SCRAM_MECHANISMS[mechanism].keyLength;
  }

  start(req: AuthExchangeRequest): AuthStep | Promise<AuthStep> {
    const first = parseClientFirst(req.data);
    if (typeof first === 'string') return this.refuse(first, 'badMessage');
    // An empty n= means the CONNECT's User Name (as PostgreSQL reads its startup user name).
    const sent = first.username !== '' ? first.username : req.username;
    const username = sent === undefined ? undefined : prepareUsername(sent);
    if (username === undefined) return this.refuse('invalid-username-encoding', 'badMessage');
    // One identity: the CONNECT's User Name (a re-authentication: the connection's), the SCRAM
    // username and an authorization identity must name the same client.
    if (first.username !== '' && req.username !== undefined && prepareUsername(req.username) !== username) return this.refuse('other-error', 'badMessage');
    if (first.authzid !== undefined && prepareUsername(first.authzid) !== username) return this.refuse('other-error', 'badMessage');
    const found = this.lookup.find({ username, mechanism: this.mechanism, clientId: req.clientId, remoteAddress: req.remoteAddress });
    if (found instanceof Promise) return found.then((f) => this.challenge(first, username, f));
    return this.challenge(first, username, found);
  }

  /** server-first: the client's nonce and ours, the salt and the iteration count. */
  private challenge(first: ClientFirst, username: string, found: ScramLookupResult): AuthStep {
    if (found.kind === 'unavailable') {
      this.counters.unavailable++;
      return { kind: 'done', result: UNAVAILABLE };
    }
    const known = found.kind === 'found' ? found : null;
    const salt = known?.credentials.salt ?? this.mockSalt(username);
    const iterations = known?.credentials.iterations ?? this.mock.iterations;
    const nonce = first.nonce + this.serverNonce();
    const message = serverFirst(nonce, salt, iterations);
    return { kind: 'continue', data: Buffer.from(message, 'utf8'), next: new ScramExchange(this, first, message, nonce, known) };
  }

  private mockSalt(username: string): Buffer {
    return createHmac('sha256', this.mock.key()).update(this.mechanism).update('\0').update(username, 'utf8').digest().subarray(0, SALT_BYTES);
  }

  /** The end of an exchange that failed: CONNACK 0x87 (or DISCONNECT 0x87) with e=<error>. */
  refuse(error: ScramError, counter: keyof ScramResultCounters): AuthStep {
    this.counters[counter]++;
    return { kind: 'done', result: NOT_AUTHORIZED, data: Buffer.from(`e=${error}`, 'utf8') };
  }
}

/** 18 random bytes: 24 base64 characters, none of them a comma. */
function randomNonce(): string {
  return randomBytes(18).toString('base64');
}

/** One connection's exchange after server-first: waits for client-final. */
class ScramExchange implements AuthContinuation {
  constructor(
    private readonly method: ScramMethod,
    private readonly first: ClientFirst,
    private readonly serverFirst: string,
    private readonly nonce: string,
    private readonly found: Extract<ScramLookupResult, { kind: 'found' }> | null,
  ) {}

  step(data: Buffer | undefined): AuthStep {
    const m = this.method;
    const final = parseClientFinal(data, this.first.gs2Header, this.nonce, m.keyLength);
    if (typeof final === 'string') return m.refuse(final, this.found === null ? 'unknownUser' : final === 'invalid-proof' ? 'invalidProof' : 'badMessage');
    if (this.found === null) return m.refuse('invalid-proof', 'unknownUser');
    const { storedKey, serverKey } = this.found.credentials;
    const authMessage = `${this.first.bare},${this.serverFirst},${final.withoutProof}`;
    // ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the proof holds when H(ClientKey) is StoredKey.
    const clientKey = createHmac(m.hash, storedKey).update(authMessage, 'utf8').digest();
    for (let i = 0; i < clientKey.length; i++) clientKey[i] ^= final.proof[i];
    if (!constantTimeEqual(createHash(m.hash).update(clientKey).digest(), storedKey)) return m.refuse('invalid-proof', 'invalidProof');
    const accept = this.found.accept;
    if (!accept.ok) return m.refuse('other-error', 'refused');
    m.counters.success++;
    const signature = createHmac(m.hash, serverKey).update(authMessage, 'utf8').digest();
    return { kind: 'done', result: accept, data: Buffer.from(`v=${signature.toString('base64')}`, 'utf8') };
  }
}
