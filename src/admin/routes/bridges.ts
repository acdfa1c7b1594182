// MQTT bridges to remote brokers (documented additions to spec 4.9): add, query, update, delete,
// start, stop, and the runtime (state, last error, counters). Bridges of the configuration file
// are listed with source "config" and are read-only here (start and stop apply until a restart).
// Passwords are kept but never answered.
import type { AdminContext } from '../context.ts';
import { ok, paged, type Route } from '../http.ts';
import { object, onlyFields, paging, reqStr, str } from '../validate.ts';

const CONFIG_BODY = {
  type: 'object',
  required: ['name', 'url'],
  properties: {
    name: { type: 'string' },
    url: { type: 'string', description: 'mqtt://host:port, mqtts://, ws:// or wss://' },
    protocolVersion: { enum: [4, 5] },
    clientId: { type: 'string' },
    username: { type: 'string' },
    password: { type: 'string' },
    tls: { type: 'object', properties: { ca: { type: 'string' }, cert: { type: 'string' }, key: { type: 'string' }, rejectUnauthorized: { type: 'boolean' } } },
    keepalive: { type: 'integer' },
    cleanStart: { type: 'boolean' },
    sessionExpiryInterval: { type: 'integer' },
    reconnectPeriod: { type: 'integer' },
    queueLimit: { type: 'integer' },
    maxInflight: { type: 'integer' },
    forwards: { type: 'array', description: 'local -> remote: [{filter, qos, localPrefix, remotePrefix}]' },
    subscriptions: { type: 'array', description: 'remote -> local: [{filter, qos, localPrefix, remotePrefix}]' },
    enabled: { type: 'boolean' },
  },
};
const NAME_BODY = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } };

export function bridgeRoutes(ctx: AdminContext): Route[] {
  const bridges = ctx.bridges;
  return [
    {
      method: 'POST',
      path: '/bridge/add',
      access: 'write',
      tag: 'bridges',
      summary: 'Add an MQTT bridge to a remote broker (stored; connects at once when enabled); answers the bridge without its password',
      body: CONFIG_BODY,
      async handler(req) {
        return ok(await bridges.add(object(req.body)));
      },
    },
    {
      method: 'POST',
      path: '/bridge/query',
      access: 'read',
      readOnly: true,
      tag: 'bridges',
      summary: 'MQTT bridges, paged, optionally by name (a substring); source is "config" (the configuration file, read-only) or "api"',
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, name: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'name']);
        const { page, size } = paging(b);
        const name = str(b, 'name');
        return paged(bridges.list().filter((x) => name === undefined || x.name.includes(name)), page, size);
      },
    },
    {
      method: 'POST',
      path: '/bridge/update',
      access: 'write',
      tag: 'bridges',
      summary: 'Replace an API bridge\'s configuration (by name; a missing password keeps the stored one) and reconnect it; 409 for a bridge of the configuration file',
      body: CONFIG_BODY,
      async handler(req) {
        return ok(await bridges.update(object(req.body)));
      },
    },
    {
      method: 'POST',
      path: '/bridge/delete',
      access: 'write',
      tag: 'bridges',
      summary: 'Delete an API bridge (disconnects it; what waits in its queue is dropped); 409 for a bridge of the configuration file',
      body: NAME_BODY,
      async handler(req) {
        const name = reqStr(object(req.body), 'name');
        await bridges.delete(name);
        return ok({ name });
      },
    },
    {
      method: 'POST',
      path: '/bridge/start',
      access: 'write',
      tag: 'bridges',
      summary: 'Start (enable) a bridge; kept for an API bridge, until a restart for a file bridge',
      body: NAME_BODY,
      async handler(req) {
        const name = reqStr(object(req.body), 'name');
        return ok(await bridges.setEnabled(name, true));
      },
    },
    {
      method: 'POST',
      path: '/bridge/stop',
      access: 'write',
      tag: 'bridges',
      summary: 'Stop (disable) a bridge: it disconnects (the remote keeps a persistent session) and its queue is dropped',
      body: NAME_BODY,
      async handler(req) {
        const name = reqStr(object(req.body), 'name');
        return ok(await bridges.setEnabled(name, false));
      },
    },
    {
      method: 'POST',
      path: '/bridge/runtime',
      access: 'read',
      readOnly: true,
      tag: 'bridges',
      summary: 'Bridges\' runtime (all, or one by name): state connected/connecting/stopped, last error, messagesIn/messagesOut, dropped by reason, queued, inflight',
      body: { type: 'object', properties: { name: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['name']);
        const name = str(b, 'name', { nonEmpty: true });
        return ok(bridges.runtime(name));
      },
    },
  ];
}
