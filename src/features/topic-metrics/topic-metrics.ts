// TopicMetrics: topic metrics' main-thread half. Owns the configured topic filters: those of the
// file (topicMetrics.filters) and those created through the admin API (kept in the store,
// replicated to the cluster's nodes, a reset too), bounded by topicMetrics.max; sends the list to
// every worker (WorkerStates.topicMetrics); reads the workers' counts, of every node of a cluster,
// sums them and keeps a few samples for the rates (Prometheus has each node's own: series.ts).
import type { FeatureContext } from '../feature.ts';
import { DomainError } from '../../errors/domain-error.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import type { MissingNode } from '../../cluster/admin-ops.ts';
import { BYTES_IN, BYTES_OUT, COUNTS, DROPPED, IN, OUT, type StoredTopicMetric, type TopicFigures, type TopicMetric } from './types.ts';

export const TOPIC_METRICS_KIND = 'topic-metric';
/** The rates are over this window (sliding), sampled this often while any filter is configured. */
export const RATE_WINDOW_MS = 30_000;
export const SAMPLE_INTERVAL_MS = 5_000;

type Host = Pick<FeatureContext, 'config' | 'store' | 'log' | 'setWorkerState' | 'workers' | 'cluster'>;

/** An answer for the cluster: the running nodes that did not answer in time (null: no cluster). */
export interface ClusterAnswer<T> {
  value: T;
  missing: MissingNode[] | null;
}

interface Entry extends StoredTopicMetric {
  source: 'config' | 'api';
}

interface Sample {
  at: number;
  totals: Map<string, number[]>;
}

export class TopicMetrics {
  private readonly entries = new Map<string, Entry>();
  private samples: Sample[] = [];
  private readonly timer: NodeJS.Timeout;
  /** Creations refused past topicMetrics.max (spindle_topic_metrics_refused_total). */
  refused = 0;
  /** Changes run one at a time, so the workers see them in order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: Host) {
    const at = new Date().toISOString();
    for (const filter of host.config.topicMetrics.filters) this.entries.set(filter, { filter, createdAt: at, resetAt: at, source: 'config' });
    this.timer = setInterval(() => void this.sample(), SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  get max(): number {
    return this.host.config.topicMetrics.max;
  }

  get size(): number {
    return this.entries.size;
  }

  async load(): Promise<void> {
    for (const { doc } of await this.host.store.listAdmin<StoredTopicMetric>(TOPIC_METRICS_KIND)) {
      if (this.entries.get(doc.filter)?.source === 'config') continue;
      this.entries.set(doc.filter, { ...doc, source: 'api' });
    }
    this.send();
  }

  close(): void {
    clearInterval(this.timer);
  }

  async list(): Promise<ClusterAnswer<TopicMetric[]>> {
    const { sums, missing } = await this.totals();
    return { value: [...this.entries.values()].map((e) => this.view(e, sums)), missing };
  }

  async get(filter: string): Promise<ClusterAnswer<TopicMetric>> {
    const e = this.entry(filter);
    const { sums, missing } = await this.totals();
    return { value: this.view(e, sums), missing };
  }

  create(filter: unknown): Promise<TopicMetric> {
    return this.serial(async () => {
      if (typeof filter !== 'string') throw new DomainError('INVALID_PARAMETER', 'filter: expected a topic filter', { field: 'filter' });
      const problem = topicFilterProblem(filter);
      if (problem) throw new DomainError('INVALID_PARAMETER', `filter: ${problem}`, { field: 'filter' });
      if (this.entries.has(filter)) throw new DomainError('CONFLICT', `filter: topic metrics for ${filter} exist already`, { field: 'filter' });
      if (this.entries.size >= this.max) {
        this.refused++;
        throw new DomainError('CONFLICT', `filter: at most ${this.max} topic metrics (topicMetrics.max)`, { field: 'filter' });
      }
      const at = new Date().toISOString();
      const doc: StoredTopicMetric = { filter, createdAt: at, resetAt: at };
      await this.host.store.putAdmin(TOPIC_METRICS_KIND, filter, doc);
      this.entries.set(filter, { ...doc, source: 'api' });
      this.send();
      this.host.log.info('topic metrics created', { filter });
      return this.view(this.entries.get(filter)!, new Map());
    });
  }

  remove(filter: string): Promise<void> {
    return this.serial(async () => {
      const e = this.entry(filter);
      if (e.source === 'config') throw new DomainError('CONFLICT', `filter: ${filter} is in topicMetrics.filters of the configuration: remove it there`, { field: 'filter' });
      await this.host.store.deleteAdmin(TOPIC_METRICS_KIND, filter);
      this.entries.delete(filter);
      this.send();
      this.host.log.info('topic metrics deleted', { filter });
    });
  }

  /** Sets the counts of `filter` (every one: undefined) to zero on every worker, and on every node
   * of a cluster for the stored ones (their new resetAt is replicated). */
  reset(filter?: string): Promise<void> {
    return this.serial(async () => {
      const targets = filter === undefined ? [...this.entries.values()] : [this.entry(filter)];
      const at = new Date().toISOString();
      for (const e of targets) {
        e.resetAt = at;
        if (e.source === 'api') await this.host.store.putAdmin(TOPIC_METRICS_KIND, e.filter, { filter: e.filter, createdAt: e.createdAt, resetAt: at } satisfies StoredTopicMetric);
        await this.resetWorkers(e.filter);
      }
    });
  }

