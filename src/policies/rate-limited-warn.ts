// Owns keeping a policy's failure log readable when its database is down: at most one warn line per
// interval (10 s), carrying `count`, the failures since the previous line (the suppressed ones
// and this one). The first failure is logged at once. Failures are still answered and counted
// by the caller; only their lines are thinned.
import type { LogFields, Logger } from '../log/index.ts';

export const WARN_INTERVAL_MS = 10_000;

export class RateLimitedWarn {
  private lastAt = -Infinity;
  private pending = 0;

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = WARN_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  warn(msg: string, fields: LogFields = {}): void {
    this.pending++;
    const t = this.now();
    if (t - this.lastAt < this.intervalMs) return;
    this.lastAt = t;
    const count = this.pending;
    this.pending = 0;
    this.log.warn(msg, { ...fields, count });
  }
}
