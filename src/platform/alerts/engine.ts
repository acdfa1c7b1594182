// AlertEngine (main thread): owns the alert rules (store kind 'platform-alert-rule') and the alerts
// (kind 'platform-alert'). Each evaluation reads one signal sample, feeds the rules' windows and
// decides, per rule and target (the broker, an organization, an application): a condition found
// true with no firing alert fires a new one (persisted, notified once); found true again it only
// updates the firing alert (deduplicated: no new alert, no notification; written at most every
// persistIntervalMs); found false, or its value missing, resolves it (persisted, notified once).
// Rule changes that clear a condition, disabling and deleting a rule resolve its alerts too.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import { AlertBook, ruleKeyPrefix, targetKey } from './alert-book.ts';
import { AlertRuleError } from './errors.ts';
import { alertMessage, compare, normalizeAlertRule, signalAllowed, signalInfo } from './rule.ts';
import { SignalWindow } from './signal-window.ts';
import { ALERT_STATES, ALERT_STATUSES, type AlertFilter, type AlertRecord, type AlertRuleRecord, type AlertStatus, type SignalSample } from './types.ts';

export const RULE_KIND = 'platform-alert-rule';
export const ALERT_KIND = 'platform-alert';

export interface AlertEngineOptions {
  /** One sample of every signal, read at each evaluation. */
  read(): SignalSample;
  /** Called once when an alert fires and once when it resolves (with a copy of the alert). */
  notify(rule: AlertRuleRecord, alert: AlertRecord, kind: 'firing' | 'resolved'): void;
  /** Alerts kept (memory and store); past it the oldest resolved go. Default 10000. */
  maxAlerts?: number;
  /** Clock for the alerts' times and the write throttle; Date.now by default. */
  now?: () => number;
  /** A firing alert found firing again is written at most this often (ms). Default 10000. */
  persistIntervalMs?: number;
  /** Buckets per watched series (see SignalWindow). Default 600. */
  maxBuckets?: number;
}

export interface AlertEngineStats {
  rules: number;
  alerts: number;
  firing: number;
  /** Watched series and their buckets (the windows' memory). */
  series: number;
  buckets: number;
  fired: number;
  resolved: number;
  evaluations: number;
  evaluationErrors: number;
  /** Timer ticks skipped because the evaluation before was still writing. */
  evaluationsSkipped: number;
  /** Resolved alerts dropped at maxAlerts. */
  pruned: number;
  /** New alerts not recorded because maxAlerts alerts were all firing. */
  refused: number;
  storeErrors: number;
  notifyErrors: number;
}

/** Where one rule looks in a sample. */
interface Target {
  key: string;
  organizationId: string | null;
  applicationId: string | null;
  value: number | undefined;
}

const REFUSAL_LOG_MS = 60_000;

