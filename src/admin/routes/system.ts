// System routes (spec 4.2 and the /api/cluster and /api/system paths of 4.1): the system config,
// the health probe, the single-node cluster view, process and worker resources, and the export
// and import of the broker configuration with its endpoints and dashboards.
import net from 'node:net';
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

import type { AdminContext } from '../context.ts';
import { HttpError, badRequest, conflict, json, ok, type Route } from '../http.ts';
import { object, onlyFields, reqStr } from '../validate.ts';
import { ConfigError, getPath, setPath, type BrokerConfig } from '../../config/index.ts';
import { applyCrossChecks } from '../../config/cross-checks.ts';
import { fileValues } from '../../config/file-values.ts';
import { KEYS, keySpec } from '../../config/keys.ts';
import { checkEndpointFields, completeEndpoint, EndpointFieldError, type EndpointConfig } from '../../broker/endpoint-config.ts';
import { EndpointError, EndpointManager } from '../../broker/endpoints.ts';
import type { WorkerResources } from '../../worker/ops/system.ts';
import { checkDashboard, deleteDashboard, listDashboards, saveDashboard, type Panel } from './dashboard.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** How long the health checks wait for the store before calling it unreachable. */
const STORE_PROBE_MS = 2000;

/**
 * Keys left out of the export: passwords and password hashes. An import that sets them is
 * compared with the running values like any other key.
 */
export const OMITTED_KEYS: readonly string[] = ['admin.password', 'store.datasource.password', 'auth.users'];

export function systemRoutes(ctx: AdminContext): Route[] {
  const cpu = new CpuSampler();
  const mainElu = new EluSampler();

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

  async function probeStore(): Promise<{ reachable: boolean; latencyMs: number; error?: string }> {
    const started = performance.now();
    try {
      // A primary-key read: a real round trip to the database, cheap at any data size.
      await withTimeout(ctx.store.getAdmin('health', 'probe'), STORE_PROBE_MS, `store did not answer within ${STORE_PROBE_MS} ms`);
      return { reachable: true, latencyMs: round(performance.now() - started) };
    } catch (err) {
      return { reachable: false, latencyMs: round(performance.now() - started), error: (err as Error).message };
    }
  }

  async function health() {
    const workers = ctx.supervisor.workerStates();
    const running = workers.filter((w) => w.running).length;
    const store = await probeStore();
    const reasons: string[] = [];
    if (running === 0) reasons.push('no worker thread is running');
    if (!store.reachable) reasons.push(`store unreachable: ${store.error}`);
    return { status: reasons.length === 0 ? 'UP' as const : 'DOWN' as const, reasons, workers, running, store };
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
          cluster: { enabled: false },
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
      summary: 'Health probe without credentials: {status: UP|DOWN, timestamp}; DOWN (HTTP 503) when no worker thread runs or the store does not answer',
      async handler() {
        const h = await health();
        const body: Record<string, unknown> = { status: h.status, timestamp: new Date().toISOString() };
        if (h.status === 'DOWN') body.reason = h.reasons.join('; ');
        return json(body, h.status === 'UP' ? 200 : 503);
      },
    },
    {
      method: 'GET',
      path: '/public/cluster',
      access: 'public',
      tag: 'system',
      summary: 'The cluster nodes {nodes: [{id, address, status}]}: this node only (Spindle does not cluster yet)',
      handler: () => json({ nodes: [node()] }),
    },
    {
      method: 'GET',
      path: '/api/cluster/status',
      access: 'read',
      tag: 'system',
      summary: 'Cluster status: a single node (clustering does not exist yet)',
      handler: () => ok({ enabled: false, status: 'single-node', self: ctx.config.nodeName, nodes: 1, runningNodes: 1 }),
    },
    {
      method: 'GET',
      path: '/api/cluster/nodes',
      access: 'read',
      tag: 'system',
      summary: 'Cluster nodes with details: this node only',
      handler() {
        const workers = ctx.supervisor.workerStates();
        return ok([{
          ...node(),
          self: true,
          version: VERSION,
          startedAt: new Date(ctx.supervisor.startedAt).toISOString(),
          uptime: Math.floor((Date.now() - ctx.supervisor.startedAt) / 1000),
          workers: { running: workers.filter((w) => w.running).length, total: workers.length },
        }]);
      },
    },
    {
      method: 'GET',
      path: '/api/system/health',
      access: 'read',
      tag: 'system',
      summary: 'Detailed health: status, worker threads (running, total, restarts), store kind and reachability, uptime, version',
      async handler() {
        const h = await health();
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
            return { id: w.id, running: true, ...(await ctx.supervisor.call<WorkerResources>(w.id, 'system-resources', {}, 2000)) };
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
            cpuPercentOfHost: round(cpuPercent / Math.max(1, cpus)),
            memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, arrayBuffers: mem.arrayBuffers },
            eventLoopUtilization: mainElu.sample(),
          },
          system: {
            cpus,
            loadAverage: os.loadavg().map(round),
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
    {
      method: 'POST',
      path: '/api/system/config/import',
      access: 'write',
      tag: 'system',
      summary: 'Import a document from /system/config/export: everything is checked first (400 naming the first bad field, e.g. config.mqtt.tcp.port; nothing changes), then endpoints and dashboards are made to match it at once; configuration keys that differ from the running ones are listed in restartRequired (not applied)',
      body: { type: 'object', required: ['config'], properties: { config: { type: 'string', description: 'the JSON document, as a string' }, timestamp: { type: 'string', description: 'ignored (the export answers it)' } } },
      async handler(req) {
        const b = object(req.body);
        // `timestamp` too, so the `data` of an export answer can be posted back as it is.
        onlyFields(b, ['config', 'timestamp']);
        const plan = planImport(ctx, reqStr(b, 'config'));
        await checkPortsFree(ctx, plan.endpoints, plan.importedEndpoints);
        return ok(await applyImport(ctx, plan));
      },
    },
  ];
}

