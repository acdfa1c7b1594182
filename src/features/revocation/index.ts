// What the revocation feature offers the rest of the broker.
export { revocation } from './feature.ts';
export type { Stapler, StapleStatus } from './stapler.ts';