const copyRule = (r: AlertRuleRecord): AlertRuleRecord => ({ ...r, channelIds: [...r.channelIds] });
const copyAlert = (a: AlertRecord): AlertRecord => ({ ...a });
const numberOrUndefined = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export class AlertEngine {
  private readonly rules = new Map<string, AlertRuleRecord>();
  private readonly book: AlertBook;
  private readonly windows: SignalWindow;
  private readonly now: () => number;
  private readonly persistIntervalMs: number;
  /** Alert id -> when it was last written; ids changed since are in `dirty`. */
  private readonly persistedAt = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private readonly evaluationListeners = new Set<(seconds: number) => void>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private lastRefusalLog = -Infinity;
  private readonly counters = {
    fired: 0,
    resolved: 0,
    evaluations: 0,
    evaluationErrors: 0,
    evaluationsSkipped: 0,
    pruned: 0,
    refused: 0,
    storeErrors: 0,
    notifyErrors: 0,
  };

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly options: AlertEngineOptions,
  ) {
    const maxAlerts = options.maxAlerts ?? 10_000;
    if (!Number.isInteger(maxAlerts) || maxAlerts < 1) throw new RangeError(`maxAlerts must be a positive integer, got ${maxAlerts}`);
    this.book = new AlertBook(maxAlerts);
    this.windows = new SignalWindow({ maxBuckets: options.maxBuckets });
    this.now = options.now ?? Date.now;
    this.persistIntervalMs = options.persistIntervalMs ?? 10_000;
  }

  /** Reads the rules and alerts from the store (replacing what is in memory). A stored document
   * that is not a valid rule or alert is logged and left out. */
  async load(): Promise<void> {
    const [ruleDocs, alertDocs] = await Promise.all([this.store.listAdmin<unknown>(RULE_KIND), this.store.listAdmin<unknown>(ALERT_KIND)]);
    this.rules.clear();
    for (const { id, doc } of ruleDocs) {
      try {
        this.rules.set(id, storedRule(id, doc));
      } catch (err) {
        this.log.error('stored alert rule is not valid; left out', { id, err });
      }
    }
    const alerts: AlertRecord[] = [];
    for (const { id, doc } of alertDocs) {
      if (isStoredAlert(id, doc)) alerts.push({ ...doc });
      else this.log.error('stored alert is not valid; left out', { id });
    }
    const { pruned, duplicates } = this.book.load(alerts);
    this.persistedAt.clear();
    this.dirty.clear();
    const at = this.now();
    for (const a of alerts) this.persistedAt.set(a.id, at);
    const writes: Promise<void>[] = [];
    for (const id of pruned) this.prune(id, writes);
    // Two firing alerts on one target (a crash between two writes): the older one is closed.
    for (const a of duplicates) this.resolve(a, undefined, writes);
    await Promise.all(writes);
  }

  // ---- rules

  listRules(): AlertRuleRecord[] {
    return [...this.rules.values()].map(copyRule);
  }

  getRule(id: string): AlertRuleRecord | undefined {
    const r = this.rules.get(id);
    return r === undefined ? undefined : copyRule(r);
  }

  /** Stores a new rule (its fields from normalizeAlertRule, its id, scope and times from the route). */
  async addRule(record: AlertRuleRecord): Promise<AlertRuleRecord> {
    checkScope(record);
    if (this.rules.has(record.id)) throw new Error(`alert rule ${record.id} exists`);
    const rule = copyRule(record);
    await this.store.putAdmin(RULE_KIND, rule.id, rule);
    this.rules.set(rule.id, rule);
    return copyRule(rule);
  }

  /**
   * Replaces a rule; undefined when there is none with its id. Its firing alerts resolve when the
   * rule is disabled, when what it measures changes (signal, aggregation, window, organization,
   * application: its windows start over), or when their last value no longer meets the new
   * operator and threshold; otherwise they take the rule's new name, severity and threshold.
   */
  async updateRule(record: AlertRuleRecord, store = true): Promise<AlertRuleRecord | undefined> {
    const before = this.rules.get(record.id);
    if (before === undefined) return undefined;
    checkScope(record);
    const rule = copyRule(record);
    if (store) await this.store.putAdmin(RULE_KIND, rule.id, rule);
    this.rules.set(rule.id, rule);
    const measures =
      before.signal !== rule.signal ||
      before.aggregation !== rule.aggregation ||
      before.window !== rule.window ||
      before.organizationId !== rule.organizationId ||
      before.applicationId !== rule.applicationId;
    const writes: Promise<void>[] = [];
    if (!rule.enabled || measures) this.windows.dropPrefix(ruleKeyPrefix(rule.id));
    for (const [, alert] of this.book.firingOf(rule.id)) {
      if (!rule.enabled || measures || !compare(alert.value, rule.operator, rule.threshold)) {
        this.resolve(alert, rule, writes);
      } else {
        alert.ruleName = rule.name;
        alert.severity = rule.severity;
        alert.threshold = rule.threshold;
        alert.message = alertMessage(rule, alert.value, alert);
        writes.push(this.persist(alert));
      }
    }
    await Promise.all(writes);
    return copyRule(rule);
  }

  /** Deletes a rule (its firing alerts resolve; its alerts stay in the history); false if none. */
  async deleteRule(id: string, store = true): Promise<boolean> {
    const rule = this.rules.get(id);
    if (rule === undefined) return false;
    if (store) await this.store.deleteAdmin(RULE_KIND, id);
    this.rules.delete(id);
    this.windows.dropPrefix(ruleKeyPrefix(id));
    const writes: Promise<void>[] = [];
    for (const [, alert] of this.book.firingOf(id)) this.resolve(alert, rule, writes);
    await Promise.all(writes);
    return true;
  }

  /** A rule changed on another node of the cluster (`doc` null: removed), applied as this node's
   * own change would be (its firing alerts here resolve or follow; every node evaluates the rule
   * on its own signals). The store is written by the caller. */
  async applyStoredRule(id: string, doc: unknown): Promise<void> {
    if (doc === null) {
      await this.deleteRule(id, false);
      return;
    }
    const rule = storedRule(id, doc);
    if (this.rules.has(id)) await this.updateRule(rule, false);
    else this.rules.set(id, copyRule(rule));
  }

  // ---- alerts

  /** Alerts matching `filter`, newest first. */
  listAlerts(filter: AlertFilter = {}): AlertRecord[] {
    return this.book.list(filter).map(copyAlert);
  }

  getAlert(id: string): AlertRecord | undefined {
    const a = this.book.get(id);
    return a === undefined ? undefined : copyAlert(a);
  }

  /** Sets an alert's handling status (firing or resolved); undefined when there is none with `id`. */
  async setStatus(id: string, status: AlertStatus, username: string): Promise<AlertRecord | undefined> {
    if (!(ALERT_STATUSES as readonly string[]).includes(status)) throw new AlertRuleError('status', `must be one of ${ALERT_STATUSES.join(', ')}`);
    const alert = this.book.get(id);
    if (alert === undefined) return undefined;
    alert.status = status;
    alert.statusChangedBy = username;
    alert.statusTime = new Date(this.now()).toISOString();
    await this.persist(alert);
    return copyAlert(alert);
  }

  // ---- evaluation

  /** Reads one sample and evaluates every enabled rule on it; resolves once the writes are done
   * (a failed write is logged and counted, and retried later). Throws what read() throws. */
  async evaluate(): Promise<void> {
    const started = performance.now();
    this.counters.evaluations++;
    const writes: Promise<void>[] = [];
    try {
      const sample = this.options.read();
      for (const rule of this.rules.values()) if (rule.enabled) this.evaluateRule(rule, sample, writes);
      // Firing alerts whose rule is gone or off (restored by load after a crash in between).
      for (const [, alert] of this.book.allFiring()) {
        const rule = this.rules.get(alert.ruleId);
        if (rule === undefined || !rule.enabled) this.resolve(alert, rule, writes);
      }
      this.windows.prune(sample.time);
      this.flush(writes, false);
    } catch (err) {
      this.counters.evaluationErrors++;
      throw err;
    } finally {
      await Promise.all(writes);
      const seconds = (performance.now() - started) / 1000;
      for (const fn of this.evaluationListeners) fn(seconds);
    }
  }

  /** Evaluates every `intervalMs` on an unref'd timer (a tick while the evaluation before is still
   * writing is skipped and counted; errors are logged, never thrown out of the timer). */
  start(intervalMs: number): void {
    if (!Number.isInteger(intervalMs) || intervalMs < 1) throw new RangeError(`intervalMs must be a positive integer, got ${intervalMs}`);
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer, waits for a running evaluation and writes the alerts changed since their last write. */
  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.running !== null) await this.running;
    const writes: Promise<void>[] = [];
    this.flush(writes, true);
    await Promise.all(writes);
  }

  stats(): AlertEngineStats {
    const size = this.windows.size;
    return { rules: this.rules.size, alerts: this.book.size, firing: this.book.firingCount, series: size.series, buckets: size.buckets, ...this.counters };
  }

  /** Calls `fn` with each evaluation's duration in seconds; answers the function that stops it. */
  onEvaluation(fn: (seconds: number) => void): () => void {
    this.evaluationListeners.add(fn);
    return () => this.evaluationListeners.delete(fn);
  }

  private tick(): void {
    if (this.running !== null) {
      this.counters.evaluationsSkipped++;
      return;
    }
    this.running = this.evaluate()
      .catch((err: unknown) => this.log.error('alert evaluation failed', { err }))
      .finally(() => {
        this.running = null;
      });
  }

  private evaluateRule(rule: AlertRuleRecord, sample: SignalSample, writes: Promise<void>[]): void {
    const seen = new Set<string>();
    for (const t of targetsOf(rule, sample)) {
      seen.add(t.key);
      const firing = this.book.firingOn(t.key);
      if (t.value === undefined) {
        // No value for it in this sample: it cannot be said to fire.
        if (firing !== undefined) this.resolve(firing, rule, writes);
        continue;
      }
      this.windows.append(t.key, rule.window * 1000, sample.time, t.value);
      const value = this.windows.aggregate(t.key, rule.aggregation, sample.time);
      // Too little history (a rate's first sample): no decision either way.
      if (value === undefined) continue;
      if (compare(value, rule.operator, rule.threshold)) {
        if (firing === undefined) this.fire(rule, t, value, writes);
        else this.stillFiring(firing, rule, value);
      } else if (firing !== undefined) this.resolve(firing, rule, writes);
    }
    // Targets gone from the sample (an organization with no values now).
    for (const [key, alert] of this.book.firingOf(rule.id)) if (!seen.has(key)) this.resolve(alert, rule, writes);
  }

  private fire(rule: AlertRuleRecord, t: Target, value: number, writes: Promise<void>[]): void {
    const now = this.now();
    const time = new Date(now).toISOString();
    const alert: AlertRecord = {
      id: randomUUID(),
      ruleId: rule.id,
      ruleName: rule.name,
      organizationId: t.organizationId,
      applicationId: t.applicationId,
      signal: rule.signal,
      severity: rule.severity,
      state: 'firing',
      status: 'unhandled',
      value,
      threshold: rule.threshold,
      message: alertMessage(rule, value, t),
      firstTime: time,
      lastTime: time,
      resolvedTime: null,
      occurrences: 1,
      statusChangedBy: null,
      statusTime: null,
      createTime: time,
    };
    const { added, pruned } = this.book.add(alert);
    for (const id of pruned) this.prune(id, writes);
    if (!added) {
      this.counters.refused++;
      if (now - this.lastRefusalLog >= REFUSAL_LOG_MS) {
        this.lastRefusalLog = now;
        this.log.warn('alert not recorded: maxAlerts alerts are all firing', { rule: rule.id, message: alert.message, refused: this.counters.refused });
      }
      return;
    }
    this.counters.fired++;
    writes.push(this.persist(alert));
    this.notify(rule, alert, 'firing');
  }

  private stillFiring(alert: AlertRecord, rule: AlertRuleRecord, value: number): void {
    alert.value = value;
    alert.threshold = rule.threshold;
    alert.message = alertMessage(rule, value, alert);
    alert.lastTime = new Date(this.now()).toISOString();
    alert.occurrences++;
    this.dirty.add(alert.id);
  }

  /** Resolves a firing alert: persisted, and notified when its rule is known. */
  private resolve(alert: AlertRecord, rule: AlertRuleRecord | undefined, writes: Promise<void>[]): void {
    if (alert.state !== 'firing') return;
    alert.state = 'resolved';
    alert.resolvedTime = new Date(this.now()).toISOString();
    this.book.resolved(alert);
    this.counters.resolved++;
    writes.push(this.persist(alert));
    if (rule !== undefined) this.notify(rule, alert, 'resolved');
  }

  private notify(rule: AlertRuleRecord, alert: AlertRecord, kind: 'firing' | 'resolved'): void {
    try {
      this.options.notify(copyRule(rule), copyAlert(alert), kind);
    } catch (err) {
      this.counters.notifyErrors++;
      this.log.error('alert notification failed', { rule: rule.id, alert: alert.id, kind, err });
    }
  }

  /** Writes the alerts changed since their last write: those written persistIntervalMs ago or
   * more, or all of them (`all`). */
  private flush(writes: Promise<void>[], all: boolean): void {
    const now = this.now();
    for (const id of this.dirty) {
      const alert = this.book.get(id);
      if (alert === undefined) this.dirty.delete(id);
      else if (all || now - (this.persistedAt.get(id) ?? -Infinity) >= this.persistIntervalMs) writes.push(this.persist(alert));
    }
  }

  /** Writes an alert; never rejects (a failure is logged, counted, and the alert written again later). */
  private persist(alert: AlertRecord): Promise<void> {
    this.persistedAt.set(alert.id, this.now());
    this.dirty.delete(alert.id);
    return this.store.putAdmin(ALERT_KIND, alert.id, copyAlert(alert)).catch((err: unknown) => {
      this.counters.storeErrors++;
      if (this.book.get(alert.id) !== undefined) this.dirty.add(alert.id);
      this.log.error('alert not written to the store', { alert: alert.id, err });
    });
  }

  private prune(id: string, writes: Promise<void>[]): void {
    this.counters.pruned++;
    this.persistedAt.delete(id);
    this.dirty.delete(id);
    writes.push(
      this.store.deleteAdmin(ALERT_KIND, id).then(
        () => undefined,
        (err: unknown) => {
          this.counters.storeErrors++;
          this.log.error('pruned alert not deleted from the store', { alert: id, err });
        },
      ),
    );
  }
}

