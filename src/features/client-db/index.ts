// What the built-in client database offers the node and the other features.
export { clientDb } from './feature.ts';
export type { ClientDbManager } from './manager.ts';
