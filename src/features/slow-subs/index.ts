// Slow subscribers (EMQX's slow_subs): see docs/features/slow-subscribers.md.
export { slowSubs } from './feature.ts';
export type { SlowSubs } from './slow-subs.ts';
export { WorkerSlowSubs } from './worker-slow-subs.ts';
export { STATS_TYPES, type SlowSubsWorkerState } from './types.ts';
