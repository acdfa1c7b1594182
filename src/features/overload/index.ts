// What the overload feature offers the rest of the broker: the node's overload state and marks.
export { overload } from './feature.ts';
export type { Overload, OverloadStatus } from './overload.ts';
export type { OverloadMarks, WorkerOverloadStatus } from './types.ts';
