// The config import of /api/system/config/import: a document of the form /system/config/export
// answers is parsed and checked whole (planImport, planEndpoints: 400 naming the first bad field,
// checkPortsFree: 409 for a port in use), and only then applied (applyImport): the endpoints and
// dashboards are made to match it; configuration keys that differ are reported as needing a
// restart, never applied. Runs in the main thread.
import { DomainError, conflict, invalid } from '../errors/domain-error.ts';
import type { AdminContext } from './context.ts';
import { ConfigError, getPath, setPath, type BrokerConfig } from '../config/index.ts';
import { applyCrossChecks } from '../config/cross-checks.ts';
import { fileValues } from '../config/file-values.ts';
import { KEYS, keySpec } from '../config/keys.ts';
import { checkEndpointFields, completeEndpoint, type EndpointConfig } from '../broker/endpoint-config.ts';
import { EndpointError, EndpointManager } from '../broker/endpoints.ts';
import { exportedValues } from './config-export.ts';
import { checkDashboard, deleteDashboard, listDashboards, saveDashboard, type Panel } from './routes/dashboard.ts';

export interface ImportResult {
  applied: { endpoints: { added: string[]; updated: string[]; removed: string[] }; dashboards: { saved: string[]; removed: string[] } };
  restartRequired: string[];
  note?: string;
}

/** Checks the document `text` whole, then applies it; a refused document changes nothing. */
export async function importConfig(ctx: AdminContext, text: string): Promise<ImportResult> {
  const plan = planImport(ctx, text);
  await checkPortsFree(ctx, plan.endpoints, plan.importedEndpoints);
  return applyImport(ctx, plan);
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
    throw invalid('config', `not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalid('config', 'expected a JSON object (the document /system/config/export answers)');
  const { endpoints, dashboards, omitted, ...brokerPart } = doc as Record<string, unknown>;
  if (omitted !== undefined && !(Array.isArray(omitted) && omitted.every((k) => typeof k === 'string'))) throw invalid('config.omitted', 'expected an array of key names');

  // The broker configuration: the checks loadConfig applies to a config file.
  let values: Map<string, unknown>;
  try {
    values = fileValues(brokerPart, 'import');
  } catch (err) {
    if (err instanceof ConfigError && err.key) throw invalid(`config.${err.key}`, cleanMessage(err.message, err.key));
    throw err;
  }
  const merged = structuredClone(ctx.config) as BrokerConfig;
  const sources = new Map<string, string>();
  for (const spec of KEYS) sources.set(spec.key, 'default');
  for (const [key, value] of values) {
    const result = keySpec(key)!.checker.check(value);
    if (!result.ok) throw invalid(`config.${key}${result.problem.at}`, result.problem.message);
    setPath(merged as unknown as Record<string, unknown>, key, result.value);
    sources.set(key, 'import');
  }
  try {
    applyCrossChecks(merged, sources);
  } catch (err) {
    if (err instanceof ConfigError && err.key) throw invalid(`config.${err.key}`, cleanMessage(err.message, err.key));
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
    if (!Array.isArray(dashboards)) throw invalid('config.dashboards', 'expected an array of dashboards');
    const names = new Set<string>();
    const save = dashboards.map((d: unknown, i: number) => {
      const checked = checkDashboard(d, `config.dashboards[${i}]`);
      if (names.has(checked.name)) throw invalid(`config.dashboards[${i}].name`, `dashboard ${JSON.stringify(checked.name)} is listed twice`);
      names.add(checked.name);
      return checked;
    });
    dashboardPlan = { save };
  }
  return { restartRequired, endpoints: endpointPlan, dashboards: dashboardPlan, importedEndpoints: endpoints };
}

function planEndpoints(ctx: AdminContext, input: unknown): EndpointPlan {
  if (!Array.isArray(input)) throw invalid('config.endpoints', 'expected an array of endpoints');
  const manager = ctx.supervisor.endpoints;
  const defaults = { messageMaxSize: ctx.config.limits.maxPacketSize };
  const wanted: { config: EndpointConfig; fields: Record<string, unknown> }[] = [];
  const ids = new Set<string>();
  const ports = new Set<number>();
  let defaultAt = -1;
  input.forEach((raw: unknown, i: number) => {
    const at = `config.endpoints[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(at, 'expected an endpoint object');
    // What a listed endpoint carries besides its configuration (bookkeeping) is not part of it.
    const { createTime: _createTime, source: _source, ...fields } = raw as Record<string, unknown>;
    let config: EndpointConfig;
    try {
      config = completeEndpoint(checkEndpointFields(fields), defaults, 'api');
    } catch (err) {
      if (err instanceof DomainError) throw err.under(at);
      throw err;
    }
    if (ids.has(config.id)) throw invalid(`${at}.id`, `endpoint id ${config.id} is listed twice`);
    if (ports.has(config.port)) throw invalid(`${at}.port`, `port ${config.port} is listed twice`);
    if (config.port === ctx.http.port) throw conflict(`${at}.port`, `port ${config.port} is the admin API's`);
    if (config.isDefault) {
      if (defaultAt >= 0) throw invalid(`${at}.isDefault`, `only one endpoint can be the default (config.endpoints[${defaultAt}] is)`);
      defaultAt = i;
    }
    ids.add(config.id);
    ports.add(config.port);
    wanted.push({ config, fields });
  });
  if (wanted.length > 0 && defaultAt < 0) throw invalid('config.endpoints', 'one endpoint must be the default (isDefault: true)');

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

async function applyImport(ctx: AdminContext, plan: ImportPlan): Promise<ImportResult> {
  const applied: ImportResult['applied'] = { endpoints: { added: [], updated: [], removed: [] }, dashboards: { saved: [], removed: [] } };
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
    const code = err instanceof DomainError ? err.code : 'INTERNAL_ERROR';
    const field = err instanceof EndpointError && err.field ? `config.endpoints.${err.field}` : undefined;
    throw new DomainError(code, `import failed part-way: ${(err as Error).message}; applied before the failure: ${JSON.stringify(applied)}`, { field, cause: err });
  }
  ctx.log.info('config imported', { ...applied, restartRequired: plan.restartRequired });
  return {
    applied,
    restartRequired: plan.restartRequired,
    ...(plan.restartRequired.length ? { note: 'keys in restartRequired are not applied: set them in the configuration file or environment and restart' } : {}),
  };
}

function cleanMessage(message: string, key: string): string {
  return message.replace(/ \(from [^)]*\)/, '').replace(new RegExp(`^${key.replace(/[.[\]]/g, '\\$&')}: `), '');
}