/** Where `rule` looks in `sample`: the broker; one application; one organization; or, for a
 * platform-wide rule on a tenant signal, each organization in the sample. */
function targetsOf(rule: AlertRuleRecord, sample: SignalSample): Target[] {
  const info = signalInfo(rule.signal);
  if (info === undefined) return [];
  if (info.scope === 'broker') {
    if (rule.organizationId !== null) return [];
    return [{ key: targetKey(rule.id, null, null), organizationId: null, applicationId: null, value: numberOrUndefined(sample.broker[rule.signal]) }];
  }
  if (rule.applicationId !== null) {
    const value = numberOrUndefined(sample.applications.get(rule.applicationId)?.[rule.signal]);
    return [{ key: targetKey(rule.id, rule.organizationId, rule.applicationId), organizationId: rule.organizationId, applicationId: rule.applicationId, value }];
  }
  if (rule.organizationId !== null) {
    const value = numberOrUndefined(sample.organizations.get(rule.organizationId)?.[rule.signal]);
    return [{ key: targetKey(rule.id, rule.organizationId, null), organizationId: rule.organizationId, applicationId: null, value }];
  }
  const out: Target[] = [];
  for (const [organizationId, values] of sample.organizations) {
    out.push({ key: targetKey(rule.id, organizationId, null), organizationId, applicationId: null, value: numberOrUndefined(values[rule.signal]) });
  }
  return out;
}

