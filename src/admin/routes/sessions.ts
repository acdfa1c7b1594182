// Sessions (spec 4.10): the messages a client's session holds (in flight, then queued) and
// clearing them, in the worker's memory and in the store; in a cluster on whatever node holds the
// client (the answer says which: `node`).
import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { CLIENT_ID, onOwnerNode } from './mqtt-common.ts';

export function sessionRoutes(ctx: AdminContext): Route[] {
  return [
    route({
      method: 'POST',
      path: '/mqtt/session/query',
      access: 'read',
      readOnly: true,
      tag: 'sessions',
      summary: "A session's in-flight then queued messages, paged: {id, clientId, topic, qos, retain, payload (UTF-8 text, or base64 with payloadEncoding), time, state, packetId}",
      body: Type.Object({ clientId: CLIENT_ID, ...PAGING }, strict),
      async handler(req) {
        const { clientId } = req.body;
        const { page, size } = pageOf(req.body);
        const { node, result: r } = await onOwnerNode(ctx, clientId, 'clients.sessionMessages', { clientId, offset: (page - 1) * size, limit: size });
        return json({ data: r.items, total: r.total, page, size, ...(ctx.cluster ? { node } : {}) });
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/session/clear',
      access: 'write',
      tag: 'sessions',
      summary: "Remove a session's queued and in-flight messages (also from the store); answers how many",
      body: Type.Object({ clientId: CLIENT_ID }, strict),
      async handler(req) {
        const { clientId } = req.body;
        const { node, result } = await onOwnerNode(ctx, clientId, 'clients.sessionClear', { clientId });
        return ok(ctx.cluster ? { ...result, node } : result);
      },
    }),
  ];
}
