// Rule operations on one worker: install (add or replace, compiled here), remove, keep only a
// set (after a restart), and read the per-rule counters for /rule/runtime and the metrics.
import type { RuleCounters, RuleSpec } from '../../rules/worker-rules.ts';
import { OpError, type Op } from './types.ts';

export const ruleOps = {
  'rules.install'(args: { rules: RuleSpec[]; only?: boolean }, env): void {
    if (args.only) env.rules.retain(new Set(args.rules.map((r) => r.id)));
    const errors = env.rules.install(args.rules);
    // The main thread compiled the same SQL before it sent it: a failure here is a bug.
    if (errors.length) throw new OpError('INTERNAL_ERROR', errors.map((e) => `${e.id}: ${e.error}`).join('; '));
  },
  'rules.remove'(args: { id: string }, env): boolean {
    return env.rules.remove(args.id);
  },
  'rules.runtime'(_args: unknown, env): Record<string, RuleCounters> {
    return env.rules.counters();
  },
} satisfies Record<string, Op>;
