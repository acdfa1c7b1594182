// Owns turning the node's Prometheus series (prom-client's JSON of /prometheus, summed over the
// threads) into OpenTelemetry metric data: a counter is a cumulative monotonic sum, a gauge a
// gauge, a histogram a histogram (its cumulative `le` buckets made per-bucket counts, the finite
// bounds its explicit boundaries), the labels attributes. Names and descriptions are the
// Prometheus ones. The sums start at the process's start (the counters' zero). Main thread, in
// the lazily loaded SDK part.
import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, type DataPoint, type Histogram, type MetricData, type MetricProducer, type CollectionResult } from '@opentelemetry/sdk-metrics';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Resource } from '@opentelemetry/resources';

export type PromSeries = MetricObjectWithValues<MetricValue<string>>;

/** The instrumentation scope of the bridged series. */
export const BRIDGE_SCOPE = { name: 'spindle.prometheus' };

/** `ms` (milliseconds since the epoch, fractional) as OpenTelemetry's [seconds, nanoseconds]. */
export function hrTimeOf(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** The unit of a Prometheus name's suffix (UCUM, as OpenTelemetry writes units); '' for none. */
function unitOf(name: string): string {
  const base = name.replace(/_total$/, '');
  if (base.endsWith('_seconds')) return 's';
  if (base.endsWith('_bytes')) return 'By';
  if (base.endsWith('_percent')) return '%';
  return '';
}

function attributesOf(labels: Partial<Record<string, string | number>> | undefined, skip?: string): Attributes {
  const out: Attributes = {};
  if (!labels) return out;
  for (const [k, v] of Object.entries(labels)) if (k !== skip && v !== undefined) out[k] = String(v);
  return out;
}

/**
 * The OpenTelemetry form of `series` at `end`; sums start at `start`. Summaries (none today) have
 * no OpenTelemetry data point type of the SDK and are left out, as are metrics without samples.
 */
export function toMetricData(series: readonly PromSeries[], start: HrTime, end: HrTime): MetricData[] {
  const out: MetricData[] = [];
  for (const m of series) {
    const descriptor = { name: m.name, description: m.help, unit: unitOf(m.name), valueType: ValueType.DOUBLE };
    const type = String(m.type);
    if (type === 'counter' || type === 'gauge') {
      if (m.values.length === 0) continue;
      const dataPoints: DataPoint<number>[] = m.values.map((v) => ({ startTime: start, endTime: end, attributes: attributesOf(v.labels), value: v.value }));
      if (type === 'counter') {
        out.push({ descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.SUM, isMonotonic: true, dataPoints });
      } else {
        out.push({ descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints });
      }
    } else if (type === 'histogram') {
      const dataPoints = histogramPoints(m, start, end);
      if (dataPoints.length === 0) continue;
      out.push({ descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.HISTOGRAM, dataPoints });
    }
  }
  return out;
}

interface HistogramParts {
  attributes: Attributes;
  /** [upper bound, cumulative count] of each bucket; +Inf as Infinity. */
  buckets: [number, number][];
  sum: number;
  count: number;
}

/** A histogram's samples (name_bucket{le}, name_sum, name_count) grouped by their other labels. */
function histogramPoints(m: PromSeries, start: HrTime, end: HrTime): DataPoint<Histogram>[] {
  const groups = new Map<string, HistogramParts>();
  const group = (labels: PromSeries['values'][number]['labels']): HistogramParts => {
    const attributes = attributesOf(labels, 'le');
    const key = JSON.stringify(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { attributes, buckets: [], sum: 0, count: 0 }));
    return g;
  };
  for (const v of m.values) {
    const which = (v as { metricName?: string }).metricName ?? '';
    if (which.endsWith('_bucket')) {
      const le = v.labels?.le;
      group(v.labels).buckets.push([le === '+Inf' ? Infinity : Number(le), v.value]);
    } else if (which.endsWith('_sum')) {
      group(v.labels).sum = v.value;
    } else if (which.endsWith('_count')) {
      group(v.labels).count = v.value;
    }
  }
  const points: DataPoint<Histogram>[] = [];
  for (const g of groups.values()) {
    g.buckets.sort((a, b) => a[0] - b[0]);
    const boundaries: number[] = [];
    const counts: number[] = [];
    let previous = 0;
    for (const [bound, cumulative] of g.buckets) {
      if (bound !== Infinity) boundaries.push(bound);
      counts.push(Math.max(0, cumulative - previous));
      previous = cumulative;
    }
    // Without a +Inf bucket, the observations above the last bound are those the count has more.
    if (g.buckets.length === 0 || g.buckets[g.buckets.length - 1][0] !== Infinity) counts.push(Math.max(0, g.count - previous));
    points.push({ startTime: start, endTime: end, attributes: g.attributes, value: { buckets: { boundaries, counts }, sum: g.sum, count: g.count } });
  }
  return points;
}

/**
 * The SDK's MetricProducer of the node's series: a PeriodicExportingMetricReader asks it at each
 * export. A collection that fails (a worker not answering) is counted and rethrown: that export
 * is skipped, the next one covers it.
 */
export class PrometheusProducer implements MetricProducer {
  constructor(
    private readonly series: () => Promise<PromSeries[]>,
    private readonly resource: Resource,
    private readonly startMs: number,
    private readonly onCollectFailure: (err: unknown) => void,
  ) {}

  async collect(): Promise<CollectionResult> {
    let series: PromSeries[];
    try {
      series = await this.series();
    } catch (err) {
      this.onCollectFailure(err);
      throw err;
    }
    const metrics = toMetricData(series, hrTimeOf(this.startMs), hrTimeOf(Date.now()));
    return { resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: BRIDGE_SCOPE, metrics }] }, errors: [] };
  }
}
