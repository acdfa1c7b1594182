// What the schema registry offers the rest of the broker.
export { schemaRegistry } from './feature.ts';
export type { SchemaRegistry } from './registry.ts';
export type { SchemaDoc, CheckDoc, SchemaType, SchemaWorkerState } from './types.ts';