// ---- export and import ----

/** The configuration as a nested document of every key, secrets left out. */
export function exportedConfig(config: BrokerConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of exportedValues(config)) setPath(out, key, value);
  return out;
}

function exportedValues(config: BrokerConfig): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const spec of KEYS) {
    if (OMITTED_KEYS.includes(spec.key)) continue;
    let value = getPath(config, spec.key);
    if (spec.key === 'store.datasource.url') value = withoutPassword(value as string);
    out.set(spec.key, structuredClone(value));
  }
  return out;
}

/** One endpoint change of an import, with the fields the endpoint manager is given. */
interface EndpointStep {
  op: 'add' | 'update' | 'remove';
  id: string;
  /** add: the endpoint's fields; update: the changed fields (null clears a limit or TLS). */
  input?: Record<string, unknown>;
}

interface EndpointPlan {
  /** In the order they must run: the new default first, removals (the old default last), updates, additions. */
  steps: EndpointStep[];
}

interface ImportPlan {
  restartRequired: string[];
  endpoints: EndpointPlan | null;
  dashboards: { save: { name: string; panels: Panel[] }[] } | null;
  /** The endpoints as the document lists them (for field names in errors). */
  importedEndpoints: unknown;
}

/** Parses and checks the whole document; throws a 400 naming the first bad field. Changes nothing. */
function planImport(ctx: AdminContext, text: string): ImportPlan {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw badRequest('config', `not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw badRequest('config', 'expected a JSON object (the document /system/config/export answers)');
  const { endpoints, dashboards, omitted, ...brokerPart } = doc as Record<string, unknown>;
  if (omitted !== undefined && !(Array.isArray(omitted) && omitted.every((k) => typeof k === 'string'))) throw badRequest('config.omitted', 'expected an array of key names');

  // The broker configuration: the checks loadConfig applies to a config file.
  let values: Map<string, unknown>;
  try {
    values = fileValues(brokerPart, 'import');
  } catch (err) {
    if (err instanceof ConfigError && err.key) throw badRequest(`config.${err.key}`, cleanMessage(err.message, err.key));
    throw err;
  }
  const merged = structuredClone(ctx.config) as BrokerConfig;
  const sources = new Map<string, string>();
  for (const spec of KEYS) sources.set(spec.key, 'default');
  for (const [key, value] of values) {
    const result = keySpec(key)!.checker.check(value);
    if (!result.ok) throw badRequest(`config.${key}${result.problem.at}`, result.problem.message);
    setPath(merged as unknown as Record<string, unknown>, key, result.value);
    sources.set(key, 'import');
  }
  try {
    applyCrossChecks(merged, sources);
  } catch (err) {
    if (err instanceof ConfigError && err.key) throw badRequest(`config.${err.key}`, cleanMessage(err.message, err.key));
    throw err;
  }
  const current = exportedValues(ctx.config);
  const restartRequired: string[] = [];
  for (const [key, value] of values) {
    const now = current.has(key) ? current.get(key) : getPath(ctx.config, key);
    if (JSON.stringify(value) !== JSON.stringify(now)) restartRequired.push(key);
  }

  const endpointPlan = endpoints === undefined ? null : planEndpoints(ctx, endpoints);
  let dashboardPlan: ImportPlan['dashboards'] = null;
  if (dashboards !== undefined) {
    if (!Array.isArray(dashboards)) throw badRequest('config.dashboards', 'expected an array of dashboards');
    const names = new Set<string>();
    const save = dashboards.map((d: unknown, i: number) => {
      const checked = checkDashboard(d, `config.dashboards[${i}].`);
      if (names.has(checked.name)) throw badRequest(`config.dashboards[${i}].name`, `dashboard ${JSON.stringify(checked.name)} is listed twice`);
      names.add(checked.name);
      return checked;
    });
    dashboardPlan = { save };
  }
  return { restartRequired, endpoints: endpointPlan, dashboards: dashboardPlan, importedEndpoints: endpoints };
}

function planEndpoints(ctx: AdminContext, input: unknown): EndpointPlan {
  if (!Array.isArray(input)) throw badRequest('config.endpoints', 'expected an array of endpoints');
  const manager = ctx.supervisor.endpoints;
  const defaults = { messageMaxSize: ctx.config.limits.maxPacketSize };
  const wanted: { config: EndpointConfig; fields: Record<string, unknown> }[] = [];
  const ids = new Set<string>();
  const ports = new Set<number>();
  let defaultAt = -1;
  input.forEach((raw: unknown, i: number) => {
    const at = `config.endpoints[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest(at, 'expected an endpoint object');
    // What a listed endpoint carries besides its configuration (bookkeeping) is not part of it.
    const { createTime: _createTime, source: _source, ...fields } = raw as Record<string, unknown>;
    let config: EndpointConfig;
    try {
      config = completeEndpoint(checkEndpointFields(fields), defaults, 'api');
    } catch (err) {
      if (err instanceof EndpointFieldError) throw badRequest(`${at}.${err.field}`, err.message.slice(err.field.length + 2));
      throw err;
    }
    if (ids.has(config.id)) throw badRequest(`${at}.id`, `endpoint id ${config.id} is listed twice`);
    if (ports.has(config.port)) throw badRequest(`${at}.port`, `port ${config.port} is listed twice`);
    if (config.port === ctx.http.port) throw conflict(`${at}.port`, `port ${config.port} is the admin API's`);
    if (config.isDefault) {
      if (defaultAt >= 0) throw badRequest(`${at}.isDefault`, `only one endpoint can be the default (config.endpoints[${defaultAt}] is)`);
      defaultAt = i;
    }
    ids.add(config.id);
    ports.add(config.port);
    wanted.push({ config, fields });
  });
  if (wanted.length > 0 && defaultAt < 0) throw badRequest('config.endpoints', 'one endpoint must be the default (isDefault: true)');

  const current = new Map(manager.list().map((e) => [e.id, e]));
  const first: EndpointStep[] = [];
  const removals: EndpointStep[] = [];
  const updates: EndpointStep[] = [];
  const additions: EndpointStep[] = [];
  for (const { config, fields } of wanted) {
    const old = current.get(config.id);
    if (!old) {
      additions.push({ op: 'add', id: config.id, input: fields });
      continue;
    }
    const changed: Record<string, unknown> = {};
    for (const k of Object.keys(config) as (keyof EndpointConfig)[]) {
      if (k === 'createTime' || k === 'source' || k === 'id') continue;
      if (JSON.stringify(config[k]) !== JSON.stringify(old[k])) changed[k] = config[k];
    }
    // Limits (and TLS) set before and absent now: cleared (absent limits are unlimited).
    for (const k of ['maxSessionSize', 'maxConnectionSize', 'maxConnectionPerSecond', 'sslConfig'] as const) {
      if (old[k] !== undefined && config[k] === undefined) changed[k] = null;
    }
    if (old.host !== undefined && config.host === undefined && old.host !== ctx.config.mqtt.host) changed.host = ctx.config.mqtt.host;
    else delete changed.host;
    if (config.host !== undefined && config.host !== old.host) changed.host = config.host;
    if (Object.keys(changed).length === 0) continue;
    // The new default goes first: the manager refuses to remove or demote the default endpoint.
    (config.isDefault && !old.isDefault ? first : updates).push({ op: 'update', id: config.id, input: changed });
  }
  const newDefault = additions.findIndex((a) => a.input!.isDefault === true);
  if (newDefault >= 0) {
    // Added before the removals when its port is free now; otherwise after them.
    const port = (wanted.find((w) => w.config.id === additions[newDefault].id)!).config.port;
    if (![...current.values()].some((e) => e.port === port)) first.push(...additions.splice(newDefault, 1));
  }
  for (const old of current.values()) {
    if (ids.has(old.id)) continue;
    // The default endpoint last: the manager removes it only when it is the only one left.
    if (old.isDefault) removals.push({ op: 'remove', id: old.id });
    else removals.unshift({ op: 'remove', id: old.id });
  }
  return { steps: [...first, ...removals, ...updates, ...additions] };
}

