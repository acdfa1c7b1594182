// Connections (spec 4.3): list the connected clients across every worker (in a cluster, of every
// node), kick them (close: the session ends too; down: only the network connection) whatever node
// holds them, their runtime state, and /api/check.
import os from 'node:os';

import type { AdminContext } from '../context.ts';
import { json, ok, type Route, type Schema } from '../http.ts';
import { int, object, onlyFields, paging, str } from '../validate.ts';
import type { ConnectionInfo } from '../../worker/ops/clients.ts';
import { clientIdField, clusterFields, onAllNodes, onOwnerNode } from './mqtt-common.ts';

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
  /** Another node's address: the host of its cluster address (cluster.localAddress). */
  function peerIp(node: string): string | null {
    const address = ctx.cluster?.nodes().find((n) => n.id === node)?.address;
    if (!address) return null;
    const colon = address.lastIndexOf(':');
    return (colon > 0 ? address.slice(0, colon) : address).replace(/^\[|\]$/g, '');
  }

  async function query(body: unknown, withPort: boolean) {
    const b = object(body);
    onlyFields(b, withPort ? ['page', 'size', 'clientId', 'username', 'port'] : ['page', 'size', 'clientId', 'username']);
    const { page, size } = paging(b);
    const filter = {
      clientId: str(b, 'clientId') || undefined,
      username: str(b, 'username') || undefined,
      port: withPort ? int(b, 'port', 1, 65535) : undefined,
    };
    const { parts, missing } = await onAllNodes(ctx, 'clients.list', { ...filter, limit: page * size });
    // In a cluster each connection says which node holds it.
    const all = parts.flatMap((p) => p.results.flatMap((r) => (ctx.cluster ? r.items.map((i) => ({ ...i, node: p.node })) : r.items)))
      .sort((a, c) => (a.connectTime < c.connectTime ? -1 : a.connectTime > c.connectTime ? 1 : a.clientId < c.clientId ? -1 : 1));
    const total = parts.reduce((n, p) => n + p.results.reduce((m, r) => m + r.total, 0), 0);
    return json({ data: all.slice((page - 1) * size, page * size), total, page, size, ...clusterFields(ctx, missing) });
  }

  async function kick(body: unknown, mode: 'close' | 'down') {
    const b = object(body);
    onlyFields(b, ['clientId']);
    const clientId = clientIdField(b);
    return withNode(await onOwnerNode(ctx, clientId, 'clients.close', { clientId, mode }));
  }

  /** A client's answer, with the node holding it in a cluster. */
  function withNode(r: { node: string; result: Record<string, unknown> }): Record<string, unknown> {
    return ctx.cluster ? { ...r.result, node: r.node } : r.result;
  }

  return [
    {
      method: 'POST',
      path: '/mqtt/connection',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: 'Connected clients, paged (oldest connection first); clientId and username filter by case-insensitive substring. In a cluster: of every node, each with its `node`, and `nodesMissing` (running nodes that did not answer within 5 s)',
      body: { type: 'object', properties: { ...PAGING, ...QUERY_FILTERS } },
      handler: (req) => query(req.body, false),
    },
    {
      method: 'POST',
      path: '/api/mqtt/connection',
      access: 'read',
      readOnly: true,
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
      summary: 'Kick a client and end its session (also a persistent or offline one): v5 clients get DISCONNECT 0x98; the will is published. In a cluster, on whatever node holds it',
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
      summary: 'Drop only the network connection of a client: v5 clients get DISCONNECT 0x98, the will is published, a persistent session stays. In a cluster, on whatever node holds it',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body, 'down')),
    },
    {
      method: 'POST',
      path: '/mqtt/connection/runtime',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: "A client's session and connection state: in-flight and queued messages, subscriptions, keepalive, traffic counters, worker",
      body: CLIENT_ID_BODY,
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId']);
        const clientId = clientIdField(b);
        return ok(withNode(await onOwnerNode(ctx, clientId, 'clients.runtime', { clientId })));
      },
    },
    {
      method: 'POST',
      path: '/api/check',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: 'The CONNECT of a connected client as the broker saw it (version, keepalive, clean session, username, will; never the password)',
      body: CLIENT_ID_BODY,
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId']);
        const clientId = clientIdField(b);
        const r = await onOwnerNode(ctx, clientId, 'clients.check', { clientId });
        return json({ code: 0, data: [{ ...withNode(r), nodeIp: r.node === ctx.config.nodeName ? nodeIp(ctx.config.mqtt.host) : peerIp(r.node) }] });
      },
    },
  ];
}
