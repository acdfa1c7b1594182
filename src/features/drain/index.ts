// What the drain feature offers the rest of the broker: the node's drain state (health, the stop).
export { drain } from './feature.ts';
export type { Drain } from './drain.ts';
export type { DrainStatus, DrainState, NodeLoad } from './types.ts';
