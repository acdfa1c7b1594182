// What the tracing feature offers the rest of the broker.
export { tracing, type Tracing } from './feature.ts';
export type { LogTopicDoc } from './log-topic-manager.ts';
