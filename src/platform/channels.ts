// ChannelBook: the notification channels alerts are delivered through (main thread; admin kind
// platform-channel). A channel belongs to an organization (its alert rules may use it) or, with
// organizationId null, to the platform (SystemAdmins' rules). Its config is checked and
// normalized by notify/; secrets are kept and never answered ("******" in answers, and sent back
// as "******" to keep them).
import { randomUUID } from 'node:crypto';

import { Type, type Static } from '@sinclair/typebox';

import { Serial } from './serial.ts';
import type { Store } from '../store/types.ts';
import { compileSchema, orNull, PATTERN_MESSAGE, type Checker } from '../schema/check.ts';
import { PlatformError, invalid, missing } from './errors.ts';
import { mergeSecrets, normalizeChannel, redactChannel, type ChannelSpec } from './notify/index.ts';

export const CHANNEL_KIND = 'platform-channel';

/** A channel's fields (the /api/v1 routes' schemas too); its type and config are checked by
 * notify/ (normalizeChannel: the config per type). */
export const CHANNEL_INPUT = Type.Object(
  {
    name: Type.String({ maxLength: 128, pattern: '\\S', [PATTERN_MESSAGE]: 'is required (1 to 128 characters)' }),
    type: Type.String({ description: 'webhook, slack or email' }),
    config: Type.Record(Type.String(), Type.Unknown(), { description: 'per type (README, Alerts); "******" keeps a stored secret' }),
    enabled: Type.Optional(orNull(Type.Boolean({ description: 'default true' }))),
    organizationId: Type.Optional(orNull(Type.String({ description: 'SystemAdmin: null for the platform\'s; cannot change' }))),
  },
  { additionalProperties: false },
);
export const CHANNEL_CHANGE = Type.Partial(CHANNEL_INPUT, { additionalProperties: false });
export type ChannelInput = Static<typeof CHANNEL_INPUT>;
export type ChannelChange = Static<typeof CHANNEL_CHANGE>;

const refuse = (field: string, reason: string) => new PlatformError(400, reason, field);
const checkChannel: Checker<ChannelInput> = compileSchema(CHANNEL_INPUT, { refuse });
const checkChannelChange: Checker<ChannelChange> = compileSchema(CHANNEL_CHANGE, { refuse });

export interface ChannelRecord extends ChannelSpec {
  id: string;
  name: string;
  organizationId: string | null;
  enabled: boolean;
  createTime: string;
  updateTime: string;
}

export class ChannelBook {
  private readonly channels = new Map<string, ChannelRecord>();
  private readonly writes = new Serial();

  constructor(private readonly store: Store) {}

  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<ChannelRecord>(CHANNEL_KIND)) this.channels.set(doc.id, doc);
  }

  /** A notification channel changed on another node of the cluster (`doc` null: removed). The
   * store is written by the caller. */
  applyStored(id: string, doc: ChannelRecord | null): Promise<void> {
    return this.writes.run(async () => {
      if (doc === null) this.channels.delete(id);
      else this.channels.set(id, doc);
    });
  }

  list(): ChannelRecord[] {
    return [...this.channels.values()];
  }

  get(id: string): ChannelRecord | undefined {
    return this.channels.get(id);
  }

  /** A channel as answered: its secrets replaced by "******". */
  view(c: ChannelRecord): ChannelRecord {
    return { ...c, ...redactChannel(c) };
  }

  add(input: unknown, organizationId: string | null): Promise<ChannelRecord> {
    return this.writes.run(async () => {
      checkChannel(input);
      const spec = spec_(input.type, input.config, null);
      const now = new Date().toISOString();
      const record: ChannelRecord = { id: randomUUID(), name: input.name, organizationId, ...spec, enabled: input.enabled ?? true, createTime: now, updateTime: now };
      await this.store.putAdmin(CHANNEL_KIND, record.id, record);
      this.channels.set(record.id, record);
      return record;
    });
  }

  update(id: string, input: unknown): Promise<{ before: ChannelRecord; after: ChannelRecord }> {
    return this.writes.run(async () => {
      const before = this.channels.get(id);
      if (!before) throw missing('notification channel', id);
      checkChannelChange(input);
      if (input.organizationId !== undefined && input.organizationId !== before.organizationId) throw invalid('organizationId', 'cannot be changed');
      const spec = input.type === undefined && input.config === undefined ? { type: before.type, config: before.config } : spec_(input.type ?? before.type, input.config ?? before.config, before);
      const after: ChannelRecord = { ...before, ...spec, name: input.name ?? before.name, enabled: input.enabled ?? before.enabled, updateTime: new Date().toISOString() };
      await this.store.putAdmin(CHANNEL_KIND, id, after);
      this.channels.set(id, after);
      return { before, after };
    });
  }

  delete(id: string): Promise<ChannelRecord> {
    return this.writes.run(async () => {
      const c = this.channels.get(id);
      if (!c) throw missing('notification channel', id);
      await this.store.deleteAdmin(CHANNEL_KIND, id);
      this.channels.delete(id);
      return c;
    });
  }

  /** Removes the channels of organizations that are gone. */
  async forget(organizationIds: readonly string[]): Promise<void> {
    await this.writes.run(async () => {
      for (const c of [...this.channels.values()]) {
        if (c.organizationId === null || !organizationIds.includes(c.organizationId)) continue;
        await this.store.deleteAdmin(CHANNEL_KIND, c.id);
        this.channels.delete(c.id);
      }
    });
  }
}

/** The checked spec; a config error (ChannelConfigError, a domain error) names its field (config.url, ...). */
function spec_(type: unknown, config: unknown, before: ChannelSpec | null): ChannelSpec {
  const next = normalizeChannel(type, config);
  return before === null ? next : mergeSecrets(before, next);
}
