// Owns the set of data sources (main thread): their records, persisted as admin documents of kind
// 'source' (with their passwords, so pools reconnect after a restart), and one live source (pool)
// per record. Everything it answers to the API is redacted (redact.ts). Rule actions find their
// source with get(id); the rule engine tells it through setInUseCheck which sources rules use, so
// a used source cannot be deleted.
import { randomBytes } from 'node:crypto';

import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import { DRIVERS, type SourceDriver, type SourceDrivers } from './drivers.ts';
import { SourceInUseError, SourceNameConflictError, SourceNotFoundError } from './errors.ts';
import { redact } from './redact.ts';
import { SOURCE_TYPES, SourceConfigError, type AnySource, type CheckResult, type SourceHealth, type SourceRecord, type SourceType } from './types.ts';

export const SOURCE_KIND = 'source';
const MAX_NAME_LENGTH = 128;

export interface NewSource {
  name: unknown;
  type: unknown;
  config: unknown;
}

export interface SourceInfo extends SourceRecord {
  health: SourceHealth;
}

export interface SourcePage {
  data: SourceRecord[];
  total: number;
  page: number;
  size: number;
}

export class SourceRegistry {
  private readonly records = new Map<string, SourceRecord>();
  private readonly sources = new Map<string, AnySource>();
  /** Names taken by an add that is still persisting (two concurrent adds of one name: one wins). */
  private readonly reserved = new Set<string>();
  private inUse: (id: string) => boolean = () => false;
  private lastCreated = 0;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly drivers: SourceDrivers = DRIVERS,
  ) {}

  /** Reads the persisted sources and starts their pools (a source that is down shows in its health). */
  async load(): Promise<void> {
    for (const { id, doc } of await this.store.listAdmin<SourceRecord>(SOURCE_KIND)) {
      this.records.set(id, doc);
      try {
        this.sources.set(id, this.driver(doc.type).create(id, this.driver(doc.type).parse(doc.config), this.log));
      } catch (err) {
        // A record written by another version may no longer parse: keep it listed, without a pool.
        this.log.error('stored source cannot be started', { source: id, type: doc.type, error: err });
      }
    }
  }

  /** A source changed on another node of the cluster, stored here once applied (null:
   * deleted): its pool is closed and, unless deleted, started again from the record like at load. */
  async applyStored(id: string, doc: SourceRecord | null): Promise<void> {
    if (doc !== null && (typeof doc !== 'object' || doc.id !== id || typeof doc.type !== 'string')) throw new Error(`source ${id} from another node is not a source record`);
    const old = this.sources.get(id);
    this.sources.delete(id);
    this.records.delete(id);
    await old?.close();
    if (doc === null) return;
    this.records.set(id, doc);
    this.sources.set(id, this.driver(doc.type).create(id, this.driver(doc.type).parse(doc.config), this.log));
  }

  setInUseCheck(check: (id: string) => boolean): void {
    this.inUse = check;
  }

  async add(input: NewSource): Promise<SourceRecord> {
    const name = validName(input.name);
    const type = this.validType(input.type);
    const config = this.driver(type).parse(input.config) as Record<string, unknown>;
    if (this.reserved.has(name) || [...this.records.values()].some((r) => r.name === name)) throw new SourceNameConflictError(name);
    const record: SourceRecord = { id: `source-${randomBytes(6).toString('hex')}`, name, type, config, createTime: this.nextCreateTime() };
    this.reserved.add(name);
    try {
      await this.store.putAdmin(SOURCE_KIND, record.id, record);
    } finally {
      this.reserved.delete(name);
    }
    this.records.set(record.id, record);
    this.sources.set(record.id, this.driver(type).create(record.id, config, this.log));
    this.log.info('source added', { source: record.id, name, type });
    return redact(record);
  }

  async delete(id: string): Promise<void> {
    if (!this.records.has(id)) throw new SourceNotFoundError(id);
    if (this.inUse(id)) throw new SourceInUseError(id);
    await this.store.deleteAdmin(SOURCE_KIND, id);
    this.records.delete(id);
    const source = this.sources.get(id);
    this.sources.delete(id);
    await source?.close();
    this.log.info('source deleted', { source: id });
  }

  /** The live source, for rule actions and auth policies. */
  get(id: string): AnySource | undefined {
    return this.sources.get(id);
  }

  has(id: string): boolean {
    return this.records.has(id);
  }

  /** The record of `id` as the API shows it (redacted), or undefined. */
  record(id: string): SourceRecord | undefined {
    const r = this.records.get(id);
    return r && redact(r);
  }

  list(options: { type?: SourceType; page?: number; size?: number } = {}): SourcePage {
    const page = options.page ?? 1;
    const size = options.size ?? 20;
    const all = [...this.records.values()].filter((r) => options.type === undefined || r.type === options.type).sort(byCreateTime);
    return { data: all.slice((page - 1) * size, page * size).map(redact), total: all.length, page, size };
  }

  /** The record (redacted) and the health of its pool. */
  queryInfo(id: string): SourceInfo {
    const record = this.records.get(id);
    if (!record) throw new SourceNotFoundError(id);
    const health = this.sources.get(id)?.health() ?? notStarted();
    return { ...redact(record), health };
  }

  /** Every record, redacted, for a configuration export. */
  export(): SourceRecord[] {
    return [...this.records.values()].sort(byCreateTime).map(redact);
  }

  async check(id: string, timeoutMs?: number): Promise<CheckResult> {
    const source = this.sources.get(id);
    if (!source) throw new SourceNotFoundError(id);
    return source.check(timeoutMs);
  }

  /** Checks a config without saving it: a throwaway source, checked and closed. */
  async checkConfig(type: unknown, raw: unknown, timeoutMs?: number): Promise<CheckResult> {
    const t = this.validType(type);
    const config = this.driver(t).parse(raw);
    const source = this.driver(t).create(`check-${randomBytes(4).toString('hex')}`, config, this.log);
    try {
      return await source.check(timeoutMs);
    } finally {
      await source.close();
    }
  }

  async close(): Promise<void> {
    const closing = [...this.sources.values()].map((s) => s.close());
    this.sources.clear();
    await Promise.allSettled(closing);
  }

  /** Now, or 1 ms after the newest record: two sources added in one millisecond still list in
   *  the order they were added, before and after a reload (ties would fall back to random ids). */
  private nextCreateTime(): string {
    let newest = 0;
    for (const r of this.records.values()) newest = Math.max(newest, Date.parse(r.createTime) || 0);
    this.lastCreated = Math.max(Date.now(), newest + 1, this.lastCreated + 1);
    return new Date(this.lastCreated).toISOString();
  }

  private validType(type: unknown): SourceType {
    if (typeof type !== 'string' || !(SOURCE_TYPES as readonly string[]).includes(type)) {
      throw new SourceConfigError('type', `must be one of ${SOURCE_TYPES.join(', ')}`);
    }
    if (!this.drivers[type as SourceType]) throw new SourceConfigError('type', `${type} sources are not available in this build`);
    return type as SourceType;
  }

  private driver(type: SourceType): SourceDriver {
    const d = this.drivers[type];
    if (!d) throw new SourceConfigError('type', `${type} sources are not available in this build`);
    return d;
  }
}

function validName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw new SourceConfigError('name', 'is required');
  if (name.length > MAX_NAME_LENGTH) throw new SourceConfigError('name', `must be at most ${MAX_NAME_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new SourceConfigError('name', 'must not contain control characters');
  return name;
}

function byCreateTime(a: SourceRecord, b: SourceRecord): number {
  return a.createTime < b.createTime ? -1 : a.createTime > b.createTime ? 1 : a.id < b.id ? -1 : 1;
}

function notStarted(): SourceHealth {
  return { state: 'down', since: new Date(0).toISOString(), lastError: 'the source could not be started from its stored config', lastErrorAt: null, reconnects: 0, inFlight: 0 };
}
