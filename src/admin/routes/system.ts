// System routes (spec 4.2 and the /api/cluster and /api/system paths of 4.1): the system config,
// the health probe, the single-node cluster view, process and worker resources, and the export
// and import of the broker configuration with its endpoints and dashboards. The work is done in
// ../health.ts, ../samplers.ts, ../config-export.ts and ../config-import.ts.
import os from 'node:os';

import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { checkHealth } from '../health.ts';
import { CpuSampler, EluSampler, round2 } from '../samplers.ts';
import { OMITTED_KEYS, exportedConfig } from '../config-export.ts';
import { importConfig } from '../config-import.ts';
import { listDashboards } from './dashboard.ts';
import { drain as drainFeature } from '../../features/drain/index.ts';
import { VERSION } from '../../install/root.ts';
import { NodeFigureSampler, type NodeFigures } from '../../cluster/index.ts';

/** A node's figures as /api/cluster/nodes answers them (times as ISO text, uptime in seconds). */
function flat(f: NodeFigures, now: number) {
  return {
    version: f.version, startedAt: new Date(f.startedAt).toISOString(), uptime: Math.max(0, Math.floor((now - f.startedAt) / 1000)),
    cpuPercent: f.cpuPercent, cpus: f.cpus, rssBytes: f.rssBytes, heapUsedBytes: f.heapUsedBytes, totalMemoryBytes: f.totalMemoryBytes,
  };
}


