// ControlPlatform: the control platform's main-thread half (spec 4.12). Owns the tenants
// (organizations, projects, applications), their licences, the shared tenant counters the
// workers enforce licences in, and the policy that admits applications' clients; keeps the
// workers told (a credential change empties their cached answers; a deleted or disabled
// application's clients are disconnected); re-applies licences as they expire; reports tenant
// usage as Prometheus metrics.
import { Gauge, type Registry } from 'prom-client';

import { TenantCounters, createTenantBuffer } from '../broker/tenant-counters.ts';
import type { Logger } from '../log/index.ts';
import type { CompiledAuthPolicy } from '../policies/types.ts';
import type { Store } from '../store/types.ts';
import { LICENSE_KIND, LicenseBook } from './licenses.ts';
import { KINDS, TenantDirectory } from './tenants.ts';
import { TenantSlots } from './tenant-slots.ts';
import { tenantPolicy } from './tenant-policy.ts';
import { CHANNEL_KIND, ChannelBook } from './channels.ts';
import { Signals, type BrokerSignals } from './signals.ts';
import { AlertEngine, RULE_KIND, registerAlertMetrics, type AlertRecord, type AlertRuleRecord } from './alerts/index.ts';
import { Notifier, type AlertNotice } from './notify/index.ts';

/** What the platform needs of the broker. */
export interface PlatformHost {
  /** Puts the applications' policy first in the authentication chain (null: none), with the
   * counters its answers name; called again on every credential change. */
  setTenantPolicy(policy: CompiledAuthPolicy | null, tenants: SharedArrayBuffer | null): void;
  /** Disconnects the clients of these applications on every worker. */
  kickTenants(applicationIds: string[]): Promise<void>;
  /** The broker's own signal values (connections, message counters, ...) for the alert rules. */
  brokerSignals: BrokerSignals;
  /** Calls `fn` with a worker's id once its thread has exited. */
  onWorkerExit(fn: (worker: number) => void): void;
}

export interface PlatformOptions {
  /** Slots for organizations and applications together (platform.maxTenants). */
  maxTenants: number;
  /** Worker threads (each keeps its share of a tenant's connections). */
  workers: number;
  maxTopicLevels: number;
  /** Seconds between alert evaluations (platform.alertInterval). */
  alertInterval: number;
  /** Alerts kept (platform.maxAlerts). */
  maxAlerts: number;
  nodeName: string;
  registry: Registry;
}

const EXPIRY_CHECK_MS = 10_000;

export class ControlPlatform {
  readonly tenants: TenantDirectory;
  readonly licenses: LicenseBook;
  readonly channels: ChannelBook;
  readonly alerts: AlertEngine;
  readonly notifier: Notifier;
  readonly signals: Signals;
  private readonly counters: TenantCounters;
  private readonly policy: CompiledAuthPolicy;
  private readonly timer: NodeJS.Timeout;
  private alertTimer: NodeJS.Timeout | null = null;
  private evaluating: Promise<void> | null = null;

  constructor(private readonly host: PlatformHost, store: Store, private readonly log: Logger, private readonly options: PlatformOptions) {
    this.counters = new TenantCounters(createTenantBuffer(options.maxTenants, options.workers));
    // A worker that dies gives its tenants' connections back (its clients are gone).
    host.onWorkerExit((worker) => this.counters.dropWorker(worker));
    const slots = new TenantSlots(this.counters);
    this.tenants = new TenantDirectory(store, slots, options.maxTopicLevels, {
      credentialsChanged: () => this.publishPolicy(),
      kick: (ids) => {
        this.host.kickTenants(ids).catch((err: unknown) => this.log.warn('tenant clients could not all be disconnected', { applications: ids, err }));
      },
    });
    this.licenses = new LicenseBook(store, this.tenants, () => this.publishPolicy());
    this.policy = tenantPolicy(this.tenants, (org, app) => this.licenses.clientRateLimit(org, app));
    this.timer = setInterval(() => this.licenses.apply(), EXPIRY_CHECK_MS).unref();
    this.channels = new ChannelBook(store);
    this.signals = new Signals(this.tenants, this.licenses, host.brokerSignals);
    this.notifier = new Notifier(log.named('notify'), options.registry);
    this.alerts = new AlertEngine(store, log.named('alerts'), {
      read: () => this.signals.read(),
      notify: (rule, alert, kind) => this.notify(rule, alert, kind),
      maxAlerts: options.maxAlerts,
    });
    registerAlertMetrics(options.registry, this.alerts);
    this.registerMetrics(options.registry);
  }

  /** The platform's record kinds in the admin store, each replicated across a cluster's nodes. */
  static readonly KINDS: readonly string[] = [KINDS.org, KINDS.project, KINDS.app, LICENSE_KIND, CHANNEL_KIND, RULE_KIND];

