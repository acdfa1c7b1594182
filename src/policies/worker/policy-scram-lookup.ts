// Owns a worker's SCRAM lookups in the authentication policies (worker thread): the credentials of
// a username the built-in client database does not hold are asked of the main thread's chain
// (database policies keep them, src/policies/auth-row.ts), batched like password questions and
// bounded by auth.policyTimeout and auth.policyMaxPending. Not cached: each SCRAM sign-in of such
// a client is one question (one query), so a changed password applies at once.
import { parseScramCredentials } from '../../auth/scram/credentials.ts';
import type { ScramLookup, ScramLookupRequest, ScramLookupResult } from '../../auth/scram/server.ts';
import type { ScramAnswer } from '../types.ts';
import type { WorkerPolicies } from './worker-policies.ts';

const UNKNOWN: ScramLookupResult = Object.freeze({ kind: 'unknown' as const });
const UNAVAILABLE: ScramLookupResult = Object.freeze({ kind: 'unavailable' as const });

export class PolicyScramLookup implements ScramLookup {
  constructor(private readonly policies: WorkerPolicies) {}

  find(req: ScramLookupRequest): ScramLookupResult | Promise<ScramLookupResult> {
    if (!this.policies.state.auth) return UNKNOWN;
    return this.policies.ask('scram', { clientid: req.clientId, username: req.username, peerhost: req.remoteAddress, mechanism: req.mechanism }).then((reply) => {
      // Not answered in time, or too many waiting: nobody could decide (CONNACK 0x88).
      if (reply === null) return UNAVAILABLE;
      const answer = reply.answer as ScramAnswer;
      if (answer.result !== 'allow') return reply.cacheable ? UNKNOWN : UNAVAILABLE; // a policy failed on the way
      const credentials = parseScramCredentials(answer.credentials);
      if (typeof credentials === 'string' || credentials.mechanism !== req.mechanism) return UNAVAILABLE; // checked by the policy; never trusted
      return { kind: 'found', credentials, accept: { ok: true, username: req.username, superuser: answer.superuser } };
    });
  }
}
