// Starts the admin API: the store for admin objects, the admin users, every route module, the
// OpenAPI document, and the HTTP server. Runs in the main thread beside the supervisor.
import { readFileSync } from 'node:fs';
import net from 'node:net';

import { Registry } from 'prom-client';

import type { Supervisor } from '../broker/supervisor.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { MemoryStore } from '../store/memory/memory-store.ts';
import { AdminAuth } from './auth.ts';
import { AuthMetrics } from './auth-metrics.ts';
import type { AdminContext } from './context.ts';
import { json, type Route } from './http.ts';
import { openApiDocument } from './openapi.ts';
import { AdminServer } from './server.ts';
import { userRoutes } from './routes/users.ts';
import { loginRoutes } from './routes/login.ts';
import { ConsoleAssets } from './console/assets.ts';
import { LiveFeed, type LivePeers, type PeerTotals } from './console/live-feed.ts';
import { clientRetainedCount } from '../broker/client-retained.ts';
import { MAX_REQUEST, MessageViewers, registerViewerMetrics, type Viewer } from './console/message-viewers.ts';
import { consoleViewerAcl } from './console/viewer-acl.ts';
import type { WorkerMetricsSnapshot } from '../worker/ops/metrics.ts';
import { systemRoutes } from './routes/system.ts';
import { licenseRoutes } from './routes/license.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { endpointRoutes } from './routes/endpoints.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { mqttRoutes } from './routes/mqtt.ts';
import { ruleRoutes } from './routes/rules.ts';
import { extensionRoutes, scriptRoutes } from './routes/scripts.ts';
import { ProcessorManager } from '../scripts/manager.ts';
import { registerProcessorMetrics } from '../scripts/metrics.ts';
import { sourceRoutes } from './routes/sources.ts';
import { logRoutes } from './routes/logs.ts';
import { policyRoutes } from './routes/policies.ts';
import { PolicyManager } from '../policies/manager.ts';
import { registerPolicyMetrics } from '../policies/metrics.ts';
import { setHashConcurrency } from '../auth/strategies/password-strategy.ts';
import { SourceRegistry } from '../sources/registry.ts';
import { RuleManager } from '../rules/manager.ts';
import { registerRuleMetrics } from '../rules/metrics.ts';
import { LogTopicManager } from '../trace/log-topic-manager.ts';
import { logTopicRoutes } from './routes/log-topics.ts';
import { TraceManager } from '../trace/trace-manager.ts';
import { traceRoutes } from './routes/traces.ts';
import { commandRoutes } from './routes/commands.ts';
import { COMMAND_KIND, CommandManager } from '../commands/manager.ts';
import { registerCommandMetrics } from '../commands/metrics.ts';
import type { BrokerInfo } from '../commands/types.ts';
import { topicFilterProblem } from '../auth/topic-filter.ts';
import { BRIDGE_KIND, BridgeManager } from '../bridges/manager.ts';
import { registerBridgeMetrics } from '../bridges/metrics.ts';
import { bridgeRoutes } from './routes/bridges.ts';
import { ControlPlatform } from '../platform/platform.ts';
import { AuditLog } from './audit.ts';
import { platformAuthRoutes } from './v1/auth.ts';
import { tenantRoutes } from './v1/tenants.ts';
import { alertRoutes } from './v1/alerts.ts';
import { auditRoutes } from './v1/audit-logs.ts';
import { brokerSignals } from './broker-signals.ts';
import { ConfigSync, registerClusterMetrics, replicatingStore, type ClusterAdminOps, type ClusterLink } from '../cluster/index.ts';
import { POLICY_STORE_KIND } from '../policies/manager.ts';
import { SOURCE_KIND } from '../sources/registry.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface AdminHandle {
  readonly port: number;
  readonly context: AdminContext;
  readonly routes: readonly Route[];
  close(): Promise<void>;
}

/** Every route module; each takes the context and answers its routes. */
const MODULES: readonly ((ctx: AdminContext) => Route[])[] = [
  loginRoutes,
  userRoutes,
  systemRoutes,
  licenseRoutes,
  dashboardRoutes,
  endpointRoutes,
  metricsRoutes,
  mqttRoutes,
  sourceRoutes,
  ruleRoutes,
  commandRoutes,
  policyRoutes,
  scriptRoutes,
  extensionRoutes,
  logTopicRoutes,
  traceRoutes,
  logRoutes,
  bridgeRoutes,
  platformAuthRoutes,
  tenantRoutes,
  alertRoutes,
  auditRoutes,
];

/** The uWS topic of the console's live sockets. */
const LIVE_TOPIC = 'live';

