// Signals: what the alert rules watch, sampled before each evaluation (main thread). The broker's
// own counters come from the host (the workers' statistics, the rule engine, the worker
// threads); the tenants' from the shared tenant counters, summed per organization and per
// application, with the licence usage in percent (the message rate over the last interval).
import type { LicenseBook } from './licenses.ts';
import type { TenantDirectory } from './tenants.ts';
import type { SignalSample } from './alerts/index.ts';

export type BrokerSignals = () => Promise<Record<string, number>>;

export class Signals {
  private last: SignalSample = { time: Date.now(), broker: {}, organizations: new Map(), applications: new Map() };
  private readonly previousMessages = new Map<string, { time: number; messages: number }>();

  constructor(private readonly tenants: TenantDirectory, private readonly licenses: LicenseBook, private readonly broker: BrokerSignals) {}

  /** The sample taken by the last refresh. */
  read(): SignalSample {
    return this.last;
  }

  async refresh(now = Date.now()): Promise<SignalSample> {
    const broker = await this.broker();
    const organizations = new Map<string, Record<string, number>>();
    const applications = new Map<string, Record<string, number>>();
    for (const org of this.tenants.organizations()) organizations.set(org.id, this.tenant(org.id, null, now));
    for (const app of this.tenants.applications()) applications.set(app.id, this.tenant(app.organizationId, app.id, now));
    for (const id of this.previousMessages.keys()) if (!organizations.has(id) && !applications.has(id)) this.previousMessages.delete(id);
    this.last = { time: now, broker, organizations, applications };
    return this.last;
  }

  private tenant(organizationId: string, applicationId: string | null, now: number): Record<string, number> {
    const u = this.licenses.usage(organizationId, applicationId, now);
    const values: Record<string, number> = {
      'tenant.connections': u.connections,
      'tenant.messages.received': u.messagesReceived,
      'tenant.acl.denied': u.aclDenied,
      'tenant.throttled': u.throttled,
      'tenant.quota.refused': u.quotaRefused,
    };
    if (u.connectionsUsage !== null) values['license.connections.usage'] = u.connectionsUsage;
    const key = applicationId ?? organizationId;
    const before = this.previousMessages.get(key);
    this.previousMessages.set(key, { time: now, messages: u.messagesReceived });
    if (u.maxMessageRate !== null && before !== undefined && now > before.time) {
      const rate = (((u.messagesReceived - before.messages) >>> 0) * 1000) / (now - before.time);
      values['license.messages.usage'] = Math.round((rate / u.maxMessageRate) * 10000) / 100;
    }
    return values;
  }
}
