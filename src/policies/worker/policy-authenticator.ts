// Owns a worker's authentication when policies exist: credentials go to the policy chain (the main
// thread's, through WorkerPolicies) and its answer is cached (AnswerCache); when every policy
// ignores them, the static users decide (StaticAuthenticator: auth.users, the Mosquitto password
// file, allowAnonymous). Without enabled policies, and for clients without any credentials (nor a
// certificate their balancer verified, from a PROXY v2 header) or identified by a certificate or a
// TLS-PSK identity, the static users decide at once.
import type { AuthRequest, AuthResult, Authenticator } from '../../auth/types.ts';
import { TenantCounters } from '../../broker/tenant-counters.ts';
import type { AuthAnswer, AuthQuery } from '../types.ts';
import { SharedTenantLink } from './tenant-link.ts';
import type { AnswerCache } from './answer-cache.ts';
import type { WorkerPolicies } from './worker-policies.ts';

const UNAVAILABLE: AuthResult = Object.freeze({ ok: false as const, reason: 'unavailable' as const });
const DENIED: AuthResult = Object.freeze({ ok: false as const, reason: 'bad_credentials' as const });

export class PolicyAuthenticator implements Authenticator {
  private tenantCounters: TenantCounters | null = null;

  constructor(
    private readonly policies: WorkerPolicies,
    private readonly cache: AnswerCache,
    private readonly fallback: Authenticator,
    /** This worker's id: its share of a tenant's connections is given back if it dies. */
    private readonly workerId = -1,
  ) {
    policies.onChange(() => cache.clear());
  }

  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult> {
    const state = this.policies.state;
    if (!state.auth || req.certificateCN !== undefined || req.pskIdentity !== undefined || (req.username === undefined && req.password === undefined && req.proxyCertificateCN === undefined)) {
      return this.fallback.authenticate(req);
    }
    const q: AuthQuery = { clientid: req.clientId, username: req.username, password: req.password, peerhost: req.remoteAddress };
    // A balancer's PROXY v2 header: what it said of the client's TLS, for the policies that read it.
    const sni = req.serverName;
    if (sni !== undefined) q.sni = sni;
    const cn = req.proxyCertificateCN;
    if (cn !== undefined) q.certCommonName = cn;
    const key = this.cache.enabled ? this.cache.keyOf(q, state.authParams) : undefined;
    const hit = key === undefined ? undefined : this.cache.get(key);
    const counters = this.policies.counters;
    if (hit !== undefined) {
      counters.authCacheHits++;
      return this.decide(hit, req);
    }
    counters.authCacheMisses++;
    return this.policies.ask('auth', q).then((reply) => {
      if (reply === null) return UNAVAILABLE;
      const answer = reply.answer as AuthAnswer;
      if (key !== undefined && reply.cacheable && reply.generation === this.policies.state.generation) this.cache.set(key, answer);
      return this.decide(answer, req);
    });
  }

  /** The view of the current tenant buffer (made again when the main thread sends another). */
  private counters(): TenantCounters {
    const buffer = this.policies.state.tenants;
    if (buffer === null) throw new Error('a tenant answer without tenant counters');
    if (this.tenantCounters?.buffer !== buffer) this.tenantCounters = new TenantCounters(buffer);
    return this.tenantCounters;
  }

  private decide(answer: AuthAnswer, req: AuthRequest): AuthResult | Promise<AuthResult> {
    switch (answer.result) {
      case 'allow':
        if (answer.tenant !== undefined) {
          const tenant = new SharedTenantLink(this.counters(), answer.tenant, this.workerId);
          return { ok: true, username: answer.username ?? req.username, superuser: false, acl: answer.acl, tenant, ...(answer.rateLimit ? { rateLimit: answer.rateLimit } : {}) };
        }
        return { ok: true, username: answer.username ?? req.username, superuser: answer.superuser, acl: answer.acl };
      case 'deny':
        return DENIED;
      case 'ignore':
        return this.fallback.authenticate(req);
    }
  }
}
