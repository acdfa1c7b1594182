// A schema pool thread's task handler (piscina runs it): a batch of schema checks (check-batch.ts)
// or of rule evaluations (rule-batch.ts), by the task's kind.
import { checkBatch } from './check-batch.ts';
import type { CheckResult } from './check-task.ts';
import { ruleBatch } from './rule-batch.ts';
import type { RuleResult } from './rule-task.ts';
import type { PoolTask } from './task-types.ts';

export function schemaTask(task: PoolTask): CheckResult | RuleResult {
  return task.kind === 'check' ? checkBatch(task) : ruleBatch(task);
}