  /** A record changed on another node of the cluster (`doc` null: removed), applied by its owner
   * as this node's own change would be. The store is written by the caller. */
  async applyStored(kind: string, id: string, doc: unknown): Promise<void> {
    if (kind === LICENSE_KIND) await this.licenses.applyStored(id, doc as never);
    else if (kind === CHANNEL_KIND) await this.channels.applyStored(id, doc as never);
    else if (kind === RULE_KIND) await this.alerts.applyStoredRule(id, doc);
    else {
      await this.tenants.applyStored(kind, id, doc as never);
      // An application or organization gone, or back: its licence's limits are written again.
      this.licenses.apply();
    }
  }

  async load(): Promise<void> {
    await this.tenants.load();
    await this.licenses.load();
    await this.channels.load();
    await this.alerts.load();
    this.publishPolicy();
    this.alertTimer = setInterval(() => void this.evaluate(), this.options.alertInterval * 1000).unref();
  }

  /** Samples the signals and evaluates every alert rule once (one at a time). */
  evaluate(): Promise<void> {
    this.evaluating ??= (async () => {
      try {
        await this.signals.refresh();
        await this.alerts.evaluate();
      } catch (err) {
        this.log.error('alert evaluation failed', { err });
      } finally {
        this.evaluating = null;
      }
    })();
    return this.evaluating;
  }

  /** After tenants are deleted: their alert rules and (an organization's) channels. */
  async forgetTenants(organizationIds: readonly string[], applicationIds: readonly string[]): Promise<void> {
    for (const r of this.alerts.listRules()) {
      if ((r.organizationId !== null && organizationIds.includes(r.organizationId)) || (r.applicationId !== null && applicationIds.includes(r.applicationId))) await this.alerts.deleteRule(r.id);
    }
    await this.channels.forget(organizationIds);
  }

  /** Delivers a firing or resolved alert through the rule's enabled channels (in the background). */
  private notify(rule: AlertRuleRecord, alert: AlertRecord, kind: 'firing' | 'resolved'): void {
    const notice: AlertNotice = {
      kind, alertId: alert.id, ruleId: rule.id, ruleName: rule.name, severity: alert.severity, organizationId: alert.organizationId,
      signal: alert.signal, value: alert.value, threshold: alert.threshold, message: alert.message, firstTime: alert.firstTime,
      time: new Date().toISOString(), nodeName: this.options.nodeName,
    };
    for (const id of rule.channelIds) {
      const channel = this.channels.get(id);
      if (!channel || !channel.enabled) continue;
      void this.notifier.send(channel, notice).then((r) => {
        if (!r.ok) this.log.warn('alert notification failed', { channel: channel.name, type: channel.type, alert: alert.id, attempts: r.attempts, error: r.error });
      });
    }
  }

  /** Tenant metrics, read at each scrape from the shared counters. */
  private registerMetrics(registry: Registry): void {
    const platform = this;
    const labels = ['organization', 'application'] as const;
    const gauge = (name: string, help: string, pick: (u: ReturnType<TenantCounters['usage']>) => number) => new Gauge({
      name, help, labelNames: labels, registers: [registry],
      collect() {
        this.reset();
        const now = Date.now();
        for (const org of platform.tenants.organizations()) {
          const s = platform.tenants.slots.of(org.id);
          if (s) this.set({ organization: org.name, application: '' }, pick(platform.counters.usage(s.slot, now)));
        }
        for (const app of platform.tenants.applications()) {
          const s = platform.tenants.slots.of(app.id);
          const org = platform.tenants.organization(app.organizationId);
          if (s && org) this.set({ organization: org.name, application: app.name }, pick(platform.counters.usage(s.slot, now)));
        }
      },
    });
    gauge('spindle_tenant_connections', 'Connections of a tenant (application="" : the whole organization)', (u) => u.connections);
    // Cumulative counts kept in 32-bit shared counters: gauges (they wrap at 2^32).
    gauge('spindle_tenant_messages_received', 'Messages received from a tenant\'s clients since the tenant was created or the broker started', (u) => u.messages);
    gauge('spindle_tenant_acl_denied', 'Publishes and subscriptions of a tenant\'s clients refused outside its namespace (0x87)', (u) => u.denied);
    gauge('spindle_tenant_throttled', 'Times a tenant\'s connection was paused for the rest of a second, over its licence\'s message rate', (u) => u.throttled);
    gauge('spindle_tenant_quota_refused', 'CONNECTs of a tenant refused past its licence\'s connections (0x97)', (u) => u.quotaRefused);
    new Gauge({
      name: 'spindle_tenant_slots_used', help: 'Tenant slots in use (organizations and applications), of platform.maxTenants', registers: [registry],
      collect() {
        this.set(platform.tenants.slots.used);
      },
    });
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.alertTimer) clearInterval(this.alertTimer);
    await this.evaluating;
    await this.alerts.close();
    await this.notifier.close();
    this.host.setTenantPolicy(null, null);
  }

  /** The applications' policy, given again so every worker drops its cached answers. */
  private publishPolicy(): void {
    this.host.setTenantPolicy(this.tenants.organizations().length > 0 ? this.policy : null, this.counters.buffer);
  }
}
