// What the scripts feature offers the rest of the broker.
export { scripts } from './feature.ts';
export type { ProcessorManager } from './manager.ts';
