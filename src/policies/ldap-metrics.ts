// The `ldap` policies' Prometheus metrics, read from each running LDAP policy when scraped: its
// operations on the directory by kind and outcome, its pool (connections by state, questions
// waiting, how waits ended) and its group cache (ACL). Labelled by kind and policy id, as
// spindle_policy_answers_total.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { LdapPolicyHandle } from './ldap.ts';
import { LDAP_OPS, LDAP_OUTCOMES, POOL_WAITS } from './ldap-stats.ts';
import type { PolicyManager } from './manager.ts';

export function registerLdapPolicyMetrics(registry: Registry, policies: PolicyManager): void {
  const running = () => policies.compiledOfType('ldap').map((p) => ({ kind: p.kind, policy: p.id, ldap: (p.compiled as unknown as LdapPolicyHandle).ldap }));
  new Counter({
    name: 'spindle_policy_ldap_requests_total',
    help: 'LDAP operations of each ldap policy by op (connect, service-bind, user-bind, user-search, entry-read, group-search) and result: ok, refused (the directory refused the credentials), error (unreachable, timeout, TLS, another result code).',
    labelNames: ['kind', 'policy', 'op', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) {
        for (const op of LDAP_OPS) for (const result of LDAP_OUTCOMES) this.inc({ kind: p.kind, policy: p.policy, op, result }, p.ldap.stats.requestsOf(op, result));
      }
    },
  });
  new Gauge({
    name: 'spindle_policy_ldap_pool_connections',
    help: 'Connections of each ldap policy to its directory by state: idle, busy (in use), opening; at most its poolSize.',
    labelNames: ['kind', 'policy', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) {
        const c = p.ldap.poolCounts();
        for (const state of ['idle', 'busy', 'opening'] as const) this.set({ kind: p.kind, policy: p.policy, state }, c[state]);
      }
    },
  });
  new Gauge({
    name: 'spindle_policy_ldap_pool_waiting',
    help: 'Questions of each ldap policy waiting for a free connection of its pool now (at most 1000; more fail at once).',
    labelNames: ['kind', 'policy'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) this.set({ kind: p.kind, policy: p.policy }, p.ldap.poolCounts().waiting);
    },
  });
  new Counter({
    name: 'spindle_policy_ldap_pool_waits_total',
    help: 'Waits for a connection of an ldap policy\'s pool by how they ended: served, timeout (none free within its timeout), full (1000 already waiting: failed at once).',
    labelNames: ['kind', 'policy', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) for (const result of POOL_WAITS) this.inc({ kind: p.kind, policy: p.policy, result }, p.ldap.stats.waits[result]);
    },
  });
  new Counter({
    name: 'spindle_policy_ldap_group_cache_total',
    help: 'Lookups of a user\'s groups by an ldap ACL policy: hit (kept, within groupCacheTtl) or miss (asked of the directory).',
    labelNames: ['policy', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) {
        if (p.kind !== 'acl') continue;
        this.inc({ policy: p.policy, result: 'hit' }, p.ldap.stats.groupCache.hit);
        this.inc({ policy: p.policy, result: 'miss' }, p.ldap.stats.groupCache.miss);
      }
    },
  });
  new Gauge({
    name: 'spindle_policy_ldap_group_cache_users',
    help: 'Users whose groups an ldap ACL policy keeps now (at most its groupCacheSize).',
    labelNames: ['policy'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of running()) if (p.kind === 'acl') this.set({ policy: p.policy }, p.ldap.cachedUsers());
    },
  });
}
