// What topic metrics offer the rest of the broker: the feature, its worker half, its state's type
// and its Prometheus series of a worker snapshot.
export { topicMetrics } from './feature.ts';
export type { TopicMetrics } from './topic-metrics.ts';
export { WorkerTopicMetrics } from './worker-topic-metrics.ts';
export { topicMetricsSeries } from './series.ts';
export type { TopicMetricsWorkerState, WorkerTopicCounts } from './types.ts';
