// Owns the counters of one `ldap` policy (main thread): its LDAP operations by kind and outcome,
// the waits for a connection of its pool, and its group cache. Written by the pool, the directory
// and the ACL policy; read by ldap-metrics.ts when Prometheus scrapes.

/** What the policy asks the directory. */
export type LdapOp = 'connect' | 'service-bind' | 'user-bind' | 'user-search' | 'entry-read' | 'group-search';
export const LDAP_OPS: readonly LdapOp[] = ['connect', 'service-bind', 'user-bind', 'user-search', 'entry-read', 'group-search'];

/** ok; refused: the directory said no (a bind's invalid credentials); error: anything else
 * (unreachable, timeout, TLS, another result code). */
export type LdapOutcome = 'ok' | 'refused' | 'error';
export const LDAP_OUTCOMES: readonly LdapOutcome[] = ['ok', 'refused', 'error'];

/** How a wait for a pool connection ended: a connection, the timeout, or refused at once because
 * MAX_POOL_WAITERS were already waiting. */
export type PoolWait = 'served' | 'timeout' | 'full';
export const POOL_WAITS: readonly PoolWait[] = ['served', 'timeout', 'full'];

export class LdapStats {
  readonly requests = new Map<string, number>();
  readonly waits: Record<PoolWait, number> = { served: 0, timeout: 0, full: 0 };
  readonly groupCache = { hit: 0, miss: 0 };

  count(op: LdapOp, outcome: LdapOutcome): void {
    const key = `${op} ${outcome}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  requestsOf(op: LdapOp, outcome: LdapOutcome): number {
    return this.requests.get(`${op} ${outcome}`) ?? 0;
  }
}
