// AlertBook (main thread): the alerts in memory, in the order they were created, with the index of
// the firing ones by target (rule, organization, application) that deduplicates them, the filters
// the list answers, and the bound: past `max` alerts the oldest resolved one goes; when every
// alert is firing a new one is refused (the engine counts both). Persistence is the engine's.
import type { AlertFilter, AlertRecord } from './types.ts';

/** What an alert is about: its rule and the organization / application it was found on. */
export function targetKey(ruleId: string, organizationId: string | null, applicationId: string | null): string {
  return JSON.stringify([ruleId, organizationId, applicationId]);
}

/** The prefix of every target key of a rule. */
export function ruleKeyPrefix(ruleId: string): string {
  return `${JSON.stringify([ruleId]).slice(0, -1)},`;
}

const keyOf = (a: AlertRecord): string => targetKey(a.ruleId, a.organizationId, a.applicationId);

export class AlertBook {
  /** id -> alert, oldest first (Map keeps insertion order). */
  private readonly alerts = new Map<string, AlertRecord>();
  /** target key -> the firing alert on it. */
  private readonly firing = new Map<string, AlertRecord>();

  constructor(private readonly max: number) {}

  /** Replaces the contents with `records` (oldest first by createTime); answers the ids dropped past
   * the bound, and firing alerts that duplicate another on the same target (kept: the newest). */
  load(records: readonly AlertRecord[]): { pruned: string[]; duplicates: AlertRecord[] } {
    this.alerts.clear();
    this.firing.clear();
    const sorted = [...records].sort((a, b) => (a.createTime < b.createTime ? -1 : a.createTime > b.createTime ? 1 : a.id < b.id ? -1 : 1));
    const duplicates: AlertRecord[] = [];
    for (const a of sorted) {
      this.alerts.set(a.id, a);
      if (a.state !== 'firing') continue;
      const before = this.firing.get(keyOf(a));
      if (before !== undefined) duplicates.push(before);
      this.firing.set(keyOf(a), a);
    }
    const pruned: string[] = [];
    while (this.alerts.size > this.max) {
      const id = this.oldestResolved();
      if (id === undefined) break;
      this.alerts.delete(id);
      pruned.push(id);
    }
    return { pruned, duplicates };
  }

  get(id: string): AlertRecord | undefined {
    return this.alerts.get(id);
  }

  get size(): number {
    return this.alerts.size;
  }

  get firingCount(): number {
    return this.firing.size;
  }

  firingOn(key: string): AlertRecord | undefined {
    return this.firing.get(key);
  }

  /** The firing alerts of a rule, with their target keys. */
  firingOf(ruleId: string): [string, AlertRecord][] {
    const prefix = ruleKeyPrefix(ruleId);
    return [...this.firing].filter(([key]) => key.startsWith(prefix));
  }

  /** Every firing alert with its target key. */
  allFiring(): [string, AlertRecord][] {
    return [...this.firing];
  }

  /**
   * Adds a new firing alert. At the bound the oldest resolved alert makes room (its id is in
   * `pruned`); when there is none, the alert is not added (`added` false).
   */
  add(alert: AlertRecord): { added: boolean; pruned: string[] } {
    const pruned: string[] = [];
    while (this.alerts.size >= this.max) {
      const id = this.oldestResolved();
      if (id === undefined) return { added: false, pruned };
      this.alerts.delete(id);
      pruned.push(id);
    }
    this.alerts.set(alert.id, alert);
    if (alert.state === 'firing') this.firing.set(keyOf(alert), alert);
    return { added: true, pruned };
  }

  /** Takes a firing alert out of the firing index (the engine has set its state to resolved). */
  resolved(alert: AlertRecord): void {
    const key = keyOf(alert);
    if (this.firing.get(key) === alert) this.firing.delete(key);
  }

  /** Alerts matching `filter`, newest first. */
  list(filter: AlertFilter = {}): AlertRecord[] {
    const out: AlertRecord[] = [];
    const all = [...this.alerts.values()];
    for (let i = all.length - 1; i >= 0; i--) {
      const a = all[i];
      if (filter.organizationId !== undefined && a.organizationId !== filter.organizationId) continue;
      if (filter.ruleId !== undefined && a.ruleId !== filter.ruleId) continue;
      if (filter.state !== undefined && a.state !== filter.state) continue;
      if (filter.status !== undefined && a.status !== filter.status) continue;
      if (filter.severity !== undefined && a.severity !== filter.severity) continue;
      if (filter.from !== undefined || filter.to !== undefined) {
        const t = Date.parse(a.firstTime);
        if (filter.from !== undefined && t < filter.from) continue;
        if (filter.to !== undefined && t > filter.to) continue;
      }
      out.push(a);
    }
    return out;
  }

  private oldestResolved(): string | undefined {
    for (const [id, a] of this.alerts) if (a.state === 'resolved') return id;
    return undefined;
  }
}
