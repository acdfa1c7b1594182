// Connections (spec 4.3): list the connected clients across every worker, kick them (close: the
// session ends too; down: only the network connection), their runtime state, and /api/check.
import os from 'node:os';

import type { AdminContext } from '../context.ts';
import { json, ok, type Route, type Schema } from '../http.ts';
import { int, object, onlyFields, paging, str } from '../validate.ts';
import type { ConnectionInfo } from '../../worker/ops/clients.ts';
import { clientIdField, onAllWorkers, onOwner } from './mqtt-common.ts';

const PAGING = { page: { type: 'integer', minimum: 1, default: 1 }, size: { type: 'integer', minimum: 1, maximum: 1000, default: 20 } };
const CLIENT_ID_BODY: Schema = { type: 'object', required: ['clientId'], properties: { clientId: { type: 'string' } } };
const QUERY_FILTERS = {
  clientId: { type: 'string', description: 'part of the client id (case-insensitive)' },
  username: { type: 'string', description: 'part of the username (case-insensitive)' },
};

/** The address of this node that clients reach it on: mqtt.host, or the first external IPv4
 * address of the host when the broker listens on every address. */
function nodeIp(host: string): string {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return host;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export function connectionRoutes(ctx: AdminContext): Route[] {
  async function query(body: unknown, withPort: boolean) {
    const b = object(body);
    onlyFields(b, withPort ? ['page', 'size', 'clientId', 'username', 'port'] : ['page', 'size', 'clientId', 'username']);
    const { page, size } = paging(b);
    const filter = {
      clientId: str(b, 'clientId') || undefined,
      username: str(b, 'username') || undefined,
      port: withPort ? int(b, 'port', 1, 65535) : undefined,
    };
    const parts = await onAllWorkers<{ total: number; items: ConnectionInfo[] }>(ctx, 'clients.list', { ...filter, limit: page * size });
    const all = parts.flatMap((p) => p.items).sort((a, c) => (a.connectTime < c.connectTime ? -1 : a.connectTime > c.connectTime ? 1 : a.clientId < c.clientId ? -1 : 1));
    const total = parts.reduce((n, p) => n + p.total, 0);
    return json({ data: all.slice((page - 1) * size, page * size), total, page, size });
  }

  async function kick(body: unknown, mode: 'close' | 'down') {
    const b = object(body);
    onlyFields(b, ['clientId']);
    const clientId = clientIdField(b);
    return onOwner<Record<string, unknown>>(ctx, clientId, 'clients.close', { clientId, mode });
  }

  return [
    {
      method: 'POST',
      path: '/mqtt/connection',
      access: 'read',
      tag: 'connections',
      summary: 'Connected clients, paged (oldest connection first); clientId and username filter by case-insensitive substring',
      body: { type: 'object', properties: { ...PAGING, ...QUERY_FILTERS } },
      handler: (req) => query(req.body, false),
    },
    {
      method: 'POST',
      path: '/api/mqtt/connection',
      access: 'read',
      tag: 'connections',
      summary: 'Connected clients, paged, as /mqtt/connection plus a filter by endpoint (listener) port',
      body: { type: 'object', properties: { ...PAGING, ...QUERY_FILTERS, port: { type: 'integer', minimum: 1, maximum: 65535, description: 'port of the endpoint the clients connected to' } } },
      handler: (req) => query(req.body, true),
    },
    {
      method: 'POST',
      path: '/mqtt/connection/close',
      access: 'write',
      tag: 'connections',
      summary: 'Kick a client and end its session (also a persistent or offline one): v5 clients get DISCONNECT 0x98; the will is published',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body, 'close')),
    },
    {
      method: 'POST',
      path: '/api/close',
      access: 'write',
      tag: 'connections',
      summary: 'Same as /mqtt/connection/close',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body, 'close')),
    },
    {
      method: 'POST',
      path: '/mqtt/connection/down',
      access: 'write',
      tag: 'connections',
      summary: 'Drop only the network connection of a client: v5 clients get DISCONNECT 0x98, the will is published, a persistent session stays',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body, 'down')),
    },
    {
      method: 'POST',
      path: '/mqtt/connection/runtime',
      access: 'read',
      tag: 'connections',
      summary: "A client's session and connection state: in-flight and queued messages, subscriptions, keepalive, traffic counters, worker",
      body: CLIENT_ID_BODY,
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId']);
        const clientId = clientIdField(b);
        return ok(await onOwner(ctx, clientId, 'clients.runtime', { clientId }));
      },
    },
    {
      method: 'POST',
      path: '/api/check',
      access: 'read',
      tag: 'connections',
      summary: 'The CONNECT of a connected client as the broker saw it (version, keepalive, clean session, username, will; never the password)',
      body: CLIENT_ID_BODY,
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId']);
        const clientId = clientIdField(b);
        const info = await onOwner<Record<string, unknown>>(ctx, clientId, 'clients.check', { clientId });
        return json({ code: 0, data: [{ ...info, nodeIp: nodeIp(ctx.config.mqtt.host) }] });
      },
    },
  ];
}
