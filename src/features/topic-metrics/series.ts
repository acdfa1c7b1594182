// Topic metrics' per-filter Prometheus series, from one worker's metrics snapshot: the collector
// sums them across the workers with its aggregation, like every worker counter.
import type { MetricSet } from '../../metrics/metric-json.ts';
import { BYTES_IN, BYTES_OUT, COUNTS, DROPPED, IN, OUT, type WorkerTopicCounts } from './types.ts';

const QOS = ['0', '1', '2'] as const;

/** One worker's per-filter counters as metric JSON (declared always; no sample without filters). */
export function topicMetricsSeries(t: WorkerTopicCounts | null, set: MetricSet): void {
  set.declare('spindle_topic_messages_total', 'PUBLISH messages per topic metrics filter (docs/features/topic-metrics.md), by direction (in: accepted from clients, out: written to subscribers, resends included) and QoS.', 'counter');
  set.declare('spindle_topic_bytes_total', 'Payload bytes of the messages of spindle_topic_messages_total, by filter and direction.', 'counter');
  set.declare('spindle_topic_messages_dropped_total', 'Messages of a topic metrics filter not delivered: to no subscriber at all, or dropped for one subscriber (queue full, expired, too large, slow consumer, QoS 0 offline, read denied).', 'counter');
  if (t === null) return;
  const c = t.counts;
  t.filters.forEach((filter, i) => {
    const b = i * COUNTS;
    for (const q of QOS) {
      set.counter('spindle_topic_messages_total', '', c[b + IN + Number(q)], { filter, direction: 'in', qos: q });
      set.counter('spindle_topic_messages_total', '', c[b + OUT + Number(q)], { filter, direction: 'out', qos: q });
    }
    set.counter('spindle_topic_bytes_total', '', c[b + BYTES_IN], { filter, direction: 'in' });
    set.counter('spindle_topic_bytes_total', '', c[b + BYTES_OUT], { filter, direction: 'out' });
    set.counter('spindle_topic_messages_dropped_total', '', c[b + DROPPED], { filter });
  });
}