export async function startAdmin(supervisor: Supervisor, config: BrokerConfig, log: Logger, cluster: ClusterLink | null = null): Promise<AdminHandle> {
  const c = config.admin;
  let store = supervisor.openedStore;
  let ownStore: MemoryStore | null = null;
  if (!store) {
    ownStore = new MemoryStore();
    await ownStore.open();
    store = ownStore;
  }
  const registry = new Registry();
  // In a cluster the managers write through a store that tells ConfigSync of each change.
  const sync = cluster ? new ConfigSync(log.named('cluster'), registry) : null;
  if (sync) {
    sync.attach(store);
    store = replicatingStore(store, sync);
    supervisor.endpoints.useStore(store);
  }
  const limits = { maxFailures: c.loginMaxFailures, windowMs: c.loginWindow * 1000, lockoutMs: c.loginLockout * 1000 };
  const auth = new AdminAuth(store, { username: c.username, password: c.password, tokenLifetime: c.tokenLifetime, limits }, log, new AuthMetrics(registry));
  await auth.init();
  // Data sources first (rules name them), then the rules, started on every worker.
  const sources = new SourceRegistry(store, log);
  await sources.load();
  const rules = new RuleManager(
    supervisor,
    store,
    { source: (id) => sources.get(id), typeOf: (id) => sources.record(id)?.type },
    log,
    { queueLimit: config.rules.actionQueueLimit },
  );
  await rules.load();
  registerRuleMetrics(registry, rules);
  // Auth and ACL policies read data sources too; their chains answer the workers' questions.
  setHashConcurrency(config.auth.hashConcurrency);
  const policies = new PolicyManager(supervisor, store, { source: (id) => sources.get(id), typeOf: (id) => sources.record(id)?.type, log }, log);
  sources.setInUseCheck((id) => rules.usesSource(id).length > 0 || policies.usesSource(id).length > 0);
  await policies.load();
  registerPolicyMetrics(registry, policies);
  // Scripts and extensions: run by the workers' pools, on the PUBLISHes their filters match.
  const processors = new ProcessorManager(supervisor, store, config.extensions.dir, log);
  await processors.load();
  registerProcessorMetrics(registry, processors);
  const logTopics = new LogTopicManager(supervisor, store, log, topicFilterProblem);
  await logTopics.load();
  const traces = new TraceManager(supervisor, log);
  // MQTT bridges: the configuration file's and the stored ones.
  const bridges = new BridgeManager(supervisor, store, log, config.nodeName);
  if (cluster) bridges.useLeases(cluster.leases);
  await bridges.load(config.bridges);
  registerBridgeMetrics(registry, bridges);
  if (cluster) registerClusterMetrics(registry, cluster);
  // Commands publish into the broker: started once it runs, stopped (closers run in reverse)
  // before anything else closes, and before the supervisor shuts the workers down.
  // A registration (NACOS) announces the enabled endpoints, read again while it runs.
  const brokerInfo: BrokerInfo = {
    nodeName: config.nodeName,
    endpoints: () => supervisor.endpoints.list().filter((e) => e.enabled).map((e) => ({
      id: e.id,
      port: e.port,
      protocol: e.useWebsocket ? (e.sslConfig ? 'wss' : 'ws') : e.sslConfig ? 'mqtts' : 'mqtt',
      ...(e.useWebsocket ? { path: e.path } : {}),
    })),
  };
  const commands = new CommandManager(supervisor, store, log.named('commands'), { maxTopicLevels: config.limits.maxTopicLevels, maxPayload: config.limits.maxPacketSize }, brokerInfo);
  // In a cluster a command that brings records in runs on one node at a time (its lease's holder).
  if (cluster) commands.useLeases(cluster.leases);
  await commands.load();
  registerCommandMetrics(registry, commands);
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
  await platform.load();
  const audit = new AuditLog(store, log.named('audit'), registry, config.audit.retentionDays);
  const closers: (() => void | Promise<void>)[] = [
    () => audit.close(),
    () => platform.close(),
    () => sources.close(),
    () => rules.close(),
    () => policies.close(),
    () => traces.close(),
    () => bridges.close(),
    () => commands.close(),
  ];
  if (sync && cluster) {
    registerReplicatedKinds(sync, { auth, sources, rules, policies, processors, logTopics, commands, bridges, platform, endpoints: supervisor.endpoints });
    await cluster.addPart(sync);
    // Closed first: no change from another node reaches a manager that is closing.
    closers.push(() => sync.close());
  }
  const context: AdminContext = { supervisor, config, store, auth, rules, sources, commands, policies, processors, logTopics, traces, bridges, platform, audit, cluster, log, registry, http: { host: c.host, port: c.port }, onClose: (fn) => closers.push(fn) };
  const consoleAssets = ConsoleAssets.load();
  if (!consoleAssets) log.warn('the web console is not built (no dist/console): / answers 404; make build builds it');
  const server = new AdminServer({ host: c.host, port: c.port, maxBodySize: c.maxBodySize, auth, log, console: consoleAssets, audit: (req, route, status) => audit.record(req, route, status) });
  // The console's live picture, pushed over /api/live once a second while a console is open.
  const live = new LiveFeed({
    nodeName: config.nodeName,
    metrics: () => supervisor.callAll<WorkerMetricsSnapshot>('metrics'),
    retained: () => clientRetainedCount(supervisor.retained),
    // In a cluster, the other nodes' figures too (the admin queries across nodes).
    ...(cluster?.adminOps ? { peers: peersOf(cluster.adminOps) } : {}),
  }, (message) => server.publish(LIVE_TOPIC, message), log.named('console'));
  server.liveSocket({ path: '/api/live', topic: LIVE_TOPIC, opened: () => live.opened(), closed: () => live.closed() });
  closers.push(() => live.close());
  // The live message view and log tail, over /api/watch: a socket's own filters, checked against
  // the ACL as the signed-in user's subscribe, bounded per socket (message-viewers.ts).
  const viewers = new MessageViewers(supervisor, consoleViewerAcl(policies, config.auth), log.named('console'));
  registerViewerMetrics(registry, viewers);
  server.stateSocket<Viewer>({
    path: '/api/watch',
    maxPayloadLength: MAX_REQUEST,
    maxBackpressure: 1024 * 1024,
    open: (socket, who) => viewers.opened(socket, who),
    message: (v, text) => viewers.message(v, text),
    close: (v) => viewers.closed(v),
  });
  closers.push(() => viewers.close());
  for (const module of MODULES) server.add(module(context));
  server.add([{
    method: 'GET',
    path: '/public/openapi.json',
    access: 'public',
    tag: 'public',
    summary: 'This OpenAPI document',
    handler: () => json(openApiDocument(server.all().filter((r) => !r.path.startsWith('/api/v1/')), VERSION)),
  }, {
    method: 'GET',
    path: '/public/openapi-v1.json',
    access: 'public',
    tag: 'public',
    summary: 'The OpenAPI document of the control platform (/api/v1)',
    handler: () => json(openApiDocument(server.all().filter((r) => r.path.startsWith('/api/v1/')), VERSION, 'Spindle control platform API')),
  }]);
  if (c.port !== 0) await checkPortFree(c.host, c.port);
  const port = await server.listen();
  context.http.port = port;
  log.info('admin API listening', { host: c.host, port });
  return {
    port,
    context,
    routes: server.all(),
    async close() {
      server.close();
      for (const fn of closers.reverse()) await fn();
      if (ownStore) await ownStore.close();
    },
  };
}

