// The main thread's features, built from the store whatever serves HTTP: data sources, rules,
// auth and ACL policies, scripts and extensions, log topics, traces, MQTT bridges, commands and
// the control platform, with their metrics and (in a cluster) the replication of their
// configuration. Built after the store opened and before the workers start: each feature sends
// its state to every worker as it starts (Supervisor.onWorkerStart), before the worker opens its
// listeners. The admin API, when enabled, serves routes over these; without it they all still run.
import { Registry } from 'prom-client';

import type { Supervisor } from './supervisor.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import { MemoryStore } from '../store/memory/memory-store.ts';
import { SOURCE_KIND, SourceRegistry } from '../sources/registry.ts';
import { RuleManager } from '../rules/manager.ts';
import { registerRuleMetrics } from '../rules/metrics.ts';
import { POLICY_STORE_KIND, PolicyManager } from '../policies/manager.ts';
import { registerPolicyMetrics } from '../policies/metrics.ts';
import { setHashConcurrency } from '../auth/strategies/password-strategy.ts';
import { BRIDGE_KIND, BridgeManager } from '../bridges/manager.ts';
import { registerBridgeMetrics } from '../bridges/metrics.ts';
import { ControlPlatform } from '../platform/platform.ts';
import type { ClusterLink, ConfigSync } from '../cluster/index.ts';
import { brokerSignals } from './broker-signals.ts';
import type { Feature, FeatureContext, Started, TapMatch } from '../features/feature.ts';
import { FEATURES } from './feature-list.ts';
import { MetricsCollector } from '../metrics/collector.ts';

export interface Features {
  /** The store the features write through (in a cluster, one that tells ConfigSync of each
   * change); with MEMORY an in-process one (objects last until exit). */
  readonly store: Store;
  /** The main thread's Prometheus registry (the features' metrics). */
  readonly registry: Registry;
  /** The node's metrics aggregated over the threads (/prometheus, the OpenTelemetry export): made
   * on first use. */
  readonly metrics: MetricsCollector;
  /** Replicates the configuration across the cluster's nodes (null without a cluster). */
  readonly sync: ConfigSync | null;
  readonly sources: SourceRegistry;
  readonly rules: RuleManager;
  readonly policies: PolicyManager;
  readonly bridges: BridgeManager;
  readonly platform: ControlPlatform;
  /** The features of the FEATURES list (feature-list.ts), started, by name. */
  readonly listed: ReadonlyMap<string, Started<unknown>>;
  /** The API of a feature of the FEATURES list (throws when it is not in the list). */
  get<API>(feature: Feature<API>): API;
  /** In a cluster, starts replicating the configuration (every kind registered by then is read
   * from the other nodes first); nothing without one. */
  replicate(): Promise<void>;
  /** Runs `fn` when the features close (before them: closers run in reverse). */
  onClose(fn: () => void | Promise<void>): void;
  /** Stops every feature, in the reverse order of their start. */
  close(): Promise<void>;
}

/** Builds and loads every feature; a failure closes what was built and is thrown. */
export async function startFeatures(supervisor: Supervisor, config: BrokerConfig, log: Logger, cluster: ClusterLink | null): Promise<Features> {
  const closers: (() => void | Promise<void>)[] = [];
  const close = async () => {
    for (const fn of closers.splice(0).reverse()) {
      try {
        await fn();
      } catch (err) {
        log.error('a feature failed to close', { err });
      }
    }
  };
  try {
    return await build(supervisor, config, log, cluster, closers, close);
  } catch (err) {
    await close();
    throw err;
  }
}

