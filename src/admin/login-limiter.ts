// The admin API's brute-force brake: failed sign-ins (/public/login, HTTP Basic) are counted per
// source address and per username; `maxFailures` failures of one of them within `window` lock it
// for `lockout`, during which its sign-ins are answered 429 without the password being checked.
// A successful sign-in resets no counter (failures only expire with their window), so a valid
// login from one address never buys another address, or the same one, more guesses.
// Memory is bounded: at most MAX_TRACKED addresses and usernames are tracked; at the bound,
// entries whose window and lockout are over go first, then the one used longest ago (its count,
// and a lockout it may still be serving, are forgotten; each such drop is counted).
// Owned by the main thread (the admin server's).

/** Addresses plus usernames tracked at most (about 100 bytes each). */
export const MAX_TRACKED = 10_000;

export interface LoginLimits {
  /** Failures within `windowMs` that lock an address or username; 0: no limit. */
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
}

export type LimitedKind = 'address' | 'username';

export interface Lockout {
  kind: LimitedKind;
  /** The address or the username. */
  key: string;
  until: number;
}

interface Entry {
  failures: number;
  windowStart: number;
  lockedUntil: number;
  /** Attempts let through and not yet ended. */
  pending: number;
}

export class LoginLimiter {
  private readonly entries = new Map<string, Entry>();

  /** `onEvict`: called for each entry dropped at the bound while its window or lockout still ran. */
  constructor(private readonly limits: LoginLimits, private readonly onEvict: () => void = () => {}, private readonly maxTracked = MAX_TRACKED) {}

  /**
   * Starts a sign-in attempt: the lockout in force for the address or the username (the later
   * one), or null when the attempt may go on; then `end` must follow. Attempts still being
   * checked count towards the limit, so a burst sent in parallel gets no more guesses than one
   * sent in sequence (one beyond the limit is refused for a second: `until` is now + 1 s).
   */
  begin(address: string, username: string, now = Date.now()): Lockout | null {
    if (this.limits.maxFailures === 0) return null;
    let found: Lockout | null = null;
    for (const [kind, key] of keysOf(address, username)) {
      const e = this.entries.get(entryKey(kind, key));
      if (!e) continue;
      let until = 0;
      if (e.lockedUntil > now) until = e.lockedUntil;
      else if (this.current(e, now) + e.pending >= this.limits.maxFailures) until = now + 1000;
      if (until > 0 && (!found || until > found.until)) found = { kind, key, until };
    }
    if (found) return found;
    for (const [kind, key] of keysOf(address, username)) this.touch(entryKey(kind, key), now).pending += 1;
    return null;
  }

  /** Ends an attempt `begin` let through; a failure is counted against the address and the
   * username. Answers the lockouts it starts. */
  end(address: string, username: string, succeeded: boolean, now = Date.now()): Lockout[] {
    if (this.limits.maxFailures === 0) return [];
    const started: Lockout[] = [];
    for (const [kind, key] of keysOf(address, username)) {
      const e = this.touch(entryKey(kind, key), now);
      e.pending = Math.max(0, e.pending - 1);
      if (succeeded) continue;
      if (now - e.windowStart >= this.limits.windowMs) {
        e.failures = 0;
        e.windowStart = now;
      }
      e.failures += 1;
      if (e.failures >= this.limits.maxFailures) {
        e.lockedUntil = now + this.limits.lockoutMs;
        e.failures = 0;
        e.windowStart = now;
        started.push({ kind, key, until: e.lockedUntil });
      }
    }
    return started;
  }

  /** Failures within the current window. */
  private current(e: Entry, now: number): number {
    return now - e.windowStart >= this.limits.windowMs ? 0 : e.failures;
  }

  /** The entry of `k`, created when missing, moved to the end (the map is ordered by last use). */
  private touch(k: string, now: number): Entry {
    let e = this.entries.get(k);
    if (e) this.entries.delete(k);
    else {
      this.makeRoom(now);
      e = { failures: 0, windowStart: now, lockedUntil: 0, pending: 0 };
    }
    this.entries.set(k, e);
    return e;
  }

  get size(): number {
    return this.entries.size;
  }

  private makeRoom(now: number): void {
    if (this.entries.size < this.maxTracked) return;
    for (const [k, e] of this.entries) {
      if (e.pending === 0 && e.lockedUntil <= now && now - e.windowStart >= this.limits.windowMs) this.entries.delete(k);
    }
    while (this.entries.size >= this.maxTracked) {
      this.entries.delete(this.entries.keys().next().value!);
      this.onEvict();
    }
  }
}

function keysOf(address: string, username: string): [LimitedKind, string][] {
  return [['address', address], ['username', username]];
}

function entryKey(kind: LimitedKind, key: string): string {
  return `${kind === 'address' ? 'a' : 'u'}:${key}`;
}
