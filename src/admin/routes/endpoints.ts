// Endpoint (listener) management, spec section 4.1: variant A addressed by id (no prefix) and
// variant B addressed by port (under /api), over one registry (src/broker/endpoints.ts). Changes
// apply to every worker at once, persist in the store, and are restored at start.
import { Type, type TProperties } from '@sinclair/typebox';

import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { route } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { EndpointManager } from '../../broker/endpoints.ts';
import { ENDPOINT_FIELDS, LIMITS, type EndpointConfig, type EndpointFields } from '../../broker/endpoint-config.ts';

type FieldName = keyof typeof ENDPOINT_FIELDS.properties;

/** The endpoint fields with `required` present (the schemas of the add and update routes). */
function withRequired(required: FieldName[]) {
  const properties: TProperties = { ...ENDPOINT_FIELDS.properties };
  for (const f of required) properties[f] = Type.Optional(ENDPOINT_FIELDS.properties[f], false);
  return Type.Unsafe<EndpointFields>(Type.Object(properties, { additionalProperties: false }));
}

const PORT = Type.Integer({ minimum: LIMITS.port[0], maximum: LIMITS.port[1] });
const BY_ID = Type.Object({ id: Type.String({ minLength: 1 }) });
const BY_PORT = Type.Object({ port: PORT });

const IMPORT = Type.Object({
  endpoints: Type.Array(Type.Composite([ENDPOINT_FIELDS, Type.Object({ createTime: Type.Optional(Type.String({ description: 'as exported; kept, not an input' })) })], { additionalProperties: false })),
  mode: Type.Optional(choice(['merge', 'replace'] as const, { description: 'merge (default) or replace: replace also removes the endpoints not listed' })),
});

/** The configuration as the API shows it (`source` is internal bookkeeping). */
function shown(c: EndpointConfig): Omit<EndpointConfig, 'source'> {
  const { source: _source, ...rest } = c;
  return rest;
}