export function systemRoutes(ctx: AdminContext): Route[] {
  const cpu = new CpuSampler();
  const drain = ctx.features.get(drainFeature);
  const mainElu = new EluSampler();
  const figures = new NodeFigureSampler();

  function defaultEndpoint(): { host: string; port: number } | undefined {
    const e = ctx.supervisor.endpoints.list().find((x) => x.isDefault && x.enabled);
    if (e) return { host: e.host ?? ctx.config.mqtt.host, port: e.port };
    const p = ctx.supervisor.ports;
    const port = p.tcp ?? p.tls ?? p.ws;
    return port === undefined ? undefined : { host: ctx.config.mqtt.host, port };
  }

  function node() {
    const e = defaultEndpoint();
    const host = e && !isWildcard(e.host) ? e.host : os.hostname();
    return { id: ctx.config.nodeName, address: e ? `${host}:${e.port}` : host, status: 'running' };
  }

  return [
    {
      method: 'GET',
      path: '/system/config',
      access: 'read',
      tag: 'system',
      summary: 'System config: {mqtt: {port, host} of the default endpoint, http: {port, host} of this API, cluster: {enabled}}',
      handler() {
        const e = defaultEndpoint();
        return ok({
          mqtt: { port: e?.port ?? null, host: e?.host ?? ctx.config.mqtt.host },
          http: { port: ctx.http.port, host: ctx.http.host },
          cluster: { enabled: ctx.cluster !== null },
          node: { name: ctx.config.nodeName, version: VERSION, workers: ctx.config.workers },
          store: { type: ctx.config.store.storeType },
        });
      },
    },
    {
      method: 'GET',
      path: '/health',
      access: 'public',
      tag: 'system',
      summary: 'Health probe without credentials (liveness): {status: UP|DOWN, draining, timestamp}; DOWN (HTTP 503) when no worker thread runs or the store does not answer. A draining node is UP (200) with draining: true: it still serves its clients until they moved',
      async handler() {
        const h = await checkHealth(ctx);
        const body: Record<string, unknown> = { status: h.status, draining: drain.draining, timestamp: new Date().toISOString() };
        if (h.status === 'DOWN') body.reason = h.reasons.join('; ');
        return json(body, h.status === 'UP' ? 200 : 503);
      },
    },
    {
      method: 'GET',
      path: '/health/ready',
      access: 'public',
      tag: 'system',
      summary: 'Readiness probe without credentials: 200 {status: UP, timestamp} when the node accepts new MQTT connections; 503 {status: DRAINING|DOWN, reason} while it drains or is drained (a load balancer or a Kubernetes readinessProbe then sends no new client), or is down',
      async handler() {
        const h = await checkHealth(ctx);
        const status = h.status === 'DOWN' ? 'DOWN' : drain.draining ? 'DRAINING' : 'UP';
        const body: Record<string, unknown> = { status, timestamp: new Date().toISOString() };
        if (status === 'DOWN') body.reason = h.reasons.join('; ');
        if (status === 'DRAINING') body.reason = `the node is ${drain.status().state}: it accepts no new connection`;
        return json(body, status === 'UP' ? 200 : 503);
      },
    },
    {
      method: 'GET',
      path: '/public/cluster',
      access: 'public',
      tag: 'system',
      summary: 'The cluster nodes {nodes: [{id, address, status}]}: every node this one knows (running or down); this node only without a cluster',
      handler: () => json({ nodes: ctx.cluster ? ctx.cluster.nodes().map(({ id, address, status }) => ({ id, address, status })) : [node()] }),
    },
    {
      method: 'GET',
      path: '/api/cluster/status',
      access: 'read',
      tag: 'system',
      summary: 'Cluster status: {enabled, status (single-node, healthy: every node running, degraded), self, nodes, runningNodes, counters, parts: {retained: counters of retained messages across nodes, adminOps: admin queries across nodes, ...}}',
      handler() {
        if (!ctx.cluster) return ok({ enabled: false, status: 'single-node', self: ctx.config.nodeName, nodes: 1, runningNodes: 1 });
        const nodes = ctx.cluster.nodes();
        const running = nodes.filter((n) => n.status === 'running').length;
        return ok({ enabled: true, status: running === nodes.length ? 'healthy' : 'degraded', self: ctx.config.nodeName, nodes: nodes.length, runningNodes: running, counters: { ...ctx.cluster.counters, ...ctx.cluster.claims?.counters, sessionsAdopted: ctx.cluster.adoption?.adopted ?? 0 }, parts: ctx.cluster.partCounters() });
      },
    },
    {
      method: 'GET',
      path: '/api/cluster/nodes',
      access: 'read',
      tag: 'system',
      summary: 'Cluster nodes with details, this node first: every node its id, address, status, lastSeen (this node: now; another: its last heartbeat), and the figures its heartbeat carries: version, startedAt, uptime (s), cpuPercent (process CPU, percent of one core), cpus, rssBytes, heapUsedBytes (main thread), totalMemoryBytes; this node also its workers. A node of an older build has no figures. Connections per node are in the console\'s live samples (/api/live)',
      handler() {
        const workers = ctx.supervisor.workerStates();
        const now = Date.now();
        const self = {
          ...node(), self: true, lastSeen: new Date(now).toISOString(),
          ...flat(figures.sample(), now),
          // The supervisor's start (the process's, a few ms later): as /api/system/health says it.
          startedAt: new Date(ctx.supervisor.startedAt).toISOString(),
          uptime: Math.floor((now - ctx.supervisor.startedAt) / 1000),
          workers: { running: workers.filter((w) => w.running).length, total: workers.length },
        };
        if (!ctx.cluster) return ok([self]);
        const [, ...others] = ctx.cluster.nodes();
        return ok([{ ...self, address: ctx.cluster.address }, ...others.map(({ figures: f, ...n }) => ({ ...n, ...(f ? flat(f, now) : {}) }))]);
      },
    },
    {
      method: 'GET',
      path: '/api/system/health',
      access: 'read',
      tag: 'system',
      summary: 'Detailed health: status, worker threads (running, total, restarts), store kind and reachability, uptime, version',
      async handler() {
        const h = await checkHealth(ctx);
        return ok({
          status: h.status,
          ...(h.reasons.length ? { reasons: h.reasons } : {}),
          timestamp: new Date().toISOString(),
          node: ctx.config.nodeName,
          version: VERSION,
          startedAt: new Date(ctx.supervisor.startedAt).toISOString(),
          uptime: Math.floor((Date.now() - ctx.supervisor.startedAt) / 1000),
          workers: { running: h.running, total: h.workers.length, restarts: h.workers.reduce((n, w) => n + w.restarts, 0), threads: h.workers },
          store: { kind: ctx.store.kind, configured: ctx.config.store.storeType, ...h.store },
        });
      },
    },
    {
      method: 'GET',
      path: '/api/system/resources',
      access: 'read',
      tag: 'system',
      summary: 'Process CPU (percent of one core, since the previous call) and memory, main-thread and per-worker event-loop utilization and heap, load average, CPUs',
      async handler() {
        const mem = process.memoryUsage();
        const workers = await Promise.all(ctx.supervisor.workerStates().map(async (w) => {
          if (!w.running) return { id: w.id, running: false };
          try {
            return { id: w.id, running: true, ...(await ctx.supervisor.call(w.id, 'system.resources', {}, 2000)) };
          } catch (err) {
            return { id: w.id, running: true, error: (err as Error).message };
          }
        }));
        const cpus = os.cpus().length;
        const cpuPercent = cpu.sample();
        return ok({
          timestamp: new Date().toISOString(),
          process: {
            pid: process.pid,
            uptime: Math.floor(process.uptime()),
            cpuPercent,
            cpuPercentOfHost: round2(cpuPercent / Math.max(1, cpus)),
            memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, arrayBuffers: mem.arrayBuffers },
            eventLoopUtilization: mainElu.sample(),
          },
          system: {
            cpus,
            loadAverage: os.loadavg().map(round2),
            totalMemory: os.totalmem(),
            freeMemory: os.freemem(),
            platform: process.platform,
            arch: process.arch,
            node: process.version,
          },
          workers,
        });
      },
    },
    {
      method: 'GET',
      path: '/system/config/export',
      access: 'read',
      tag: 'system',
      summary: `Export {config, timestamp}: config is a JSON document with the broker configuration (keys as in the config file; ${OMITTED_KEYS.join(', ')} omitted), the endpoints and the dashboards`,
      async handler() {
        const doc = {
          ...exportedConfig(ctx.config),
          endpoints: ctx.supervisor.endpoints.list().map(({ source: _source, ...shown }) => shown),
          dashboards: await listDashboards(ctx.store),
          omitted: OMITTED_KEYS,
        };
        return ok({ config: JSON.stringify(doc, null, 2), timestamp: new Date().toISOString() });
      },
    },
    route({
      method: 'POST',
      path: '/api/system/config/import',
      access: 'write',
      tag: 'system',
      summary: 'Import a document from /system/config/export: everything is checked first (400 naming the first bad field, e.g. config.mqtt.tcp.port; nothing changes), then endpoints and dashboards are made to match it at once; configuration keys that differ from the running ones are listed in restartRequired (not applied)',
      body: Type.Object(
        {
          config: Type.String({ minLength: 1, description: 'the JSON document, as a string' }),
          // `timestamp` too, so the `data` of an export answer can be posted back as it is.
          timestamp: Type.Optional(Type.String({ description: 'ignored (the export answers it)' })),
        },
        strict,
      ),
      handler: async (req) => ok(await importConfig(ctx, req.body.config)),
    }),
  ];
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}
