// Delayed publish ($delayed/{seconds}/{topic}): what the other features and the root may use.
export { delayed } from './feature.ts';
export type { DelayedManager, DelayedSummary } from './manager.ts';
