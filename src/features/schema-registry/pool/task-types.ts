// What a worker's schema pool (worker/schema-pool.ts) runs: a batch of schema checks or a batch of
// rule evaluations; task.ts dispatches on `kind`.
import type { CheckTask } from './check-task.ts';
import type { RuleTask } from './rule-task.ts';

export type PoolTask = CheckTask | RuleTask;
