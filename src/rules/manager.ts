// RuleManager: the rule engine's main-thread half. Keeps the rules (store kind 'rule'), installs
// them on every worker (also a restarted one) and subscribes their FROM filters in the routing
// core, runs the actions that write to data sources in one ActionPipeline per rule action (fed
// by the workers' outputs, one message per worker per tick), and answers the runtime counters:
// the workers' per-rule counts plus the pipelines', with a rate over the last minute.
import { takeTraceparent } from './trace-output.ts';
import { randomUUID } from 'node:crypto';

import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import type { AnySource, SourceType } from '../sources/types.ts';
import { actionSpec } from './actions/index.ts';
import { ActionPipeline, type ActionStats } from './actions/pipeline.ts';
import { compileRule, explain, makeContext, type EventName } from './sql/index.ts';
import type { RuleCounters, RuleSpec, RepublishConfig } from './worker-rules.ts';
import { parseSql, validateActions, type RuleAction, type RuleDoc } from './rule.ts';
import { RuleError } from './errors.ts';
import { addActionStats, addRuleCounters, NO_COUNTS, type KeptCounters } from './kept-counters.ts';
import { matches as topicMatches } from '../auth/topic-filter.ts';
import type { TapOwnerHost } from '../features/feature.ts';

const KIND = 'rule';
/** Samples of the counters for the rate: one each SAMPLE_MS, over RATE_WINDOW_MS. */
const SAMPLE_MS = 5_000;
const RATE_WINDOW_MS = 60_000;

/** What the manager needs of the broker (the supervisor gives it). */
export interface RuleHost extends TapOwnerHost {
  onRuleOutputs(fn: (items: unknown[]) => void): void;
}

/** What the manager needs of the data sources. */
export interface SourceLookup {
  source(id: string): AnySource | undefined;
  typeOf(id: string): SourceType | undefined;
}

export interface RuleOptions {
  /** Outputs waiting per action at most; past it they are dropped and counted. */
  queueLimit: number;
}

interface Live {
  doc: RuleDoc;
  handle: number;
  /** Its FROM topic filters (subscribed in the routing core while it is enabled). */
  filters: string[];
  pipelines: (ActionPipeline | null)[];
  /** What it counted before its last stop (kept-counters.ts); null: never stopped. */
  kept: KeptCounters | null;
}

export interface ActionRuntime extends ActionStats {
  index: number;
  type: string;
}

export interface RuleRuntime extends Omit<RuleCounters, 'lastErrorAt'> {
  id: string;
  name: string;
  enabled: boolean;
  lastErrorAt: string | null;
  /** Matched per second over the last minute. */
  rate: number;
  actions: ActionRuntime[];
}

