// Exclusive subscriptions (EMQX's $exclusive/{filter}): see docs/features/exclusive-subscriptions.md.
export { exclusive } from './feature.ts';
export type { Exclusive } from './types.ts';
