// The policies' Prometheus metrics: how each authentication and ACL policy answered (allow, deny,
// ignore, error), labelled by kind, policy id and type, read from the policy manager when scraped.
// The workers' side (cache hits and misses, timeouts, overload) is in the worker metrics.
import { Counter, Gauge, type Registry } from 'prom-client';

import { heavyVerifications } from '../auth/strategies/password-strategy.ts';

import { registerLdapPolicyMetrics } from './ldap-metrics.ts';
import type { PolicyManager } from './manager.ts';

export function registerPolicyMetrics(registry: Registry, policies: PolicyManager): void {
  new Counter({
    name: 'spindle_policy_answers_total',
    help: 'Answers of each auth and ACL policy by result: allow, deny, ignore (not found: the next decides), error (source down, timeout or bad answer: counted as ignore).',
    labelNames: ['kind', 'policy', 'type', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of policies.allCounters()) {
        for (const result of ['allow', 'deny', 'ignore', 'error'] as const) this.inc({ kind: p.kind, policy: p.id, type: p.type, result }, p.counters[result]);
      }
    },
  });
  new Counter({
    name: 'spindle_auth_hash_waits_total',
    help: 'bcrypt, argon2 and pbkdf2 verifications of the auth policies that waited for one of the auth.hashConcurrency slots.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(heavyVerifications.waited);
    },
  });
  new Gauge({
    name: 'spindle_auth_hash_verifications',
    help: 'bcrypt, argon2 and pbkdf2 verifications of the auth policies now, by state: running (at most auth.hashConcurrency) or waiting.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.set({ state: 'running' }, heavyVerifications.running);
      this.set({ state: 'waiting' }, heavyVerifications.waiting);
    },
  });
  registerLdapPolicyMetrics(registry, policies);
}