async function build(
  supervisor: Supervisor, config: BrokerConfig, log: Logger, cluster: ClusterLink | null,
  closers: (() => void | Promise<void>)[], close: () => Promise<void>,
): Promise<Features> {
  let store = supervisor.openedStore;
  if (!store) {
    const own = new MemoryStore();
    await own.open();
    closers.push(() => own.close());
    store = own;
  }
  const registry = new Registry();
  // One per node, made by its first user (the admin API's /prometheus, the OpenTelemetry export).
  let collector: MetricsCollector | null = null;
  const metrics = (): MetricsCollector => {
    if (collector) return collector;
    const made = new MetricsCollector(supervisor, log, registry, cluster ? { node: config.nodeName } : {});
    closers.push(() => made.close());
    return (collector = made);
  };
  // In a cluster the managers write through a store that tells ConfigSync of each change.
  // The cluster's modules (and the NATS client) load only when there is one.
  const clusterModule = cluster ? await import('../cluster/index.ts') : null;
  const sync = clusterModule ? new clusterModule.ConfigSync(log.named('cluster'), registry) : null;
  if (sync && clusterModule) {
    sync.attach(store);
    store = clusterModule.replicatingStore(store, sync);
    supervisor.endpoints.useStore(store);
  }
  // Data sources first (rules name them), then the rules, installed on every worker as it starts.
  const sources = new SourceRegistry(store, log);
  closers.push(() => sources.close());
  await sources.load();
  const lookup = { source: (id: string) => sources.get(id), typeOf: (id: string) => sources.record(id)?.type };
  const rules = new RuleManager(supervisor, store, lookup, log, { queueLimit: config.rules.actionQueueLimit });
  closers.push(() => rules.close());
  await rules.load();
  registerRuleMetrics(registry, rules);
  // Auth and ACL policies read data sources too; their chains answer the workers' questions.
  setHashConcurrency(config.auth.hashConcurrency);
  const policies = new PolicyManager(supervisor, store, { ...lookup, log }, log);
  closers.push(() => policies.close());
  sources.setInUseCheck((id) => rules.usesSource(id).length > 0 || policies.usesSource(id).length > 0);
  await policies.load();
  registerPolicyMetrics(registry, policies);
  // MQTT bridges: the configuration file's and the stored ones.
  const bridges = new BridgeManager(supervisor, store, log, config.nodeName);
  closers.push(() => bridges.close());
  if (cluster) bridges.useLeases(cluster.leases);
  await bridges.load(config.bridges);
  registerBridgeMetrics(registry, bridges);
  if (cluster && clusterModule) clusterModule.registerClusterMetrics(registry, cluster);
  // The control platform: its applications answer first in the authentication chain.
  const platform = new ControlPlatform({
    setTenantPolicy: (policy, tenants) => policies.setTenantPolicy(policy, tenants),
    kickTenants: async (applicationIds) => {
      await supervisor.callAll('clients.kickTenant', { applicationIds });
    },
    brokerSignals: () => brokerSignals(supervisor, rules),
    onWorkerExit: (fn) => supervisor.onWorkerExit(fn),
  }, store, log.named('platform'), {
    maxTenants: config.platform.maxTenants, workers: config.workers, maxTopicLevels: config.limits.maxTopicLevels, alertInterval: config.platform.alertInterval,
    maxAlerts: config.platform.maxAlerts, nodeName: config.nodeName, registry,
  });
  closers.push(() => platform.close());
  await platform.load();
  if (sync) registerReplicatedKinds(sync, { sources, rules, policies, bridges, platform, endpoints: supervisor.endpoints });
  const listed = await startListed({
    config, log, store, registry,
    tap: async (filters, sink) => supervisor.taps.open(filters, (items) => sink(items as TapMatch[])),
    workers: {
      call: supervisor.call, callAll: supervisor.callAll, running: supervisor.runningWorkers, onWorkerStart: supervisor.onWorkerStart,
      onDelayedAccepts: (fn) => supervisor.onDelayedAccepts(fn), replyDelayed: (w, replies) => supervisor.replyDelayed(w, replies),
      onOtelSpans: (fn) => supervisor.onOtelSpans(fn),
      onExclusiveNotes: (fn) => supervisor.onExclusiveNotes(fn), replyExclusive: (w, replies) => supervisor.replyExclusive(w, replies),
    },
    routing: { newHandle: supervisor.newHandle, setTap: supervisor.setTap, removeTap: supervisor.removeTap },
    replicate: (kind, apply) => sync?.register({ kind, apply: async (id, doc) => apply(id, doc) }),
    broker: {
      nodeName: config.nodeName,
      publishBatch: (messages, publisher, publisherHash, orderKey) => supervisor.publishBatch(messages, publisher, publisherHash, orderKey),
      endpoints: () => supervisor.endpoints.list().filter((e) => e.enabled).map((e) => ({
        id: e.id,
        port: e.port,
        protocol: e.useWebsocket ? (e.sslConfig ? 'wss' : 'ws') : e.sslConfig ? 'mqtts' : 'mqtt',
        ...(e.useWebsocket ? { path: e.path } : {}),
      })),
      endpointConfigs: () => supervisor.endpoints.list(),
      onEndpointsChange: (fn) => {
        supervisor.endpoints.onChange(() => fn('endpoints'));
        supervisor.onTlsReload(() => fn('tls-reload'));
      },
    },
    leases: cluster?.leases ?? null,
    cluster: cluster ? {
      addPart: (part) => cluster.addPart(part), departuresSettled: async () => cluster.forwards.idle() && (await cluster.qos.idle()),
      adoptionSettled: async () => cluster.adoption?.settled(),
      askAll: async (op) => cluster.adminOps ? cluster.adminOps.askAll(op, {}) : { answers: [], missing: [] },
    } : null,
    setWorkerState: (key, value) => supervisor.state.set(key, value),
    metrics: { series: () => metrics().series() },
    logLines: (sink) => supervisor.addLogLineSink(sink),
  }, closers);
  return {
    store, registry, sync, sources, rules, policies, bridges, platform, listed,
    get metrics() {
      return metrics();
    },
    get: (feature) => apiOf(listed, feature, 'is not in the FEATURES list'),
    async replicate() {
      if (!sync || !cluster) return;
      // Caught up with the other nodes' changes once this resolves.
      await cluster.addPart(sync);
      // Closed first: no change from another node reaches a feature that is closing.
      closers.push(() => sync.close());
    },
    onClose: (fn) => void closers.push(fn),
    close,
  };
}

