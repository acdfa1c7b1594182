// The bridge of the Prometheus series into OpenTelemetry metric data (src/features/otel/
// metric-bridge.ts), from prom-client's own JSON summed by its aggregator as /prometheus does:
// counters as cumulative monotonic sums, gauges as gauges, histograms with per-bucket counts and
// their finite bounds, labels as attributes; what has no OpenTelemetry form is left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, Summary, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { AggregationTemporality, DataPointType, type HistogramMetricData, type SumMetricData, type GaugeMetricData } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';

import { BRIDGE_SCOPE, PrometheusProducer, hrTimeOf, toMetricData } from '../../src/features/otel/metric-bridge.ts';

type Series = MetricObjectWithValues<MetricValue<string>>;

/** Two threads' registries summed, as the collector sums the workers'. */
async function aggregated(): Promise<Series[]> {
  const parts: Series[][] = [];
  for (const n of [1, 2]) {
    const r = new Registry();
    const c = new Counter({ name: 'test_messages_total', help: 'Messages.', labelNames: ['qos'], registers: [r] });
    c.inc({ qos: '0' }, 10 * n);
    c.inc({ qos: '1' }, n);
    new Gauge({ name: 'test_connections', help: 'Connections.', registers: [r] }).set(5 * n);
    new Gauge({ name: 'test_never_set', help: 'No sample.', labelNames: ['x'], registers: [r] });
    const h = new Histogram({ name: 'test_latency_seconds', help: 'Latency.', buckets: [0.01, 0.1, 1], labelNames: ['op'], registers: [r] });
    h.observe({ op: 'publish' }, 0.005); // <= 0.01
    h.observe({ op: 'publish' }, 0.05); // <= 0.1
    h.observe({ op: 'publish' }, 5 * n); // above every bound
    h.observe({ op: 'connect' }, 0.5);
    new Summary({ name: 'test_summary', help: 'A summary.', registers: [r] }).observe(1);
    parts.push((await r.getMetricsAsJSON()) as Series[]);
  }
  return AggregatorRegistry.aggregate(parts).getMetricsAsJSON() as Promise<Series[]>;
}

test('counters, gauges and histograms of the summed series, labels as attributes', async () => {
  const start = hrTimeOf(1_700_000_000_000);
  const end = hrTimeOf(1_700_000_060_500.25);
  assert.deepEqual(end, [1_700_000_060, 500_250_000]);
  const data = toMetricData(await aggregated(), start, end);
  const byName = new Map(data.map((m) => [m.descriptor.name, m]));
  assert.deepEqual([...byName.keys()].sort(), ['test_connections', 'test_latency_seconds', 'test_messages_total'], 'no summary, no metric without samples');

  const counter = byName.get('test_messages_total') as SumMetricData;
  assert.equal(counter.dataPointType, DataPointType.SUM);
  assert.equal(counter.isMonotonic, true);
  assert.equal(counter.aggregationTemporality, AggregationTemporality.CUMULATIVE);
  assert.equal(counter.descriptor.description, 'Messages.');
  assert.deepEqual(counter.dataPoints.map((p) => [p.attributes, p.value]).sort((a, b) => String((a[0] as { qos: string }).qos).localeCompare(String((b[0] as { qos: string }).qos))), [[{ qos: '0' }, 30], [{ qos: '1' }, 3]]);
  assert.deepEqual(counter.dataPoints[0].startTime, start);
  assert.deepEqual(counter.dataPoints[0].endTime, end);

  const gauge = byName.get('test_connections') as GaugeMetricData;
  assert.equal(gauge.dataPointType, DataPointType.GAUGE);
  assert.deepEqual(gauge.dataPoints.map((p) => p.value), [15]);
  assert.equal(gauge.descriptor.unit, '');

  const histogram = byName.get('test_latency_seconds') as HistogramMetricData;
  assert.equal(histogram.dataPointType, DataPointType.HISTOGRAM);
  assert.equal(histogram.descriptor.unit, 's');
  const publish = histogram.dataPoints.find((p) => p.attributes.op === 'publish')!;
  assert.deepEqual(publish.attributes, { op: 'publish' }, 'le is a bound, not an attribute');
  assert.deepEqual(publish.value.buckets, { boundaries: [0.01, 0.1, 1], counts: [2, 2, 0, 2] });
  assert.equal(publish.value.count, 6);
  assert.ok(Math.abs(publish.value.sum! - (0.005 + 0.05 + 5 + 0.005 + 0.05 + 10)) < 1e-9);
  const connect = histogram.dataPoints.find((p) => p.attributes.op === 'connect')!;
  assert.deepEqual(connect.value.buckets.counts, [0, 0, 2, 0]);
  assert.equal(connect.value.count, 2);
});

test('the producer answers the series under its scope and resource; a failed collection is reported and rethrown', async () => {
  const resource = resourceFromAttributes({ 'service.name': 'x' });
  const series = await aggregated();
  const producer = new PrometheusProducer(async () => series, resource, Date.now() - 1000, () => assert.fail('no failure'));
  const { resourceMetrics, errors } = await producer.collect();
  assert.deepEqual(errors, []);
  assert.equal(resourceMetrics.resource, resource);
  assert.deepEqual(resourceMetrics.scopeMetrics.map((s) => s.scope), [BRIDGE_SCOPE]);
  assert.equal(resourceMetrics.scopeMetrics[0].metrics.length, 3);

  const failures: unknown[] = [];
  const failing = new PrometheusProducer(async () => {
    throw new Error('worker 1 did not answer');
  }, resource, 0, (err) => failures.push(err));
  await assert.rejects(failing.collect(), /worker 1 did not answer/);
  assert.equal(failures.length, 1);
});
