// Endpoint (listener) management, spec section 4.1: variant A addressed by id (no prefix) and
// variant B addressed by port (under /api), over one registry (src/broker/endpoints.ts). Changes
// apply to every worker at once, persist in the store, and are restored at start.
import { DomainError, invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Route, type Schema } from '../http.ts';
import { EndpointError, EndpointManager } from '../../broker/endpoints.ts';
import type { EndpointConfig } from '../../broker/endpoint-config.ts';
import { object, queryBody, int, reqStr, type Body } from '../validate.ts';

const ENDPOINT_SCHEMA: Schema = {
  type: 'object',
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    host: { type: 'string' },
    useWebsocket: { type: 'boolean' },
    path: { type: 'string' },
    enableAuth: { type: 'boolean' },
    enableAcl: { type: 'boolean' },
    enableBridge: { type: 'boolean', description: 'must be false: bridges belong to the broker (the bridges key, /bridge/add), not to an endpoint' },
    messageMaxSize: { type: 'integer', minimum: 1024, maximum: 16777216 },
    maxSessionSize: { type: ['integer', 'null'], minimum: 1, maximum: 10000, description: 'absent or null: unlimited' },
    maxConnectionSize: { type: ['integer', 'null'], minimum: 1, maximum: 65535, description: 'absent or null: unlimited' },
    maxConnectionPerSecond: { type: ['integer', 'null'], minimum: 1, maximum: 1000000, description: 'absent or null: unlimited' },
    sslConfig: {
      type: ['object', 'null'],
      properties: { cert: { type: 'string' }, key: { type: 'string' }, ca: { type: 'string' }, requestCert: { type: 'boolean' }, rejectUnauthorized: { type: 'boolean' }, cnAsUsername: { type: 'boolean' } },
      description: 'PEM file paths; present: TLS (or WSS with useWebsocket)',
    },
    serverOptions: { type: 'object', properties: { backlog: { type: 'integer' } } },
    childOptions: { type: 'object', properties: { tcpNoDelay: { type: 'boolean' }, keepAlive: { type: 'boolean' }, keepAliveInitialDelay: { type: 'integer' } } },
    enabled: { type: 'boolean' },
    isDefault: { type: 'boolean' },
  },
};

const withRequired = (required: string[]): Schema => ({ ...ENDPOINT_SCHEMA, required });

/** The configuration as the API shows it (`source` is internal bookkeeping). */
function shown(c: EndpointConfig): Omit<EndpointConfig, 'source'> {
  const { source: _source, ...rest } = c;
  return rest;
}

