// LicenseBook: the entitlements of organizations and applications (main thread; admin kind
// platform-license). An organization has at most one licence of its own (its applications
// together) and each application at most one. Their limits are written into the shared tenant
// counters, where every worker enforces them: connections (CONNACK 0x97 past the maximum) and
// messages per second (the connection is throttled past it). An expired licence admits no new
// connection. Usage is read from the same counters.
import { limits, rateLimitProblem, type RateLimit } from '../broker/rate-limit.ts';
import { randomUUID } from 'node:crypto';

import { Serial } from './serial.ts';
import type { Store } from '../store/types.ts';
import { conflict, invalid, missing } from './errors.ts';
import { checkLicense, type LicenseInput } from './inputs.ts';
import type { License, Usage } from './records.ts';
import type { TenantDirectory } from './tenants.ts';

export const LICENSE_KIND = 'platform-license';

export class LicenseBook {
  private readonly licenses = new Map<string, License>();
  private readonly writes = new Serial();

  constructor(
    private readonly store: Store,
    private readonly tenants: TenantDirectory,
    /** The licences changed (not their expiry): the tenant policy's answers carry their client
     * rate limits, so the workers' cached answers go. */
    private readonly changed: () => void = () => {},
  ) {}

  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<License>(LICENSE_KIND)) this.licenses.set(doc.id, doc);
    this.apply();
  }

  /** A licence changed on another node of the cluster (`doc` null: removed), applied here: its
   * limits are written into this node's tenant counters. The store is written by the caller. */
  applyStored(id: string, doc: License | null): Promise<void> {
    return this.writes.run(async () => {
      if (doc === null) this.licenses.delete(id);
      else this.licenses.set(id, doc);
      this.apply();
      this.changed();
    });
  }

  list(): License[] {
    return [...this.licenses.values()];
  }

  get(id: string): License | undefined {
    return this.licenses.get(id);
  }

  /** The licence of an organization (applicationId null) or of one application. */
  of(organizationId: string, applicationId: string | null): License | undefined {
    for (const l of this.licenses.values()) if (l.organizationId === organizationId && l.applicationId === applicationId) return l;
    return undefined;
  }

  add(input: unknown): Promise<License> {
    return this.writes.run(async () => {
      checkLicense(input);
      const applicationId = input.applicationId ?? null;
      let organizationId = input.organizationId ?? '';
      if (applicationId !== null) {
        const app = this.tenants.application(applicationId);
        if (!app) throw invalid('applicationId', 'no such application');
        if (organizationId !== '' && organizationId !== app.organizationId) throw invalid('organizationId', 'is not the application\'s organization');
        organizationId = app.organizationId;
      }
      if (!this.tenants.organization(organizationId)) throw invalid('organizationId', 'no such organization');
      if (this.of(organizationId, applicationId)) throw conflict(applicationId === null ? 'organizationId' : 'applicationId', `the ${applicationId === null ? 'organization' : 'application'} has a licence; change it instead`);
      const now = new Date().toISOString();
      const license: License = {
        id: randomUUID(), organizationId, applicationId,
        ...this.terms(input, null), createTime: now, updateTime: now,
      };
      await this.store.putAdmin(LICENSE_KIND, license.id, license);
      this.licenses.set(license.id, license);
      this.apply();
      this.changed();
      return license;
    });
  }

  update(id: string, input: unknown): Promise<{ before: License; after: License }> {
    return this.writes.run(async () => {
      const before = this.licenses.get(id);
      if (!before) throw missing('licence', id);
      checkLicense(input);
      if (input.organizationId !== undefined && input.organizationId !== before.organizationId) throw invalid('organizationId', 'cannot be changed');
      if (input.applicationId !== undefined && input.applicationId !== before.applicationId) throw invalid('applicationId', 'cannot be changed');
      const after: License = { ...before, ...this.terms(input, before), updateTime: new Date().toISOString() };
      await this.store.putAdmin(LICENSE_KIND, id, after);
      this.licenses.set(id, after);
      this.apply();
      this.changed();
      return { before, after };
    });
  }

  delete(id: string): Promise<License> {
    return this.writes.run(async () => {
      const license = this.licenses.get(id);
      if (!license) throw missing('licence', id);
      await this.store.deleteAdmin(LICENSE_KIND, id);
      this.licenses.delete(id);
      this.apply();
      this.changed();
      return license;
    });
  }

  /** Removes the licences of tenants that are gone (after a deletion). */
  async forget(organizationIds: readonly string[], applicationIds: readonly string[]): Promise<void> {
    await this.writes.run(async () => {
      for (const l of [...this.licenses.values()]) {
        if (!organizationIds.includes(l.organizationId) && (l.applicationId === null || !applicationIds.includes(l.applicationId))) continue;
        await this.store.deleteAdmin(LICENSE_KIND, l.id);
        this.licenses.delete(l.id);
      }
      this.apply();
      this.changed();
    });
  }

  /** The inbound rate limit of each client of an application: its licence's clientRateLimit, else
   * its organization's; null: none. */
  clientRateLimit(organizationId: string, applicationId: string): RateLimit | null {
    return this.of(organizationId, applicationId)?.clientRateLimit ?? this.of(organizationId, null)?.clientRateLimit ?? null;
  }

  /** Writes every tenant's limits into the shared counters (also when a licence expires: the
   * platform calls this on a timer). */
  apply(now = Date.now()): void {
    const slots = this.tenants.slots;
    const limitsOf = (l: License | undefined): [number | null, number | null] => {
      if (!l) return [null, null];
      if (l.expires !== null && Date.parse(l.expires) <= now) return [0, l.maxMessageRate];
      return [l.maxConnections, l.maxMessageRate];
    };
    for (const org of this.tenants.organizations()) {
      const s = slots.of(org.id);
      if (s) slots.counters.setLimits(s.slot, ...limitsOf(this.of(org.id, null)));
    }
    for (const app of this.tenants.applications()) {
      const s = slots.of(app.id);
      if (s) slots.counters.setLimits(s.slot, ...limitsOf(this.of(app.organizationId, app.id)));
    }
  }

  /** What an organization (applicationId null) or an application uses, against its licence. */
  usage(organizationId: string, applicationId: string | null, now = Date.now()): Usage {
    const s = this.tenants.slots.of(applicationId ?? organizationId);
    const u = s ? this.tenants.slots.counters.usage(s.slot, now) : { connections: 0, rate: 0, messages: 0, denied: 0, throttled: 0, quotaRefused: 0 };
    const l = this.of(organizationId, applicationId);
    const expired = l?.expires != null && Date.parse(l.expires) <= now;
    const maxConnections = l ? (expired ? 0 : l.maxConnections) : null;
    const maxMessageRate = l?.maxMessageRate ?? null;
    const pct = (v: number, max: number | null) => (max === null ? null : max === 0 ? (v > 0 ? 100 : 0) : Math.round((v / max) * 10000) / 100);
    return {
      connections: u.connections, maxConnections, messageRate: u.rate, maxMessageRate,
      messagesReceived: u.messages, aclDenied: u.denied, throttled: u.throttled, quotaRefused: u.quotaRefused,
      connectionsUsage: pct(u.connections, maxConnections), messageRateUsage: pct(u.rate, maxMessageRate),
    };
  }

  /** The terms given, over those of `before`: an absent limit or expiry keeps it, null clears it. */
  private terms(input: LicenseInput, before: License | null): Pick<License, 'maxConnections' | 'maxMessageRate' | 'clientRateLimit' | 'features' | 'expires' | 'description'> {
    const kept = <K extends 'maxConnections' | 'maxMessageRate'>(k: K) => (input[k] === undefined ? before?.[k] ?? null : input[k]);
    const client = input.clientRateLimit === undefined ? before?.clientRateLimit ?? null : input.clientRateLimit;
    const problem = client ? rateLimitProblem(client) : null;
    if (problem) throw invalid(`clientRateLimit.${problem.field}`, problem.message);
    return {
      maxConnections: kept('maxConnections'),
      maxMessageRate: kept('maxMessageRate'),
      clientRateLimit: client && limits(client) ? client : null,
      features: input.features ? [...new Set(input.features)] : before?.features ?? [],
      expires: input.expires === undefined ? before?.expires ?? null : expiry(input.expires),
      description: input.description ?? before?.description ?? '',
    };
  }
}

/** An expiry as the licence keeps it (ISO 8601, UTC); null: never. */
function expiry(v: string | null): string | null {
  if (v === null) return null;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw invalid('expires', 'expected an ISO 8601 time or null');
  return new Date(t).toISOString();
}
