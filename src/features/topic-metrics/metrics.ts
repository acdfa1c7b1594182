// Topic metrics in Prometheus, the main thread's part: the count of filters and the refusals
// (the per-filter series come from the workers' snapshots: series.ts).
import { Counter, Gauge, type Registry } from 'prom-client';

import type { TopicMetrics } from './topic-metrics.ts';

export function registerTopicMetricsMetrics(registry: Registry, tm: TopicMetrics): void {
  new Gauge({
    name: 'spindle_topic_metrics_filters',
    help: 'Topic filters with topic metrics (the configuration\'s and the admin API\'s), bounded by topicMetrics.max.',
    registers: [registry],
    collect() {
      this.set(tm.size);
    },
  });
  new Gauge({
    name: 'spindle_topic_metrics_max',
    help: 'topicMetrics.max: topic filters with topic metrics at most.',
    registers: [registry],
    collect() {
      this.set(tm.max);
    },
  });
  new Counter({
    name: 'spindle_topic_metrics_refused_total',
    help: 'Topic metrics creations refused (409) because topicMetrics.max filters had metrics already.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(tm.refused);
    },
  });
}
