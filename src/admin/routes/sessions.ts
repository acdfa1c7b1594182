// Sessions (spec 4.10): the messages a client's session holds (in flight, then queued) and
// clearing them, in the worker's memory and in the store; in a cluster on whatever node holds the
// client (the answer says which: `node`).
import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { object, onlyFields, paging } from '../validate.ts';
import { clientIdField, onOwnerNode } from './mqtt-common.ts';

export function sessionRoutes(ctx: AdminContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/mqtt/session/query',
      access: 'read',
      readOnly: true,
      tag: 'sessions',
      summary: "A session's in-flight then queued messages, paged: {id, clientId, topic, qos, retain, payload (UTF-8 text, or base64 with payloadEncoding), time, state, packetId}",
      body: { type: 'object', required: ['clientId'], properties: { clientId: { type: 'string' }, page: { type: 'integer', minimum: 1, default: 1 }, size: { type: 'integer', minimum: 1, maximum: 1000, default: 20 } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId', 'page', 'size']);
        const clientId = clientIdField(b);
        const { page, size } = paging(b);
        const { node, result: r } = await onOwnerNode(ctx, clientId, 'clients.sessionMessages', { clientId, offset: (page - 1) * size, limit: size });
        return json({ data: r.items, total: r.total, page, size, ...(ctx.cluster ? { node } : {}) });
      },
    },
    {
      method: 'POST',
      path: '/mqtt/session/clear',
      access: 'write',
      tag: 'sessions',
      summary: "Remove a session's queued and in-flight messages (also from the store); answers how many",
      body: { type: 'object', required: ['clientId'], properties: { clientId: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId']);
        const clientId = clientIdField(b);
        const { node, result } = await onOwnerNode(ctx, clientId, 'clients.sessionClear', { clientId });
        return ok(ctx.cluster ? { ...result, node } : result);
      },
    },
  ];
}
