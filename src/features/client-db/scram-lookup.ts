// Owns SCRAM sign-in by the built-in client database (worker thread): first in the worker's chain
// of SCRAM credential lookups, it answers for every username it holds (with its credentials of
// the mechanism asked, or none: that client then fails at the proof like an unknown one) and
// passes the others on (the database policies). A disabled client, or one bound to another client
// id, is refused only once its proof has been verified, so the exchange tells nothing to whoever
// does not know the password.
import type { AuthResult } from '../../auth/types.ts';
import type { ScramLookup, ScramLookupRequest, ScramLookupResult } from '../../auth/scram/server.ts';
import type { WorkerClientDb } from './worker-db.ts';

const UNKNOWN: ScramLookupResult = Object.freeze({ kind: 'unknown' as const });
const NOT_AUTHORIZED: AuthResult = Object.freeze({ ok: false as const, reason: 'not_authorized' as const });

export class ClientDbScramLookup implements ScramLookup {
  constructor(
    private readonly db: WorkerClientDb,
    private readonly next: ScramLookup,
  ) {}

  find(req: ScramLookupRequest): ScramLookupResult | Promise<ScramLookupResult> {
    if (this.db.size === 0) return this.next.find(req);
    const client = this.db.clients.get(req.username);
    if (client === undefined) return this.next.find(req);
    const credentials = this.db.scramOf(client, req.mechanism);
    if (credentials === undefined) return UNKNOWN;
    let accept: AuthResult;
    if (!this.db.admits(client, req.clientId)) {
      accept = NOT_AUTHORIZED;
    } else {
      // Its rate limit (its own or a role's) goes with it, as after a password.
      const rateLimit = this.db.rateLimitOf(client);
      accept = rateLimit === undefined ? { ok: true, username: client.username } : { ok: true, username: client.username, rateLimit };
    }
    return { kind: 'found', credentials, accept };
  }
}