export class RuleManager {
  private readonly rules = new Map<string, Live>();
  private readonly byHandle = new Map<number, Live>();
  private samples: { at: number; matched: Map<string, number> }[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly host: RuleHost,
    private readonly store: Store,
    private readonly sources: SourceLookup,
    private readonly log: Logger,
    private readonly options: RuleOptions,
  ) {
    host.onRuleOutputs((items) => this.outputs(items));
    host.onWorkerStart((worker) => {
      const all = [...this.rules.values()].filter((l) => l.doc.enabled).map((l) => this.spec(l));
      return host.call(worker, 'rules.install', { rules: all, only: true }).catch((err: unknown) => this.log.error('rules not installed on a restarted worker', { worker, err }));
    });
    this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** Loads and starts the stored rules (a rule whose SQL or actions no longer validate is kept
   * but disabled, and logged). */
  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<RuleDoc>(KIND)) await this.install(doc, { doc, handle: this.host.newHandle(), filters: [], pipelines: [], kept: null });
  }

  /** A rule changed on another node of the cluster, stored here once applied (null: deleted):
   * stopped, then started again from the stored document like at load. */
  async applyStored(id: string, doc: RuleDoc | null): Promise<void> {
    if (doc !== null && (typeof doc !== 'object' || doc.id !== id || typeof doc.sql !== 'string' || !Array.isArray(doc.actions))) throw new RuleError(400, 'id', `rule ${id} from another node is not a rule`);
    const live = this.rules.get(id);
    if (live?.doc.enabled) await this.stop(live);
    if (doc === null) {
      this.rules.delete(id);
      return;
    }
    await this.install(doc, live ? { ...live, doc, filters: [] } : { doc, handle: this.host.newHandle(), filters: [], pipelines: [], kept: null });
  }

  private async install(doc: RuleDoc, live: Live): Promise<void> {
    this.rules.set(doc.id, live);
    try {
      live.filters = this.validate(doc);
      if (doc.enabled) await this.start(live);
    } catch (err) {
      this.log.error('stored rule cannot run; kept disabled', { id: doc.id, name: doc.name, err });
      live.doc = { ...doc, enabled: false };
    }
  }

  async add(input: { id?: string; name: string; sql: string; actions: RuleAction[]; enabled?: boolean; description?: string }): Promise<RuleDoc> {
    const id = input.id ?? `rule-${randomUUID().slice(0, 8)}`;
    if (this.rules.has(id)) throw new RuleError(409, 'id', `id: rule ${id} exists`);
    for (const l of this.rules.values()) if (l.doc.name === input.name) throw new RuleError(409, 'name', `name: a rule named ${input.name} exists`);
    const doc: RuleDoc = { id, name: input.name, sql: input.sql, actions: input.actions, enabled: input.enabled ?? true, description: input.description ?? '', createTime: new Date().toISOString() };
    const filters = this.validate(doc);
    const live: Live = { doc, handle: this.host.newHandle(), filters, pipelines: [], kept: null };
    await this.store.putAdmin(KIND, id, doc);
    this.rules.set(id, live);
    if (doc.enabled) await this.start(live);
    return doc;
  }

  async delete(id: string): Promise<void> {
    const live = this.get(id);
    await this.stop(live);
    this.rules.delete(id);
    await this.store.deleteAdmin(KIND, id);
  }

  async setEnabled(id: string, enabled: boolean): Promise<RuleDoc> {
    const live = this.get(id);
    if (live.doc.enabled === enabled) return live.doc;
    const doc = { ...live.doc, enabled };
    if (enabled) {
      live.filters = this.validate(doc);
      live.doc = doc;
      await this.start(live);
    } else {
      await this.stop(live);
      live.doc = doc;
    }
    await this.store.putAdmin(KIND, id, doc);
    return doc;
  }

  /** Changes a rule's name, SQL, actions, enabled flag or description (what is given), checked
   * like add before anything changes; a running rule is stopped and started again with the new
   * document, at once on every worker. Its rule counters go on; new actions count from zero. */
  async update(id: string, change: { name?: string; sql?: string; actions?: RuleAction[]; enabled?: boolean; description?: string }): Promise<RuleDoc> {
    const live = this.get(id);
    if (change.name !== undefined) {
      for (const l of this.rules.values()) if (l !== live && l.doc.name === change.name) throw new RuleError(409, 'name', `name: a rule named ${change.name} exists`);
    }
    const doc: RuleDoc = {
      ...live.doc,
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.sql !== undefined ? { sql: change.sql } : {}),
      ...(change.actions !== undefined ? { actions: change.actions } : {}),
      ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
    };
    const filters = this.validate(doc);
    await this.store.putAdmin(KIND, id, doc);
    if (live.doc.enabled) await this.stop(live);
    if (change.actions !== undefined && live.kept) live.kept = { ...live.kept, actions: [] };
    live.doc = doc;
    live.filters = filters;
    if (doc.enabled) await this.start(live);
    return doc;
  }

  /** Removes the action `index` of rule `id` that writes to a data source (a source's "query"). */
  async removeAction(id: string, index: number): Promise<void> {
    const live = this.get(id);
    const a = live.doc.actions[index];
    if (!a || typeof a.config.source !== 'string') throw new RuleError(404, 'id', `no query ${id}:${index}`);
    const doc: RuleDoc = { ...live.doc, actions: live.doc.actions.filter((_, i) => i !== index) };
    const running = live.doc.enabled;
    if (running) await this.stop(live);
    if (live.kept) live.kept = { ...live.kept, actions: live.kept.actions.filter((_, i) => i !== index) };
    live.doc = doc;
    await this.store.putAdmin(KIND, id, doc);
    if (running) await this.start(live);
  }

  list(name?: string): RuleDoc[] {
    const all = [...this.rules.values()].map((l) => l.doc);
    const filtered = name ? all.filter((d) => d.name.includes(name)) : all;
    return filtered.sort((a, b) => a.createTime.localeCompare(b.createTime) || a.id.localeCompare(b.id));
  }

  doc(id: string): RuleDoc {
    return this.get(id).doc;
  }

  /** Whether an enabled or disabled rule names the data source `id` (it may not be deleted). */
  usesSource(id: string): string[] {
    return [...this.rules.values()].filter((l) => l.doc.actions.some((a) => a.config.source === id)).map((l) => l.doc.id);
  }

  /** Runs the SQL on test data, without side effects. */
  test(sql: string, event: EventName | undefined, data: Record<string, unknown>): { matched: boolean; output?: Record<string, unknown>; reason?: string } {
    const parsed = parseSql(sql);
    const compiled = compileRule(parsed);
    const ev: EventName = event ?? 'PUBLISH';
    if (!parsed.events.includes(ev)) return { matched: false, reason: `the rule does not listen to ${ev} (FROM: ${parsed.sources.map((s) => (s.kind === 'topic' ? s.filter : `$EVENT.${s.event}`)).join(', ')})` };
    if (ev === 'PUBLISH') {
      const topic = String(data.topic ?? '');
      if (!parsed.filters.some((f) => topicMatches(f, topic))) return { matched: false, reason: `topic ${JSON.stringify(topic)} matches none of FROM ${parsed.filters.join(', ')}` };
    }
    // makeContext lower-cases the names: the test data's clientId overrides the default clientid.
    const fields: Record<string, unknown> = { timestamp: Date.now(), qos: 0, retain: false, clientid: '', username: null, ...data };
    const result = explain(parsed, compiled, makeContext(ev, fields));
    if ('output' in result) return { matched: true, output: result.output };
    return { matched: false, reason: result.filtered };
  }

  async runtime(id: string): Promise<RuleRuntime> {
    const live = this.get(id);
    const counters = await this.counters();
    return this.view(live, counters.get(id));
  }

  /** Every rule's runtime (for the metrics). */
  async allRuntimes(): Promise<RuleRuntime[]> {
    const counters = await this.counters();
    return [...this.rules.values()].map((l) => this.view(l, counters.get(l.doc.id)));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.rules.values()].flatMap((l) => l.pipelines.map((p) => p?.close(2000))));
  }

  /** The counts kept from before its last stop plus the workers' now (`c`). */
  private totals(live: Live, c: RuleCounters | undefined): RuleCounters {
    return addRuleCounters(live.kept?.rule ?? NO_COUNTS, c);
  }

  private view(live: Live, c: RuleCounters | undefined): RuleRuntime {
    const counters = this.totals(live, c);
    const actions: ActionRuntime[] = live.doc.actions.map((a, index) => {
      const stats = addActionStats(live.kept?.actions[index], live.pipelines[index]?.stats());
      if (stats) return { index, type: a.type, ...stats };
      // republish runs in the workers: its counts are the rule's.
      return { index, type: a.type, success: counters.republished, failed: counters.republishFailed, dropped: 0, queued: 0, retries: 0, batches: counters.republished, lastError: null, lastErrorAt: null };
    });
    let lastError = counters.lastError;
    let lastErrorAt = counters.lastErrorAt ? new Date(counters.lastErrorAt).toISOString() : null;
    for (const a of actions) {
      if (a.lastErrorAt && (!lastErrorAt || a.lastErrorAt > lastErrorAt)) {
        lastError = `${a.type}: ${a.lastError}`;
        lastErrorAt = a.lastErrorAt;
      }
    }
    return { id: live.doc.id, name: live.doc.name, enabled: live.doc.enabled, ...counters, lastError, lastErrorAt, rate: this.rate(live.doc.id, counters.matched), actions };
  }

  private rate(id: string, now: number): number {
    const first = this.samples[0];
    if (!first) return 0;
    const then = first.matched.get(id) ?? 0;
    const secs = (Date.now() - first.at) / 1000;
    return secs > 0 ? Math.round(((now - then) / secs) * 100) / 100 : 0;
  }

  private async sample(): Promise<void> {
    if (this.rules.size === 0) return;
    try {
      const counters = await this.counters();
      const now = Date.now();
      this.samples.push({ at: now, matched: new Map([...this.rules.values()].map((l) => [l.doc.id, this.totals(l, counters.get(l.doc.id)).matched])) });
      this.samples = this.samples.filter((s) => now - s.at <= RATE_WINDOW_MS);
    } catch (err) {
      this.log.debug('rule counters not sampled', { err });
    }
  }

  /** The workers' counters, summed per rule. */
  private async counters(): Promise<Map<string, RuleCounters>> {
    const per = await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'rules.runtime', {}).catch(() => ({}))));
    const sum = new Map<string, RuleCounters>();
    for (const w of per) {
      for (const [id, c] of Object.entries(w)) {
        const s = sum.get(id);
        if (!s) {
          sum.set(id, { ...c });
          continue;
        }
        s.matched += c.matched;
        s.passed += c.passed;
        s.filtered += c.filtered;
        s.failed += c.failed;
        s.republished += c.republished;
        s.republishFailed += c.republishFailed;
        if (c.lastErrorAt > s.lastErrorAt) {
          s.lastError = c.lastError;
          s.lastErrorAt = c.lastErrorAt;
        }
      }
    }
    return sum;
  }

  private get(id: string): Live {
    const live = this.rules.get(id);
    if (!live) throw new RuleError(404, 'id', `rule ${id} not found`);
    return live;
  }

  /** Validates a rule (its SQL, its actions against the sources); answers its FROM filters. */
  private validate(doc: RuleDoc): string[] {
    const parsed = parseSql(doc.sql);
    validateActions(doc.actions, parsed, (id) => this.sources.typeOf(id));
    return parsed.filters;
  }

  private spec(l: Live): RuleSpec {
    return {
      id: l.doc.id,
      handle: l.handle,
      sql: l.doc.sql,
      republish: l.doc.actions.filter((a) => a.type === 'republish').map((a) => a.config as unknown as RepublishConfig),
      remote: l.doc.actions.some((a) => a.type !== 'republish'),
    };
  }

  /** Pipelines first, then every worker compiles it, then the routing core finds it. */
  private async start(live: Live): Promise<void> {
    live.pipelines = live.doc.actions.map((a, index) => {
      if (a.type === 'republish') return null;
      const action = actionSpec(a.type)!.compile(a.config);
      if (action.kind !== 'write') throw new Error(`${a.type} is not a write action`);
      return new ActionPipeline({ ruleId: live.doc.id, index, action, sources: { get: (id: string) => this.sources.source(id) }, queueLimit: this.options.queueLimit, log: this.log });
    });
    this.byHandle.set(live.handle, live);
    const spec = this.spec(live);
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'rules.install', { rules: [spec] })));
    if (live.filters.length) this.host.setTap(live.handle, live.filters);
  }

  /** The reverse: the routing core forgets it, the workers drop it, the pipelines drain. What
   * it counted is kept (the workers forget it with the rule), so enabling it again goes on. */
  private async stop(live: Live): Promise<void> {
    this.host.removeTap(live.handle);
    // Nothing is matched once unsubscribed; what the workers counted until then is read before
    // they drop the rule.
    const counted = (await this.counters()).get(live.doc.id);
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'rules.remove', { id: live.doc.id }).catch(() => false)));
    this.byHandle.delete(live.handle);
    const pipelines = live.pipelines;
    live.pipelines = [];
    await Promise.all(pipelines.map((p) => p?.close(2000)));
    live.kept = {
      rule: this.totals(live, counted),
      actions: live.doc.actions.map((_, i) => addActionStats(live.kept?.actions[i], pipelines[i]?.stats()) ?? null),
    };
  }

  /** Outputs from a worker: pairs of rule handle and output, grouped per rule for the pipelines. */
  private outputs(items: unknown[]): void {
    let i = 0;
    while (i < items.length) {
      const handle = items[i] as number;
      const batch: Record<string, unknown>[] = [];
      while (i < items.length && items[i] === handle) {
        const output = items[i + 1] as Record<string, unknown>;
        takeTraceparent(output);
        batch.push(output);
        i += 2;
      }
      const live = this.byHandle.get(handle);
      if (!live) continue;
      for (const p of live.pipelines) p?.push(batch);
    }
  }
}
