// SlowSubs: slow subscribers' main-thread half. Owns the settings: the configuration's
// (slowSubs.*), replaced by those stored through the admin API (replicated to the cluster's
// nodes); sends them to every worker; merges the workers' records into the top list, those of every
// node of a cluster for the admin API (Prometheus has each node's own).
import type { FeatureContext } from '../feature.ts';
import { DomainError } from '../../errors/domain-error.ts';
import type { MissingNode } from '../../cluster/admin-ops.ts';
import { MAX_TOP_K, MAX_WINDOW, STATS_TYPES, type SlowSubRecord, type SlowSubsSettings } from './types.ts';

export const SLOW_SUBS_KIND = 'slow-subs';
const SETTINGS_ID = 'settings';

type Host = Pick<FeatureContext, 'config' | 'store' | 'log' | 'setWorkerState' | 'workers' | 'cluster'>;

export interface SlowSubsCounters {
  recorded: number;
  evicted: number;
}

export class SlowSubs {
  private current: SlowSubsSettings;
  private source: 'config' | 'api' = 'config';

  constructor(private readonly host: Host) {
    this.current = this.fromConfig();
  }

  async load(): Promise<void> {
    const stored = await this.host.store.getAdmin<SlowSubsSettings>(SLOW_SUBS_KIND, SETTINGS_ID);
    if (stored) this.use(checkSettings(stored, this.current), 'api');
    else this.use(this.current, 'config');
  }

  settings(): SlowSubsSettings & { source: 'config' | 'api' } {
    return { ...this.current, source: this.source };
  }

  /** Changes some settings (the others are kept): stored, on every worker and node. */
  async update(patch: Partial<SlowSubsSettings>): Promise<SlowSubsSettings & { source: 'config' | 'api' }> {
    const next = checkSettings({ ...this.current, ...patch }, this.current);
    await this.host.store.putAdmin(SLOW_SUBS_KIND, SETTINGS_ID, next);
    this.use(next, 'api');
    this.host.log.info('slow subscriber settings changed', { ...next });
    return this.settings();
  }

  /** The settings changed on another node (null: back to the configuration's). */
  applyStored(id: string, doc: unknown): void {
    if (id !== SETTINGS_ID) return;
    if (doc === null) this.use(this.fromConfig(), 'config');
    else this.use(checkSettings(doc, this.current), 'api');
  }

  /** The top list of this node: every worker's records, the slowest first, topK at most. */
  async list(): Promise<SlowSubRecord[]> {
    if (!this.current.enable) return [];
    return this.top(await this.host.workers.callAll('slowSubs.read'));
  }

  /** The top list of the cluster: every node's workers' records (this node's alone without a
   * cluster); `missing`, the running nodes that did not answer in time (null: no cluster). */
  async clusterList(): Promise<{ records: SlowSubRecord[]; missing: MissingNode[] | null }> {
    const cluster = this.host.cluster;
    if (!this.current.enable) return { records: [], missing: cluster ? [] : null };
    const [local, remote] = await Promise.all([this.host.workers.callAll('slowSubs.read'), cluster?.askAll('slowSubs.read')]);
    return { records: this.top([...local, ...(remote?.answers.flatMap((a) => a.results) ?? [])]), missing: remote?.missing ?? null };
  }

  /** The workers' records merged: one per client id and topic (its largest latency), the slowest
   * first, topK at most. */
  private top(workers: readonly { records: readonly SlowSubRecord[] }[]): SlowSubRecord[] {
    const byKey = new Map<string, SlowSubRecord>();
    for (const w of workers) {
      for (const r of w.records) {
        const key = `${r.clientId}\u0000${r.topic}`;
        const known = byKey.get(key);
        if (known === undefined) byKey.set(key, r);
        else byKey.set(key, { ...r, latency: Math.max(r.latency, known.latency), lastUpdate: Math.max(r.lastUpdate, known.lastUpdate) });
      }
    }
    return [...byKey.values()].sort((a, b) => b.latency - a.latency || a.clientId.localeCompare(b.clientId) || a.topic.localeCompare(b.topic)).slice(0, this.current.topK);
  }

  async counters(): Promise<SlowSubsCounters> {
    const c = { recorded: 0, evicted: 0 };
    for (const w of await this.host.workers.callAll('slowSubs.read')) {
      c.recorded += w.recorded;
      c.evicted += w.evicted;
    }
    return c;
  }

  /** Clears the top list on every worker, and on every other running node of a cluster;
   * answers the nodes that did not answer (null: no cluster). */
  async clear(): Promise<MissingNode[] | null> {
    const cluster = this.host.cluster;
    const [, remote] = await Promise.all([this.host.workers.callAll('slowSubs.clear'), cluster?.askAll('slowSubs.clear')]);
    return remote?.missing ?? null;
  }

  private use(s: SlowSubsSettings, source: 'config' | 'api'): void {
    this.current = s;
    this.source = source;
    this.host.setWorkerState('slowSubs', { ...s });
  }

  private fromConfig(): SlowSubsSettings {
    const c = this.host.config.slowSubs;
    return { enable: c.enable, threshold: c.threshold, topK: c.topK, window: c.window, statsType: c.statsType };
  }
}

/** Checks settings (stored ones too: a document from another node is checked like a request). */
function checkSettings(value: unknown, base: SlowSubsSettings): SlowSubsSettings {
  const bad = (field: string, what: string) => new DomainError('INVALID_PARAMETER', `${field}: ${what}`, { field });
  if (typeof value !== 'object' || value === null) throw bad('settings', 'expected an object');
  const v = { ...base, ...(value as Partial<SlowSubsSettings>) };
  if (typeof v.enable !== 'boolean') throw bad('enable', 'expected true or false');
  const int = (n: unknown, min: number, max: number) => Number.isInteger(n) && (n as number) >= min && (n as number) <= max;
  if (!int(v.threshold, 0, 3_600_000)) throw bad('threshold', 'expected milliseconds, 0..3600000');
  if (!int(v.topK, 1, MAX_TOP_K)) throw bad('topK', `expected 1..${MAX_TOP_K}`);
  if (!int(v.window, 1, MAX_WINDOW)) throw bad('window', `expected seconds, 1..${MAX_WINDOW}`);
  if (!STATS_TYPES.includes(v.statsType)) throw bad('statsType', `expected one of ${STATS_TYPES.join(', ')}`);
  return { enable: v.enable, threshold: v.threshold, topK: v.topK, window: v.window, statsType: v.statsType };
}