  /** A stored filter changed on another node (null: deleted there). */
  applyStored(id: string, doc: unknown): Promise<void> {
    return this.serial(async () => {
      const known = this.entries.get(id);
      if (known?.source === 'config') return;
      if (doc === null) {
        if (known === undefined) return;
        this.entries.delete(id);
        this.send();
        return;
      }
      const d = doc as StoredTopicMetric;
      if (typeof d.filter !== 'string' || topicFilterProblem(d.filter) !== undefined) return;
      this.entries.set(id, { filter: d.filter, createdAt: d.createdAt, resetAt: d.resetAt, source: 'api' });
      if (known === undefined) this.send();
      else if (known.resetAt !== d.resetAt) await this.resetWorkers(id);
    });
  }

  /** Every filter's counts (COUNTS numbers each) summed over this node's workers and, in a
   * cluster, every other running node's; `missing`, the nodes that did not answer in time. */
  async totals(): Promise<{ sums: Map<string, number[]>; missing: MissingNode[] | null }> {
    const sums = new Map<string, number[]>();
    const cluster = this.host.cluster;
    if (this.entries.size === 0) return { sums, missing: cluster ? [] : null };
    const [local, remote] = await Promise.all([this.host.workers.callAll('topicMetrics.read'), cluster?.askAll('topicMetrics.read')]);
    const workers = [...local, ...(remote?.answers.flatMap((a) => a.results) ?? [])];
    for (const w of workers) {
      w.filters.forEach((f, i) => {
        let s = sums.get(f);
        if (s === undefined) sums.set(f, (s = new Array<number>(COUNTS).fill(0)));
        for (let k = 0; k < COUNTS; k++) s[k] += w.counts[i * COUNTS + k];
      });
    }
    return { sums, missing: remote?.missing ?? null };
  }

  private async sample(): Promise<void> {
    if (this.entries.size === 0) {
      this.samples = [];
      return;
    }
    try {
      const { sums: totals, missing } = await this.totals();
      // A node missing from it would show as a drop in the rates: the next sample covers it.
      if (missing !== null && missing.length > 0) return;
      const at = Date.now();
      this.samples.push({ at, totals });
      while (this.samples.length > 1 && this.samples[0].at < at - RATE_WINDOW_MS) this.samples.shift();
    } catch (err) {
      // A worker that is restarting answers nothing: the next sample covers it.
      this.host.log.debug('topic metrics sample failed', { err });
    }
  }

  private view(e: Entry, totals: Map<string, number[]>): TopicMetric {
    const t = totals.get(e.filter) ?? new Array<number>(COUNTS).fill(0);
    const rates = this.rates(e.filter, t);
    const figures: TopicFigures = {
      messages: {
        in: { total: t[IN] + t[IN + 1] + t[IN + 2], qos0: t[IN], qos1: t[IN + 1], qos2: t[IN + 2], rate: rates[0] },
        out: { total: t[OUT] + t[OUT + 1] + t[OUT + 2], qos0: t[OUT], qos1: t[OUT + 1], qos2: t[OUT + 2], rate: rates[1] },
        dropped: { total: t[DROPPED], rate: rates[2] },
      },
      bytes: { in: { total: t[BYTES_IN], rate: rates[3] }, out: { total: t[BYTES_OUT], rate: rates[4] } },
    };
    return { filter: e.filter, source: e.source, createdAt: e.createdAt, resetAt: e.resetAt, metrics: figures };
  }

  /** Per second over the window, from the oldest sample in it that has the filter (one created or
   * reset since the oldest sample has its rates from its first sample on): in, out, dropped, bytes
   * in, out. */
  private rates(filter: string, now: number[]): number[] {
    const first = this.samples.find((s) => s.totals.has(filter));
    const then = first?.totals.get(filter);
    const dt = first === undefined ? 0 : (Date.now() - first.at) / 1000;
    if (then === undefined || dt <= 0) return [0, 0, 0, 0, 0];
    const d = (k: number[]) => Math.max(0, k.reduce((n, i) => n + now[i] - then[i], 0)) / dt;
    return [d([IN, IN + 1, IN + 2]), d([OUT, OUT + 1, OUT + 2]), d([DROPPED]), d([BYTES_IN]), d([BYTES_OUT])].map((r) => Math.round(r * 100) / 100);
  }

  private entry(filter: string): Entry {
    const e = this.entries.get(filter);
    if (e === undefined) throw new DomainError('NOT_FOUND', `no topic metrics for ${filter}`, { field: 'filter' });
    return e;
  }

  private async resetWorkers(filter: string): Promise<void> {
    await this.host.workers.callAll('topicMetrics.reset', { filter });
    // The rates start again from the reset.
    for (const s of this.samples) s.totals.delete(filter);
  }

  private send(): void {
    this.host.setWorkerState('topicMetrics', { filters: [...this.entries.keys()] });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
