// The Sparkplug B state kept in the configured store and shared across a cluster (main thread):
// each edge node (kind `sparkplug-node`, id `{group}/{node}`, its devices inside) and each
// primary host (kind `sparkplug-host`, id the host id) is one admin document, written after each
// birth, death or STATE change (coalesced: a document written once per FLUSH_MS at most, the
// latest state), read back at start, and replicated across the cluster's nodes through the
// configuration bucket (ctx.replicate: last writer wins, a node that starts late catches up).
// Data messages (NDATA/DDATA) are not written: they come at data rates, and a write per message
// would put those rates on the store and on every node; the values they set are kept in memory
// on the node that routed them, and written with the next birth or death.
import type { FeatureContext } from '../feature.ts';
import type { SparkplugChange, SparkplugState } from './state.ts';

export const NODE_KIND = 'sparkplug-node';
export const HOST_KIND = 'sparkplug-host';
const FLUSH_MS = 200;

export interface SparkplugStoreCounters {
  written: number;
  failed: number;
}

export class SparkplugStore {
  readonly counters: SparkplugStoreCounters = { written: 0, failed: 0 };
  private readonly dirty = new Map<string, SparkplugChange>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: Pick<FeatureContext, 'store' | 'log' | 'replicate'>, private readonly state: SparkplugState) {}

  /** Loads what the store keeps (bounded as the state is), shares it with the cluster, and writes
   * each change from now on. */
  async open(): Promise<void> {
    const { store, log } = this.ctx;
    for (const [kind, name] of [[NODE_KIND, 'node'], [HOST_KIND, 'host']] as const) {
      for (const { id, doc } of await store.listAdmin(kind)) {
        try {
          this.state.applyStored(name, id, doc);
        } catch (err) {
          log.warn('a stored Sparkplug B document was left out', { kind, id, err });
        }
      }
      this.ctx.replicate(kind, (id, doc) => this.state.applyStored(name, id, doc));
    }
    this.state.onChange = (c) => {
      this.dirty.set(`${c.kind}\n${c.key}`, c);
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.flushing = this.flushing.then(() => this.flush());
      }, FLUSH_MS).unref();
    };
  }

  private async flush(): Promise<void> {
    const changes = [...this.dirty.values()];
    this.dirty.clear();
    for (const c of changes) {
      const kind = c.kind === 'node' ? NODE_KIND : HOST_KIND;
      const doc = this.state.docOf(c);
      try {
        if (doc === null) await this.ctx.store.deleteAdmin(kind, c.key);
        else await this.ctx.store.putAdmin(kind, c.key, doc);
        this.counters.written++;
      } catch (err) {
        this.counters.failed++;
        this.ctx.log.error('a Sparkplug B state could not be stored', { kind, id: c.key, err });
      }
    }
  }

  /** Writes what is still waiting. */
  async close(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      this.flushing = this.flushing.then(() => this.flush());
    }
    await this.flushing;
  }
}
