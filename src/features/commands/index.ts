// What the commands feature offers the rest of the broker.
export { commands } from './feature.ts';
export type { CommandManager } from './manager.ts';
