// The admin API's sign-in counters, registered in the main thread's Prometheus registry (the one
// /prometheus renders beside the workers' metrics): failed sign-ins, lockouts they caused, and
// failure-tracker entries dropped at its bound.
import { Counter, type Registry } from 'prom-client';

import type { LimitedKind } from './login-limiter.ts';

/** How the failed credentials came: the /public/login body or an HTTP Basic header. */
export type SignInMethod = 'login' | 'basic';

export class AuthMetrics {
  private readonly failures: Counter<'method'>;
  private readonly lockouts: Counter<'kind'>;
  private readonly evictions: Counter;

  constructor(registry: Registry) {
    this.failures = new Counter({ name: 'spindle_admin_auth_failures_total', help: 'Failed admin API sign-ins (wrong username or password), by method: login (/public/login) or basic (HTTP Basic).', labelNames: ['method'], registers: [registry] });
    this.lockouts = new Counter({ name: 'spindle_admin_auth_lockouts_total', help: 'Admin API sign-in lockouts started, by kind: address (source address) or username.', labelNames: ['kind'], registers: [registry] });
    this.evictions = new Counter({ name: 'spindle_admin_auth_tracker_evictions_total', help: 'Sign-in failure records dropped at the tracker bound before their window or lockout ended.', registers: [registry] });
    // Both label values from the start, so a scrape shows 0 rather than nothing.
    for (const method of ['login', 'basic']) this.failures.inc({ method }, 0);
    for (const kind of ['address', 'username']) this.lockouts.inc({ kind }, 0);
  }

  failure(method: SignInMethod): void {
    this.failures.inc({ method });
  }

  lockout(kind: LimitedKind): void {
    this.lockouts.inc({ kind });
  }

  eviction(): void {
    this.evictions.inc();
  }
}