function checkScope(record: AlertRuleRecord): void {
  if (!signalAllowed(record.signal, record.organizationId)) {
    throw new AlertRuleError('signal', signalInfo(record.signal) === undefined ? `unknown signal ${JSON.stringify(record.signal)}` : `${record.signal} is a broker-wide signal: only platform-wide rules (no organization) may watch it`);
  }
}

/** A stored rule document checked as a request would be. */
function storedRule(id: string, doc: unknown): AlertRuleRecord {
  const fields = normalizeAlertRule(doc);
  const d = doc as Record<string, unknown>;
  const idOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const rule: AlertRuleRecord = {
    id,
    ...fields,
    organizationId: idOrNull(d.organizationId),
    applicationId: idOrNull(d.applicationId),
    createTime: typeof d.createTime === 'string' ? d.createTime : new Date(0).toISOString(),
    updateTime: typeof d.updateTime === 'string' ? d.updateTime : new Date(0).toISOString(),
  };
  checkScope(rule);
  return rule;
}

function isStoredAlert(id: string, doc: unknown): doc is AlertRecord {
  if (doc === null || typeof doc !== 'object') return false;
  const a = doc as Partial<AlertRecord>;
  return (
    a.id === id &&
    typeof a.ruleId === 'string' &&
    typeof a.createTime === 'string' &&
    typeof a.firstTime === 'string' &&
    typeof a.value === 'number' &&
    (ALERT_STATES as readonly string[]).includes(a.state as string) &&
    (ALERT_STATUSES as readonly string[]).includes(a.status as string)
  );
}
