// The rule engine's Prometheus metrics, with a `rule` label (and `action`, `type` for actions):
// the same counters /rule/runtime answers, read from the workers and the pipelines when scraped
// (one read per scrape, shared by every metric below).
import { Counter, Gauge, type Registry } from 'prom-client';

import type { RuleManager, RuleRuntime } from './manager.ts';

export function registerRuleMetrics(registry: Registry, rules: RuleManager): void {
  let pending: Promise<RuleRuntime[]> | null = null;
  let at = 0;
  // Every metric's collect asks; within one scrape they share one read.
  const read = (): Promise<RuleRuntime[]> => {
    const now = Date.now();
    if (pending === null || now - at > 500) {
      at = now;
      pending = rules.allRuntimes();
    }
    return pending;
  };
  const perRule = (name: string, help: string, value: (r: RuleRuntime) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['rule'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const r of await read()) this.inc({ rule: r.id }, value(r));
      },
    });
  perRule('spindle_rule_matched_total', 'Messages and events a rule FROM matched.', (r) => r.matched);
  perRule('spindle_rule_passed_total', 'Matches that passed WHERE and produced an output.', (r) => r.passed);
  perRule('spindle_rule_filtered_total', 'Matches WHERE filtered out.', (r) => r.filtered);
  perRule('spindle_rule_failed_total', 'Matches whose evaluation failed (a function refused its input).', (r) => r.failed);
  const perAction = (name: string, help: string, value: (a: RuleRuntime['actions'][number]) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['rule', 'action', 'type'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const r of await read()) for (const a of r.actions) this.inc({ rule: r.id, action: String(a.index), type: a.type }, value(a));
      },
    });
  perAction('spindle_rule_action_success_total', 'Outputs an action wrote (or republished).', (a) => a.success);
  perAction('spindle_rule_action_failed_total', 'Outputs an action failed to write (refused by the target, or a republish refused).', (a) => a.failed);
  perAction('spindle_rule_action_dropped_total', 'Outputs dropped past the action queue bound (rules.actionQueueLimit) while its target was down or slow.', (a) => a.dropped);
  perAction('spindle_rule_action_retries_total', 'Batch retries after transient failures.', (a) => a.retries);
  new Gauge({
    name: 'spindle_rule_action_queue_depth',
    help: 'Outputs waiting in an action queue.',
    labelNames: ['rule', 'action', 'type'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await read()) for (const a of r.actions) this.set({ rule: r.id, action: String(a.index), type: a.type }, a.queued);
    },
  });
}