/** Starts the features of the FEATURES list in order; each one's close runs before those
 * started before it. */
async function startListed(base: Omit<FeatureContext, 'log' | 'use'> & { log: Logger }, closers: (() => void | Promise<void>)[]): Promise<Map<string, Started<unknown>>> {
  const started = new Map<string, Started<unknown>>();
  const use = <API>(feature: Feature<API>): API => apiOf(started, feature, 'is used before it started (FEATURES order)');
  for (const feature of FEATURES) {
    if (started.has(feature.name)) throw new Error(`two features are named ${feature.name}`);
    const s = await feature.start({ ...base, log: base.log.named(feature.name), use });
    started.set(feature.name, s);
    if (s.close) closers.push(() => s.close!());
  }
  return started;
}

/** The API of a started feature; throws, saying `missing`, when it has not started. */
function apiOf<API>(started: ReadonlyMap<string, Started<unknown>>, feature: Feature<API>, missing: string): API {
  const s = started.get(feature.name);
  if (!s) throw new Error(`feature ${feature.name} ${missing}`);
  return s.api as API;
}

/**
 * The configuration objects replicated across the cluster's nodes, and the feature that applies
 * each change made on another node (commands and bridges run on one node at a time: their
 * leases). The admin API adds its own kinds (admin users, dashboards) when it runs. Not
 * replicated: node-specific state (local and proxy subscriptions, alerts firing).
 */
function registerReplicatedKinds(sync: ConfigSync, m: {
  sources: SourceRegistry; rules: RuleManager; policies: PolicyManager;
  bridges: BridgeManager; platform: ControlPlatform; endpoints: Supervisor['endpoints'];
}): void {
  sync.register({ kind: 'endpoint', apply: (id, doc) => m.endpoints.applyStored(id, doc) });
  sync.register({ kind: SOURCE_KIND, apply: (id, doc) => m.sources.applyStored(id, doc as never) });
  sync.register({ kind: 'rule', apply: (id, doc) => m.rules.applyStored(id, doc as never) });
  for (const kind of ['auth', 'acl'] as const) sync.register({ kind: POLICY_STORE_KIND[kind], apply: (id, doc) => m.policies.applyStored(kind, id, doc as never) });
  sync.register({ kind: BRIDGE_KIND, apply: (id, doc) => m.bridges.applyStored(id, doc as never) });
  for (const kind of ControlPlatform.KINDS) sync.register({ kind, apply: (id, doc) => m.platform.applyStored(kind, id, doc) });
}
