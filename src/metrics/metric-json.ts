// Metrics as prom-client's JSON form (what Registry.getMetricsAsJSON() answers and
// AggregatorRegistry.aggregate() takes), built from plain counters without metric objects.
// A MetricSet groups samples by metric name; histograms become _bucket/_sum/_count samples.
import type { Aggregator } from 'prom-client';

export type MetricKind = 'counter' | 'gauge' | 'histogram';
export type Labels = Record<string, string | number>;

export interface MetricSample {
  value: number;
  labels: Labels;
  /** For histograms: name_bucket, name_sum, name_count. */
  metricName?: string;
}

export interface MetricJson {
  name: string;
  help: string;
  type: MetricKind;
  aggregator: Aggregator;
  values: MetricSample[];
}

export class MetricSet {
  private readonly byName = new Map<string, MetricJson>();

  /** A monotonically increasing total (Prometheus convention: the name ends in _total). */
  counter(name: string, help: string, value: number, labels: Labels = {}): this {
    this.metric(name, help, 'counter', 'sum').values.push({ value, labels });
    return this;
  }

  /** `aggregator`: how the values of several threads combine (sum: per-thread parts of a whole). */
  gauge(name: string, help: string, value: number, labels: Labels = {}, aggregator: Aggregator = 'sum'): this {
    this.metric(name, help, 'gauge', aggregator).values.push({ value, labels });
    return this;
  }

  /** Declares a metric that may have no sample (HELP and TYPE are still written). */
  declare(name: string, help: string, type: MetricKind, aggregator: Aggregator = 'sum'): this {
    this.metric(name, help, type, aggregator);
    return this;
  }

  /**
   * `counts[i]`: observations <= bounds[i] and > bounds[i-1] (not cumulative); the last entry
   * counts those above the last bound. `sum` is the sum of the observations.
   */
  histogram(name: string, help: string, bounds: readonly number[], counts: readonly number[], sum: number, labels: Labels = {}): this {
    const m = this.metric(name, help, 'histogram', 'sum');
    let cumulative = 0;
    for (let i = 0; i < bounds.length; i++) {
      cumulative += counts[i] ?? 0;
      m.values.push({ value: cumulative, labels: { ...labels, le: bounds[i] }, metricName: `${name}_bucket` });
    }
    cumulative += counts[bounds.length] ?? 0;
    m.values.push({ value: cumulative, labels: { ...labels, le: '+Inf' }, metricName: `${name}_bucket` });
    m.values.push({ value: sum, labels, metricName: `${name}_sum` });
    m.values.push({ value: cumulative, labels, metricName: `${name}_count` });
    return this;
  }

  list(): MetricJson[] {
    return [...this.byName.values()];
  }

  private metric(name: string, help: string, type: MetricKind, aggregator: Aggregator): MetricJson {
    let m = this.byName.get(name);
    if (!m) this.byName.set(name, (m = { name, help, type, aggregator, values: [] }));
    else if (m.type !== type) throw new Error(`metric ${name} is a ${m.type}, not a ${type}`);
    return m;
  }
}
