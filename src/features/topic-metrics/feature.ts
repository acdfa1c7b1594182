// The topic metrics feature: per configured topic filter, the messages and bytes received and
// sent, the dropped ones and the QoS mix, with rates. Filters from the configuration
// (topicMetrics.filters) and the admin API (stored, replicated across a cluster), bounded by
// topicMetrics.max, sent to every worker. The counting happens on the workers
// (worker-topic-metrics.ts); Prometheus reads it through the workers' metrics snapshot.
import type { Feature } from '../feature.ts';
import { registerTopicMetricsMetrics } from './metrics.ts';
import { TopicMetrics, TOPIC_METRICS_KIND } from './topic-metrics.ts';
import { topicMetricsRoutes } from './routes.ts';

export const topicMetrics: Feature<TopicMetrics> = {
  name: 'topic-metrics',
  async start(ctx) {
    const tm = new TopicMetrics(ctx);
    await tm.load();
    ctx.replicate(TOPIC_METRICS_KIND, (id, doc) => tm.applyStored(id, doc));
    registerTopicMetricsMetrics(ctx.registry, tm);
    return { api: tm, routes: () => topicMetricsRoutes(tm), close: () => tm.close() };
  },
};