/** Ports the import newly listens on must be free now (ports the import itself frees count as free). */
async function checkPortsFree(ctx: AdminContext, plan: EndpointPlan | null, imported: unknown): Promise<void> {
  if (!plan) return;
  const list = imported as Record<string, unknown>[];
  const indexOf = (id: string) => list.findIndex((e) => (e.id ?? `endpoint-${e.port}`) === id);
  const held = new Map(ctx.supervisor.endpoints.list().map((e) => [e.port, e.id]));
  const removed = new Set(plan.steps.filter((s) => s.op === 'remove').map((s) => s.id));
  for (const [port, owner] of held) if (removed.has(owner)) held.delete(port);
  for (const step of plan.steps) {
    if (step.op === 'remove' || step.input!.port === undefined) continue;
    const i = indexOf(step.id);
    const port = step.input!.port as number;
    const enabled = (list[i].enabled ?? true) !== false;
    const owner = held.get(port);
    // Taking the port of an endpoint the import moves elsewhere is refused too (the order of the
    // two changes would matter).
    if (owner !== undefined && owner !== step.id) {
      throw conflict(`config.endpoints[${i}].port`, `port ${port} is used by endpoint ${owner}`);
    }
    if (enabled && owner === undefined && !(await EndpointManager.portAvailable((list[i].host as string | undefined) ?? ctx.config.mqtt.host, port))) {
      throw conflict(`config.endpoints[${i}].port`, `port ${port} is in use`);
    }
  }
}

