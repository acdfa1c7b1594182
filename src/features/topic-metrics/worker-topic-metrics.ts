// WorkerTopicMetrics: topic metrics' half on a worker thread (the engine's TopicMeter). Owns this
// worker's counters per configured filter (a Float64Array, COUNTS numbers per filter, read by the
// 'topicMetrics.read' operation and the metrics snapshot). Without filters `on` is false and the
// data path asks nothing. With filters, the filters matching a topic are found once per topic in
// a bounded cache (the trie walked on a miss); a fan-out of one message to many subscribers asks
// for the same string again and hits the last answer at once. Nothing is allocated per message
// but on a cache miss.
import type { TopicMeter } from '../../engine/session/meters.ts';
import { FilterTrie } from './filter-trie.ts';
import { BYTES_IN, BYTES_OUT, COUNTS, DROPPED, IN, OUT, type TopicMetricsWorkerState, type WorkerTopicCounts } from './types.ts';

/** Topics whose matching filters are remembered (cleared whole when full). */
export const MATCH_CACHE_SIZE = 4096;
const NONE: readonly number[] = [];

export class WorkerTopicMetrics implements TopicMeter {
  on = false;
  private filters: string[] = [];
  private trie = new FilterTrie([]);
  private counts = new Float64Array(0);
  private cache = new Map<string, readonly number[]>();
  private lastTopic = '';
  private lastHits: readonly number[] = NONE;
  private readonly hits: number[] = [];

  setState(s: TopicMetricsWorkerState): void {
    // A filter kept through the change keeps its counts.
    const next = new Float64Array(s.filters.length * COUNTS);
    const before = new Map(this.filters.map((f, i) => [f, i]));
    s.filters.forEach((f, i) => {
      const j = before.get(f);
      if (j !== undefined) next.set(this.counts.subarray(j * COUNTS, (j + 1) * COUNTS), i * COUNTS);
    });
    this.filters = [...s.filters];
    this.counts = next;
    this.trie = new FilterTrie(this.filters);
    this.cache.clear();
    this.lastTopic = '';
    this.lastHits = NONE;
    this.on = this.filters.length > 0;
  }

  /** The filters matching `topic` (indexes into the counters). */
  private match(topic: string): readonly number[] {
    if (topic === this.lastTopic) return this.lastHits;
    let hits = this.cache.get(topic);
    if (hits === undefined) {
      const h = this.hits;
      h.length = 0;
      this.trie.match(topic, h);
      hits = h.length === 0 ? NONE : [...h];
      if (this.cache.size >= MATCH_CACHE_SIZE) this.cache.clear();
      this.cache.set(topic, hits);
    }
    this.lastTopic = topic;
    this.lastHits = hits;
    return hits;
  }

  received(topic: string, qos: 0 | 1 | 2, bytes: number): void {
    const hits = this.match(topic);
    const c = this.counts;
    for (let k = 0; k < hits.length; k++) {
      const base = hits[k] * COUNTS;
      c[base + IN + qos]++;
      c[base + BYTES_IN] += bytes;
    }
  }

  sent(topic: string, qos: 0 | 1 | 2, bytes: number): void {
    const hits = this.match(topic);
    const c = this.counts;
    for (let k = 0; k < hits.length; k++) {
      const base = hits[k] * COUNTS;
      c[base + OUT + qos]++;
      c[base + BYTES_OUT] += bytes;
    }
  }

  dropped(topic: string): void {
    const hits = this.match(topic);
    const c = this.counts;
    for (let k = 0; k < hits.length; k++) c[hits[k] * COUNTS + DROPPED]++;
  }

  /** This worker's counts (a copy). */
  read(): WorkerTopicCounts {
    return { filters: [...this.filters], counts: Array.from(this.counts) };
  }

  /** Sets the counts of `filter` to zero (false: not a filter here). */
  reset(filter: string): boolean {
    const i = this.filters.indexOf(filter);
    if (i === -1) return false;
    this.counts.fill(0, i * COUNTS, (i + 1) * COUNTS);
    return true;
  }
}