export function endpointRoutes(ctx: AdminContext): Route[] {
  const manager = (): EndpointManager => ctx.supervisor.endpoints;
  const host = ctx.config.mqtt.host;

  const idOf = (b: Body): string => reqStr(b, 'id');
  const byPort = (b: Body, field = 'port'): EndpointConfig => {
    const port = int(b, field, 1, 65535, { required: true })!;
    const e = manager().byPort(port);
    if (!e) throw new DomainError('NOT_FOUND', `no endpoint on port ${port}`);
    return e;
  };
  const portQuery = (q: URLSearchParams): Body => queryBody(q, ['port']);

  const checkPort = async (q: URLSearchParams) => {
    const port = int(portQuery(q), 'port', 1, 65535, { required: true })!;
    const used = manager().byPort(port);
    const available = !used && await EndpointManager.portAvailable(host, port);
    return used ? { port, available, usedBy: used.id } : { port, available };
  };

  return [
    // ---- variant A: by id ----
    {
      method: 'POST', path: '/endpoints/add', access: 'write', tag: 'endpoints',
      summary: 'Add an endpoint (variant A: the body names its id); it opens on every worker at once',
      body: withRequired(['id', 'port']),
      async handler(req) {
        const b = object(req.body);
        idOf(b);
        return ok(shown(await manager().add(b)));
      },
    },
    {
      method: 'POST', path: '/endpoints/update', access: 'write', tag: 'endpoints',
      summary: 'Change an endpoint by id: only the fields given change (null clears a limit or TLS)',
      body: withRequired(['id']),
      async handler(req) {
        const b = object(req.body);
        const id = idOf(b);
        return ok(shown(await manager().update(id, b)));
      },
    },
    {
      method: 'POST', path: '/endpoints/remove', access: 'write', tag: 'endpoints',
      summary: 'Remove an endpoint by id: its listener closes, its connections are closed (v5: DISCONNECT 0x8B)',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        const id = idOf(b);
        await manager().remove(id);
        return ok();
      },
    },
    {
      method: 'GET', path: '/endpoints/list', access: 'read', tag: 'endpoints',
      summary: 'Every endpoint: {endpoints: {<id>: configuration}}',
      handler: () => json({ endpoints: Object.fromEntries(manager().list().map((e) => [e.id, shown(e)])) }),
    },
    {
      method: 'GET', path: '/endpoints/status', access: 'read', tag: 'endpoints',
      summary: 'Endpoint status by id: {id, running, endpointNumber (open connections)}',
      query: { id: { type: 'string', required: true } },
      handler: async (req) => json(await manager().status(reqStr(queryBody(req.query), 'id'))),
    },
    {
      method: 'GET', path: '/endpoints/check-port', access: 'read', tag: 'endpoints',
      summary: 'Whether a port is free: not used by an endpoint and really bindable now (bare {port, available[, usedBy]})',
      query: { port: { type: 'integer', required: true } },
      handler: async (req) => json(await checkPort(req.query)),
    },

    // ---- variant B: by port, under /api ----
    {
      method: 'POST', path: '/api/endpoints/add', access: 'write', tag: 'endpoints',
      summary: 'Add an endpoint (variant B: addressed by port; the id is endpoint-<port> unless given)',
      body: withRequired(['port']),
      async handler(req) {
        const b = object(req.body);
        int(b, 'port', 1, 65535, { required: true });
        return ok(shown(await manager().add(b)));
      },
    },
    {
      method: 'POST', path: '/api/endpoints/update', access: 'write', tag: 'endpoints',
      summary: 'Change the endpoint on a port: only the fields given change (the port identifies it and stays)',
      body: withRequired(['port']),
      async handler(req) {
        const b = object(req.body);
        const e = byPort(b);
        return ok(shown(await manager().update(e.id, b)));
      },
    },
    {
      method: 'POST', path: '/api/endpoints/remove', access: 'write', tag: 'endpoints',
      summary: 'Remove the endpoint on a port',
      body: { type: 'object', required: ['port'], properties: { port: { type: 'integer' } } },
      async handler(req) {
        const e = byPort(object(req.body));
        await manager().remove(e.id);
        return ok();
      },
    },
    {
      method: 'GET', path: '/api/endpoints/list', access: 'read', tag: 'endpoints',
      summary: 'Every endpoint by port: {code, data: {endpoints: {<port>: configuration}, activePorts, total}, message}',
      async handler() {
        const list = manager().list();
        const statuses = await Promise.all(list.map((e) => manager().status(e.id)));
        return ok({
          endpoints: Object.fromEntries(list.map((e) => [String(e.port), shown(e)])),
          activePorts: list.filter((_, i) => statuses[i].running).map((e) => e.port).sort((a, b) => a - b),
          total: list.length,
        });
      },
    },
    {
      method: 'GET', path: '/api/endpoints/status', access: 'read', tag: 'endpoints',
      summary: 'Status of the endpoint on a port: {code, message, data: {id, running, endpointNumber}}',
      query: { port: { type: 'integer', required: true } },
      handler: async (req) => ok(await manager().status(byPort(portQuery(req.query)).id)),
    },
    {
      method: 'GET', path: '/api/endpoints/check-port', access: 'read', tag: 'endpoints',
      summary: 'Whether a port is free (really tries to bind it): {code, message, data: {port, available[, usedBy]}}',
      query: { port: { type: 'integer', required: true } },
      handler: async (req) => ok(await checkPort(req.query)),
    },
    {
      method: 'GET', path: '/api/endpoints/get', access: 'read', tag: 'endpoints',
      summary: 'The configuration of the endpoint on a port',
      query: { port: { type: 'integer', required: true } },
      handler: (req) => ok(shown(byPort(portQuery(req.query)))),
    },
    {
      method: 'GET', path: '/api/endpoints/export', access: 'read', tag: 'endpoints',
      summary: 'Every endpoint configuration, in the form /api/endpoints/import takes: {endpoints: [...], timestamp}',
      handler: () => ok({ endpoints: manager().list().map(shown), timestamp: new Date().toISOString() }),
    },
    {
      method: 'POST', path: '/api/endpoints/import', access: 'write', tag: 'endpoints',
      summary: 'Apply exported endpoints: each is added, or updated when its id exists; mode "replace" also removes the others. Everything is validated before anything changes',
      body: { type: 'object', required: ['endpoints'], properties: { endpoints: { type: 'array', items: ENDPOINT_SCHEMA }, mode: { enum: ['merge', 'replace'] } } },
      async handler(req) {
        const b = object(req.body);
        const mode = b.mode ?? 'merge';
        if (mode !== 'merge' && mode !== 'replace') throw invalid('mode', 'must be merge or replace');
        if (b.endpoints === undefined || b.endpoints === null) throw invalid('endpoints', 'is required');
        if (!Array.isArray(b.endpoints)) throw invalid('endpoints', 'expected an array');
        const items = b.endpoints.map((e, i) => {
          const o = object(e, `endpoints[${i}]`);
          // Exported configurations carry createTime: it is kept, not an input.
          const { createTime: _c, ...fields } = o;
          return fields;
        });
        const m = manager();
        const ids = new Set<string>();
        const ports = new Set<number>();
        // Validate all first: a rejected import changes nothing.
        for (const [i, fields] of items.entries()) {
          const id = typeof fields.id === 'string' ? fields.id : `endpoint-${String(fields.port)}`;
          const field = (f: string | undefined) => `endpoints[${i}]${f ? `.${f}` : ''}`;
          if (ids.has(id)) throw new DomainError('CONFLICT', `${field('id')}: ${id} appears twice`, { field: field('id') });
          if (typeof fields.port === 'number' && ports.has(fields.port)) throw new DomainError('CONFLICT', `${field('port')}: ${fields.port} appears twice`, { field: field('port') });
          ids.add(id);
          if (typeof fields.port === 'number') ports.add(fields.port);
          try {
            if (m.get(id)) await m.validateChange(id, fields);
            else await checkNew(m, fields, mode === 'replace');
          } catch (err) {
            if (err instanceof EndpointError) throw new DomainError(err.code, `${field(undefined)}: ${err.message}`, { field: field(err.field), cause: err });
            throw err;
          }
        }
        const removed: string[] = [];
        if (mode === 'replace') {
          for (const e of m.list()) {
            if (ids.has(e.id)) continue;
            await m.remove(e.id);
            removed.push(e.id);
          }
        }
        const added: string[] = [];
        const updated: string[] = [];
        for (const fields of items) {
          const id = typeof fields.id === 'string' ? fields.id : `endpoint-${String(fields.port)}`;
          if (m.get(id)) {
            await m.update(id, fields);
            updated.push(id);
          } else {
            await m.add(fields);
            added.push(id);
          }
        }
        return ok({ added, updated, removed });
      },
    },
    {
      method: 'POST', path: '/api/endpoints/validate', access: 'read', readOnly: true, tag: 'endpoints',
      summary: 'Check a new endpoint as /api/endpoints/add would (fields, ranges, id and port conflicts, port really free) without adding it: {valid: true, config} or the 400/409 add would answer',
      body: withRequired(['port']),
      async handler(req) {
        const b = object(req.body);
        const config = await manager().validateNew(b);
        return ok({ valid: true, config: shown(config) });
      },
    },
    {
      method: 'POST', path: '/api/endpoints/validate-config', access: 'read', readOnly: true, tag: 'endpoints',
      summary: 'Check an endpoint configuration alone (fields and ranges; not whether its id or port is free): {valid: true, config} or 400 naming the field',
      body: ENDPOINT_SCHEMA,
      async handler(req) {
        const b = object(req.body);
        const config = manager().checkFields(b);
        return ok({ valid: true, config: shown(config) });
      },
    },
  ];
}

/** A new endpoint of an import; with "replace" its port may belong to an endpoint being removed. */
async function checkNew(m: EndpointManager, fields: Body, replacing: boolean): Promise<void> {
  if (!replacing) {
    await m.validateNew(fields);
    return;
  }
  // Ports of endpoints about to be removed are not conflicts; only field checks then apply.
  const port = typeof fields.port === 'number' ? fields.port : undefined;
  if (port !== undefined && m.byPort(port)) {
    m.checkFields(fields);
    return;
  }
  await m.validateNew(fields);
}
