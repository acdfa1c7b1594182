// MQTT bridges to remote brokers (documented additions to spec 4.9): add, query, update, delete,
// start, stop, and the runtime (state, last error, counters). Bridges of the configuration file
// are listed with source "config" and are read-only here (start and stop apply until a restart).
// Passwords are kept but never answered.
import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { ok, paged, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { BRIDGE_FIELDS } from '../../bridges/bridge-config.ts';

const NAME_BODY = Type.Object({ name: Type.String({ minLength: 1 }) });

export function bridgeRoutes(ctx: AdminContext): Route[] {
  const bridges = ctx.bridges;
  return [
    route({
      method: 'POST',
      path: '/bridge/add',
      access: 'write',
      tag: 'bridges',
      summary: 'Add an MQTT bridge to a remote broker (stored; connects at once when enabled); answers the bridge without its password',
      body: BRIDGE_FIELDS,
      handler: async (req) => ok(await bridges.add(req.body)),
    }),
    route({
      method: 'POST',
      path: '/bridge/query',
      access: 'read',
      readOnly: true,
      tag: 'bridges',
      summary: 'MQTT bridges, paged, optionally by name (a substring); source is "config" (the configuration file, read-only) or "api"',
      body: Type.Object({ ...PAGING, name: Type.Optional(Type.String({ description: 'a substring of the name' })) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { name } = req.body;
        return paged(bridges.list().filter((x) => name === undefined || x.name.includes(name)), page, size);
      },
    }),
    route({
      method: 'POST',
      path: '/bridge/update',
      access: 'write',
      tag: 'bridges',
      summary: 'Replace an API bridge\'s configuration (by name; a missing password keeps the stored one) and reconnect it; 409 for a bridge of the configuration file',
      body: BRIDGE_FIELDS,
      handler: async (req) => ok(await bridges.update(req.body)),
    }),
    route({
      method: 'POST',
      path: '/bridge/delete',
      access: 'write',
      tag: 'bridges',
      summary: 'Delete an API bridge (disconnects it; what waits in its queue is dropped); 409 for a bridge of the configuration file',
      body: NAME_BODY,
      async handler(req) {
        const { name } = req.body;
        await bridges.delete(name);
        return ok({ name });
      },
    }),
    route({
      method: 'POST',
      path: '/bridge/start',
      access: 'write',
      tag: 'bridges',
      summary: 'Start (enable) a bridge; kept for an API bridge, until a restart for a file bridge',
      body: NAME_BODY,
      async handler(req) {
        const { name } = req.body;
        return ok(await bridges.setEnabled(name, true));
      },
    }),
    route({
      method: 'POST',
      path: '/bridge/stop',
      access: 'write',
      tag: 'bridges',
      summary: 'Stop (disable) a bridge: it disconnects (the remote keeps a persistent session) and its queue is dropped',
      body: NAME_BODY,
      async handler(req) {
        const { name } = req.body;
        return ok(await bridges.setEnabled(name, false));
      },
    }),
    route({
      method: 'POST',
      path: '/bridge/runtime',
      access: 'read',
      readOnly: true,
      tag: 'bridges',
      summary: 'Bridges\' runtime (all, or one by name): state connected/connecting/stopped, last error, messagesIn/messagesOut, dropped by reason, queued, inflight',
      body: Type.Object({ name: Type.Optional(Type.String({ minLength: 1, description: 'absent: every bridge' })) }, strict),
      handler: (req) => ok(bridges.runtime(req.body.name)),
    }),
  ];
}