/**
 * The configuration objects replicated across the cluster's nodes, and the manager that applies
 * each change made on another node (commands and bridges run on one node at a time: their
 * leases) and the control platform's records. Not replicated: the admin licence (kept in memory
 * by its owner, no apply path yet), the JWT signing secret and the
 * configuration file's admin user (per node), node-specific state (local and proxy subscriptions,
 * alerts firing).
 */
function registerReplicatedKinds(sync: ConfigSync, m: {
  auth: AdminAuth; sources: SourceRegistry; rules: RuleManager; policies: PolicyManager; processors: ProcessorManager; logTopics: LogTopicManager;
  commands: CommandManager; bridges: BridgeManager; platform: ControlPlatform; endpoints: Supervisor['endpoints'];
}): void {
  sync.register({ kind: 'endpoint', apply: (id, doc) => m.endpoints.applyStored(id, doc) });
  sync.register({ kind: 'admin-user', apply: async (id, doc) => m.auth.applyStored(id, doc as never), local: (id) => id === m.auth.configUsername });
  sync.register({ kind: SOURCE_KIND, apply: (id, doc) => m.sources.applyStored(id, doc as never) });
  sync.register({ kind: 'rule', apply: (id, doc) => m.rules.applyStored(id, doc as never) });
  for (const kind of ['auth', 'acl'] as const) sync.register({ kind: POLICY_STORE_KIND[kind], apply: (id, doc) => m.policies.applyStored(kind, id, doc as never) });
  for (const kind of ['script', 'extension'] as const) sync.register({ kind, apply: async (id, doc) => m.processors.applyStored(kind, id, doc as never) });
  sync.register({ kind: 'log-topic', apply: (id, doc) => m.logTopics.applyStored(id, doc as never) });
  sync.register({ kind: COMMAND_KIND, apply: (id, doc) => m.commands.applyStored(id, doc as never) });
  sync.register({ kind: BRIDGE_KIND, apply: (id, doc) => m.bridges.applyStored(id, doc as never) });
  for (const kind of ControlPlatform.KINDS) sync.register({ kind, apply: (id, doc) => m.platform.applyStored(kind, id, doc) });
  // Read from the store at each request: the stored document is all there is to apply.
  sync.register({ kind: 'dashboard', apply: async () => undefined });
}

/** The other nodes of the cluster as the console's live feed asks them. */
function peersOf(ops: ClusterAdminOps): LivePeers {
  return { running: () => ops.runningNodes(), ask: (node) => ops.askNode<PeerTotals>(node, 'metrics', {}) };
}

/** uWS binds with SO_REUSEPORT: a plain exclusive bind first tells whether the port is free. */
function checkPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(Object.assign(new Error(`admin port ${port} on ${host} is in use (${err.code})`), { code: err.code })));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