async function applyImport(ctx: AdminContext, plan: ImportPlan) {
  const applied = { endpoints: { added: [] as string[], updated: [] as string[], removed: [] as string[] }, dashboards: { saved: [] as string[], removed: [] as string[] } };
  const manager = ctx.supervisor.endpoints;
  try {
    for (const step of plan.endpoints?.steps ?? []) {
      if (step.op === 'remove') {
        await manager.remove(step.id);
        applied.endpoints.removed.push(step.id);
      } else if (step.op === 'update') {
        await manager.update(step.id, step.input);
        applied.endpoints.updated.push(step.id);
      } else {
        await manager.add(step.input);
        applied.endpoints.added.push(step.id);
      }
    }
    if (plan.dashboards) {
      const keep = new Set(plan.dashboards.save.map((d) => d.name));
      for (const d of await listDashboards(ctx.store)) {
        if (keep.has(d.name)) continue;
        await deleteDashboard(ctx.store, d.name);
        applied.dashboards.removed.push(d.name);
      }
      for (const d of plan.dashboards.save) {
        await saveDashboard(ctx.store, d);
        applied.dashboards.saved.push(d.name);
      }
    }
  } catch (err) {
    // Checked input can still fail to apply (a port taken meanwhile, the store gone): say what
    // was applied before the failure.
    ctx.log.error('config import failed part-way', { applied, err });
    const status = err instanceof HttpError || err instanceof EndpointError ? err.status : 500;
    const field = err instanceof EndpointError && err.field ? { field: `config.endpoints.${err.field}` } : {};
    throw new HttpError(status, `import failed part-way: ${(err as Error).message}; applied before the failure: ${JSON.stringify(applied)}`, field);
  }
  ctx.log.info('config imported', { ...applied, restartRequired: plan.restartRequired });
  return {
    applied,
    restartRequired: plan.restartRequired,
    ...(plan.restartRequired.length ? { note: 'keys in restartRequired are not applied: set them in the configuration file or environment and restart' } : {}),
  };
}

// ---- helpers ----

function cleanMessage(message: string, key: string): string {
  return message.replace(/ \(from [^)]*\)/, '').replace(new RegExp(`^${key.replace(/[.[\]]/g, '\\$&')}: `), '');
}

function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}

function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** Process CPU time over wall time since the previous sample, in percent of one core. */
class CpuSampler {
  private last = { usage: process.cpuUsage(), at: performance.now() };

  sample(): number {
    const usage = process.cpuUsage();
    const at = performance.now();
    let busy = usage.user + usage.system - (this.last.usage.user + this.last.usage.system);
    let wall = (at - this.last.at) * 1000;
    if (wall < 100_000) {
      // Too short a window to mean anything: the average since the process started.
      busy = usage.user + usage.system;
      wall = process.uptime() * 1e6;
    }
    this.last = { usage, at };
    return round((busy / Math.max(1, wall)) * 100);
  }
}

class EluSampler {
  private last: EventLoopUtilization | undefined;

  sample(): number {
    const now = performance.eventLoopUtilization();
    const elu = this.last ? performance.eventLoopUtilization(now, this.last) : now;
    this.last = now;
    return Math.round(elu.utilization * 1000) / 1000;
  }
}
