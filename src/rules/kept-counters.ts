// What a rule has counted while it ran, kept across a stop: the workers forget a rule they remove
// and its action pipelines are closed, so the manager keeps the sums (disable then enable, a
// change from another node, an action removed) and adds what runs now to them. Only deleting the
// rule forgets them; the API has no reset.
import type { ActionStats } from './actions/pipeline.ts';
import type { RuleCounters } from './worker-rules.ts';

export const NO_COUNTS: Readonly<RuleCounters> = Object.freeze({ matched: 0, passed: 0, filtered: 0, failed: 0, republished: 0, republishFailed: 0, lastError: null, lastErrorAt: 0 });

export interface KeptCounters {
  rule: RuleCounters;
  /** Per action (by index): the pipeline's stats when it was closed; null for republish (the
   * workers count it, in `rule`). */
  actions: (ActionStats | null)[];
}

export function addRuleCounters(a: Readonly<RuleCounters>, b: Readonly<RuleCounters> | undefined): RuleCounters {
  if (!b) return { ...a };
  const newer = b.lastErrorAt > a.lastErrorAt ? b : a;
  return {
    matched: a.matched + b.matched,
    passed: a.passed + b.passed,
    filtered: a.filtered + b.filtered,
    failed: a.failed + b.failed,
    republished: a.republished + b.republished,
    republishFailed: a.republishFailed + b.republishFailed,
    lastError: newer.lastError,
    lastErrorAt: newer.lastErrorAt,
  };
}

/** Kept stats plus a running pipeline's (`queued` is the running one's: nothing kept waits). */
export function addActionStats(kept: ActionStats | null | undefined, now: ActionStats | undefined): ActionStats | undefined {
  if (!kept) return now;
  if (!now) return { ...kept, queued: 0 };
  const newer = (now.lastErrorAt ?? '') > (kept.lastErrorAt ?? '') ? now : kept;
  return {
    success: kept.success + now.success,
    failed: kept.failed + now.failed,
    dropped: kept.dropped + now.dropped,
    queued: now.queued,
    retries: kept.retries + now.retries,
    batches: kept.batches + now.batches,
    lastError: newer.lastError,
    lastErrorAt: newer.lastErrorAt,
  };
}
