// Starts the admin API over the node's features: the admin users, the audit log, every route
// module, the OpenAPI document, the console's live sockets, and the HTTP server. Runs in the main
// thread beside the supervisor; the features run with or without it (node/features.ts).
import net from 'node:net';

import type { Supervisor } from '../node/supervisor.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { Features } from '../node/features.ts';
import { AdminAuth } from './auth.ts';
import { AuthMetrics } from './auth-metrics.ts';
import type { AdminContext } from './context.ts';
import { json, type Route } from './http.ts';
import { openApiDocument } from './openapi.ts';
import { AdminServer } from './server.ts';
import { httpsSource } from './https.ts';
import { userRoutes } from './routes/users.ts';
import { loginRoutes } from './routes/login.ts';
import { ConsoleAssets } from './console/assets.ts';
import { LiveFeed, type LivePeers, type PeerTotals } from './console/live-feed.ts';
import { clientRetainedCount } from '../broker/client-retained.ts';
import { MAX_REQUEST, MessageViewers, registerViewerMetrics, type Viewer } from './console/message-viewers.ts';
import { consoleViewerAcl } from './console/viewer-acl.ts';
import { systemRoutes } from './routes/system.ts';
import { licenseRoutes } from './routes/license.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { endpointRoutes } from './routes/endpoints.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { mqttRoutes } from './routes/mqtt.ts';
import { ruleRoutes } from './routes/rules.ts';
import { sourceRoutes } from './routes/sources.ts';
import { logRoutes } from './routes/logs.ts';
import { policyRoutes } from './routes/policies.ts';
import { bridgeRoutes } from './routes/bridges.ts';
import { AuditLog } from './audit.ts';
import { platformAuthRoutes } from './v1/auth.ts';
import { tenantRoutes } from './v1/tenants.ts';
import { alertRoutes } from './v1/alerts.ts';
import { auditRoutes } from './v1/audit-logs.ts';
import type { ClusterAdminOps, ClusterLink } from '../cluster/index.ts';
import { VERSION } from '../install/root.ts';


export interface AdminHandle {
  readonly port: number;
  /** Served over HTTPS (admin.tls). */
  readonly secure: boolean;
  /** The plain-HTTP port beside HTTPS (admin.tls.plain redirect or on); null: none. */
  readonly plainPort: number | null;
  /** SIGHUP: the certificate read again for new connections (logged; a bad one keeps the old). */
  reloadTls(): Promise<void>;
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
  policyRoutes,
  logRoutes,
  bridgeRoutes,
  platformAuthRoutes,
  tenantRoutes,
  alertRoutes,
  auditRoutes,
];

/** The uWS topic of the console's live sockets. */
const LIVE_TOPIC = 'live';

export async function startAdmin(supervisor: Supervisor, config: BrokerConfig, log: Logger, cluster: ClusterLink | null, features: Features): Promise<AdminHandle> {
  const c = config.admin;
  const { store, registry, sync, sources, rules, policies, bridges, platform } = features;
  const limits = { maxFailures: c.loginMaxFailures, windowMs: c.loginWindow * 1000, lockoutMs: c.loginLockout * 1000 };
  const auth = new AdminAuth(store, { username: c.username, password: c.password, tokenLifetime: c.tokenLifetime, limits }, log, new AuthMetrics(registry));
  await auth.init();
  if (sync) {
    sync.register({ kind: 'admin-user', apply: async (id, doc) => auth.applyStored(id, doc as never), local: (id) => id === auth.configUsername });
    // Read from the store at each request: the stored document is all there is to apply.
    sync.register({ kind: 'dashboard', apply: async () => undefined });
  }
  await features.replicate();
  const audit = new AuditLog(store, log.named('audit'), registry, config.audit.retentionDays);
  const closers: (() => void | Promise<void>)[] = [() => audit.close()];
  const context: AdminContext = { supervisor, config, features, store, auth, rules, sources, policies, bridges, platform, audit, cluster, log, registry, http: { host: c.host, port: c.port }, onClose: (fn) => closers.push(fn) };
  const consoleAssets = ConsoleAssets.load();
  if (!consoleAssets) log.warn('the web console is not built (no dist/console): / answers 404; make build builds it');
  // HTTPS with a certificate of its own or an endpoint's (admin.tls; a bad one stops the start).
  const tls = httpsSource(config, (id) => supervisor.endpoints.get(id));
  const plain = { mode: c.tls.plain, host: c.tls.plainHost === '' ? c.host : c.tls.plainHost, port: c.tls.plainPort };
  const server = new AdminServer({ host: c.host, port: c.port, maxBodySize: c.maxBodySize, auth, log, console: consoleAssets, audit: (req, route, status, read) => audit.record(req, route, status, read), auditReads: config.audit.reads, tls, plain });
  // The console's live picture, pushed over /api/live once a second while a console is open.
  const live = new LiveFeed({
    nodeName: config.nodeName,
    metrics: () => supervisor.callAll('metrics'),
    retained: () => clientRetainedCount(supervisor.retained),
    routerSubscriptions: () => supervisor.router.subscriptionCount,
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
  // The routes of the features of the FEATURES list.
  for (const f of features.listed.values()) if (f.routes) server.add(f.routes());
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
  if (tls && plain.mode !== 'off' && plain.port !== 0) await checkPortFree(plain.host, plain.port);
  const port = await server.listen();
  context.http.port = port;
  log.info('admin API listening', { host: c.host, port, https: tls !== null, ...(server.plainPort !== null ? { plain: plain.mode, plainPort: server.plainPort } : {}) });
  return {
    port,
    secure: tls !== null,
    plainPort: server.plainPort,
    async reloadTls() {
      try {
        const files = await server.reloadTls();
        if (files) log.info('admin API certificate reloaded', { cert: files.cert });
      } catch (err) {
        log.error('admin API certificate reload failed; new connections keep the old one', { err });
      }
    },
    context,
    routes: server.all(),
    async close() {
      server.close();
      for (const fn of closers.reverse()) await fn();
    },
  };
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