export function endpointRoutes(ctx: AdminContext): Route[] {
  const manager = (): EndpointManager => ctx.supervisor.endpoints;
  const host = ctx.config.mqtt.host;

  const byPort = (port: number): EndpointConfig => {
    const e = manager().byPort(port);
    if (!e) throw new DomainError('NOT_FOUND', `no endpoint on port ${port}`);
    return e;
  };

  const checkPort = async (port: number) => {
    const used = manager().byPort(port);
    const available = !used && await EndpointManager.portAvailable(host, port);
    return used ? { port, available, usedBy: used.id } : { port, available };
  };

  return [
    // ---- variant A: by id ----
    route({
      method: 'POST', path: '/endpoints/add', access: 'write', tag: 'endpoints',
      summary: 'Add an endpoint (variant A: the body names its id); it opens on every worker at once',
      body: withRequired(['id', 'port']),
      handler: async (req) => ok(shown(await manager().add(req.body))),
    }),
    route({
      method: 'POST', path: '/endpoints/update', access: 'write', tag: 'endpoints',
      summary: 'Change an endpoint by id: only the fields given change (null clears a limit or TLS)',
      body: withRequired(['id']),
      handler: async (req) => ok(shown(await manager().update(req.body.id!, req.body))),
    }),
    route({
      method: 'POST', path: '/endpoints/remove', access: 'write', tag: 'endpoints',
      summary: 'Remove an endpoint by id: its listener closes, its connections are closed (v5: DISCONNECT 0x8B)',
      body: BY_ID,
      async handler(req) {
        await manager().remove(req.body.id);
        return ok();
      },
    }),
    {
      method: 'GET', path: '/endpoints/list', access: 'read', tag: 'endpoints',
      summary: 'Every endpoint: {endpoints: {<id>: configuration}}',
      handler: () => json({ endpoints: Object.fromEntries(manager().list().map((e) => [e.id, shown(e)])) }),
    },
    route({
      method: 'GET', path: '/endpoints/status', access: 'read', tag: 'endpoints',
      summary: 'Endpoint status by id: {id, running, endpointNumber (open connections)}',
      query: BY_ID,
      handler: async (req) => json(await manager().status(req.queryValues.id)),
    }),
    route({
      method: 'GET', path: '/endpoints/check-port', access: 'read', tag: 'endpoints',
      summary: 'Whether a port is free: not used by an endpoint and really bindable now (bare {port, available[, usedBy]})',
      query: BY_PORT,
      handler: async (req) => json(await checkPort(req.queryValues.port)),
    }),

    // ---- variant B: by port, under /api ----
    route({
      method: 'POST', path: '/api/endpoints/add', access: 'write', tag: 'endpoints',
      summary: 'Add an endpoint (variant B: addressed by port; the id is endpoint-<port> unless given)',
      body: withRequired(['port']),
      handler: async (req) => ok(shown(await manager().add(req.body))),
    }),
    route({
      method: 'POST', path: '/api/endpoints/update', access: 'write', tag: 'endpoints',
      summary: 'Change the endpoint on a port: only the fields given change (the port identifies it and stays)',
      body: withRequired(['port']),
      handler: async (req) => ok(shown(await manager().update(byPort(req.body.port!).id, req.body))),
    }),
    route({
      method: 'POST', path: '/api/endpoints/remove', access: 'write', tag: 'endpoints',
      summary: 'Remove the endpoint on a port',
      body: BY_PORT,
      async handler(req) {
        await manager().remove(byPort(req.body.port).id);
        return ok();
      },
    }),
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
    route({
      method: 'GET', path: '/api/endpoints/status', access: 'read', tag: 'endpoints',
      summary: 'Status of the endpoint on a port: {code, message, data: {id, running, endpointNumber}}',
      query: BY_PORT,
      handler: async (req) => ok(await manager().status(byPort(req.queryValues.port).id)),
    }),
    route({
      method: 'GET', path: '/api/endpoints/check-port', access: 'read', tag: 'endpoints',
      summary: 'Whether a port is free (really tries to bind it): {code, message, data: {port, available[, usedBy]}}',
      query: BY_PORT,
      handler: async (req) => ok(await checkPort(req.queryValues.port)),
    }),
    route({
      method: 'GET', path: '/api/endpoints/get', access: 'read', tag: 'endpoints',
      summary: 'The configuration of the endpoint on a port',
      query: BY_PORT,
      handler: (req) => ok(shown(byPort(req.queryValues.port))),
    }),
    {
      method: 'GET', path: '/api/endpoints/export', access: 'read', tag: 'endpoints',
      summary: 'Every endpoint configuration, in the form /api/endpoints/import takes: {endpoints: [...], timestamp}',
      handler: () => ok({ endpoints: manager().list().map(shown), timestamp: new Date().toISOString() }),
    },
    route({
      method: 'POST', path: '/api/endpoints/import', access: 'write', tag: 'endpoints',
      summary: 'Apply exported endpoints: each is added, or updated when its id exists; mode "replace" also removes the others. Everything is validated before anything changes',
      body: IMPORT,
      async handler(req) {
        const { mode = 'merge' } = req.body;
        // Exported configurations carry createTime: it is kept, not an input.
        const items: EndpointFields[] = req.body.endpoints.map(({ createTime: _c, ...fields }) => fields);
        const m = manager();
        const ids = new Set<string>();
        const ports = new Set<number>();
        // Validate all first: a rejected import changes nothing.
        for (const [i, fields] of items.entries()) {
          const at = `endpoints[${i}]`;
          const id = fields.id ?? `endpoint-${String(fields.port)}`;
          if (ids.has(id)) throw new DomainError('CONFLICT', `${at}.id: ${id} appears twice`, { field: `${at}.id` });
          if (fields.port !== undefined && ports.has(fields.port)) throw new DomainError('CONFLICT', `${at}.port: ${fields.port} appears twice`, { field: `${at}.port` });
          ids.add(id);
          if (fields.port !== undefined) ports.add(fields.port);
          try {
            if (m.get(id)) await m.validateChange(id, fields);
            else await checkNew(m, fields, mode === 'replace');
          } catch (err) {
            if (err instanceof DomainError) throw err.under(at);
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
          const id = fields.id ?? `endpoint-${String(fields.port)}`;
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
    }),
    route({
      method: 'POST', path: '/api/endpoints/validate', access: 'read', readOnly: true, tag: 'endpoints',
      summary: 'Check a new endpoint as /api/endpoints/add would (fields, ranges, id and port conflicts, port really free) without adding it: {valid: true, config} or the 400/409 add would answer',
      body: withRequired(['port']),
      handler: async (req) => ok({ valid: true, config: shown(await manager().validateNew(req.body)) }),
    }),
    route({
      method: 'POST', path: '/api/endpoints/validate-config', access: 'read', readOnly: true, tag: 'endpoints',
      summary: 'Check an endpoint configuration alone (fields and ranges; not whether its id or port is free): {valid: true, config} or 400 naming the field',
      body: ENDPOINT_FIELDS,
      handler: (req) => ok({ valid: true, config: shown(manager().checkFields(req.body)) }),
    }),
  ];
}

/** A new endpoint of an import; with "replace" its port may belong to an endpoint being removed. */
async function checkNew(m: EndpointManager, fields: EndpointFields, replacing: boolean): Promise<void> {
  if (!replacing) {
    await m.validateNew(fields);
    return;
  }
  // Ports of endpoints about to be removed are not conflicts; only field checks then apply.
  if (fields.port !== undefined && m.byPort(fields.port)) {
    m.checkFields(fields);
    return;
  }
  await m.validateNew(fields);
}
