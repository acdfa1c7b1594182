// Connections (spec 4.3): list the connected clients across every worker (in a cluster, of every
// node), kick them (close: the session ends too; down: only the network connection) whatever node
// holds them, their runtime state, and /api/check.
import os from 'node:os';

import { Type, type Static } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { CLIENT_ID, clusterFields, onAllNodes, onOwnerNode } from './mqtt-common.ts';

const CLIENT_ID_BODY = Type.Object({ clientId: CLIENT_ID }, strict);
const QUERY_FILTERS = {
  ...PAGING,
  clientId: Type.Optional(Type.String({ description: 'part of the client id (case-insensitive)' })),
  username: Type.Optional(Type.String({ description: 'part of the username (case-insensitive)' })),
};
const QUERY = Type.Object(QUERY_FILTERS, strict);
const QUERY_BY_PORT = Type.Object({ ...QUERY_FILTERS, port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'port of the endpoint the clients connected to' })) }, strict);

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

  async function query(b: Static<typeof QUERY_BY_PORT>) {
    const { page, size } = pageOf(b);
    const filter = { clientId: b.clientId || undefined, username: b.username || undefined, port: b.port };
    const { parts, missing } = await onAllNodes(ctx, 'clients.list', { ...filter, limit: page * size });
    // In a cluster each connection says which node holds it.
    const all = parts.flatMap((p) => p.results.flatMap((r) => (ctx.cluster ? r.items.map((i) => ({ ...i, node: p.node })) : r.items)))
      .sort((a, c) => (a.connectTime < c.connectTime ? -1 : a.connectTime > c.connectTime ? 1 : a.clientId < c.clientId ? -1 : 1));
    const total = parts.reduce((n, p) => n + p.results.reduce((m, r) => m + r.total, 0), 0);
    return json({ data: all.slice((page - 1) * size, page * size), total, page, size, ...clusterFields(ctx, missing) });
  }

  async function kick(clientId: string, mode: 'close' | 'down') {
    return withNode(await onOwnerNode(ctx, clientId, 'clients.close', { clientId, mode }));
  }

  /** A client's answer, with the node holding it in a cluster. */
  function withNode(r: { node: string; result: Record<string, unknown> }): Record<string, unknown> {
    return ctx.cluster ? { ...r.result, node: r.node } : r.result;
  }

  return [
    route({
      method: 'POST',
      path: '/mqtt/connection',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: 'Connected clients, paged (oldest connection first); clientId and username filter by case-insensitive substring. In a cluster: of every node, each with its `node`, and `nodesMissing` (running nodes that did not answer within 5 s)',
      body: QUERY,
      handler: (req) => query(req.body),
    }),
    route({
      method: 'POST',
      path: '/api/mqtt/connection',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: 'Connected clients, paged, as /mqtt/connection plus a filter by endpoint (listener) port',
      body: QUERY_BY_PORT,
      handler: (req) => query(req.body),
    }),
    route({
      method: 'POST',
      path: '/mqtt/connection/close',
      access: 'write',
      tag: 'connections',
      summary: 'Kick a client and end its session (also a persistent or offline one): v5 clients get DISCONNECT 0x98; the will is published. In a cluster, on whatever node holds it',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body.clientId, 'close')),
    }),
    route({
      method: 'POST',
      path: '/api/close',
      access: 'write',
      tag: 'connections',
      summary: 'Same as /mqtt/connection/close',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body.clientId, 'close')),
    }),
    route({
      method: 'POST',
      path: '/mqtt/connection/down',
      access: 'write',
      tag: 'connections',
      summary: 'Drop only the network connection of a client: v5 clients get DISCONNECT 0x98, the will is published, a persistent session stays. In a cluster, on whatever node holds it',
      body: CLIENT_ID_BODY,
      handler: async (req) => ok(await kick(req.body.clientId, 'down')),
    }),
    route({
      method: 'POST',
      path: '/mqtt/connection/runtime',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: "A client's session and connection state: in-flight and queued messages, subscriptions, keepalive, traffic counters, worker",
      body: CLIENT_ID_BODY,
      async handler(req) {
        const { clientId } = req.body;
        return ok(withNode(await onOwnerNode(ctx, clientId, 'clients.runtime', { clientId })));
      },
    }),
    route({
      method: 'POST',
      path: '/api/check',
      access: 'read',
      readOnly: true,
      tag: 'connections',
      summary: 'The CONNECT of a connected client as the broker saw it (version, keepalive, clean session, username, will; never the password)',
      body: CLIENT_ID_BODY,
      async handler(req) {
        const { clientId } = req.body;
        const r = await onOwnerNode(ctx, clientId, 'clients.check', { clientId });
        return json({ code: 0, data: [{ ...withNode(r), nodeIp: r.node === ctx.config.nodeName ? nodeIp(ctx.config.mqtt.host) : peerIp(r.node) }] });
      },
    }),
  ];
}
