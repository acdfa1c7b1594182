// Topic metrics' shared types: what every worker holds, the layout of a worker's counters, and
// what the API answers.

/** WorkerStates.topicMetrics: the configured filters, in order (a worker's counters follow it). */
export interface TopicMetricsWorkerState {
  filters: string[];
}

/** A worker's counters of one filter, in this order (COUNTS numbers per filter). */
export const IN = 0; // + QoS: messages received, QoS 0, 1, 2
export const OUT = 3; // + QoS: messages sent
export const BYTES_IN = 6;
export const BYTES_OUT = 7;
export const DROPPED = 8;
export const COUNTS = 9;

/** What a worker answers ('topicMetrics.read'): its filters and their counts (COUNTS each). */
export interface WorkerTopicCounts {
  filters: string[];
  counts: number[];
}

/** One filter's figures as the API answers them. */
export interface TopicFigures {
  messages: {
    in: { total: number; qos0: number; qos1: number; qos2: number; rate: number };
    out: { total: number; qos0: number; qos1: number; qos2: number; rate: number };
    dropped: { total: number; rate: number };
  };
  bytes: { in: { total: number; rate: number }; out: { total: number; rate: number } };
}

export interface TopicMetric {
  filter: string;
  /** 'config': from topicMetrics.filters (not deleted through the API); 'api': created there. */
  source: 'config' | 'api';
  createdAt: string;
  /** When its counts were last reset (or created). */
  resetAt: string;
  metrics: TopicFigures;
}

/** A stored filter (kind TOPIC_METRICS_KIND, id: the filter). */
export interface StoredTopicMetric {
  filter: string;
  createdAt: string;
  resetAt: string;
}
