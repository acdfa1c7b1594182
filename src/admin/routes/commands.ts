// Commands (spec 4.9): inbound bridges from Kafka and RabbitMQ into the broker, and the NACOS
// registration of the broker's endpoints. The spec's GET
// /command/type and /command/add, and the documented additions a user needs: query (paged, by type
// or name), update, delete, start, stop and runtime. Passwords are kept but never answered.
import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { bool, object, onlyFields, oneOf, paging, reqStr, str, type Body } from '../validate.ts';
import { implementedTypes } from '../../commands/registry.ts';
import { SPEC_COMMAND_TYPES } from '../../commands/types.ts';

const ID_BODY = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
const CONFIG_HELP = 'per type (README, Commands): KAFKA bootstrapServers, topic|topics, groupId, fromBeginning, sasl, tls; RABBITMQ url|host/port/username/password/vhost, queue, exchange, routingKey, declare, prefetch; every bridge: mqttTopic (template), payload (template), qos, retain; NACOS serverAddr, serviceName, namespace, group, ip, username/password, metadata, endpoints (no mapping)';

function configField(b: Body, required: boolean): Record<string, unknown> | undefined {
  if (b.config === undefined || b.config === null) {
    if (required) throw new DomainError('INVALID_PARAMETER', 'config: is required (an object)', { field: 'config' });
    return undefined;
  }
  return object(b.config, 'config');
}

export function commandRoutes(ctx: AdminContext): Route[] {
  const commands = ctx.commands;
  const byId = (path: string, summary: string, work: (id: string) => unknown): Route => ({
    method: 'POST',
    path,
    access: path === '/command/runtime' ? 'read' : 'write',
    ...(path === '/command/runtime' ? { readOnly: true as const } : {}),
    tag: 'commands',
    summary,
    body: ID_BODY,
    async handler(req) {
      const b = object(req.body);
      onlyFields(b, ['id']);
      const id = reqStr(b, 'id');
      return ok(await work(id));
    },
  });
  return [
    {
      method: 'GET',
      path: '/command/type',
      access: 'read',
      tag: 'commands',
      summary: `The command types this build implements (an array of strings; the spec also names ${SPEC_COMMAND_TYPES.filter((t) => !implementedTypes().includes(t)).join(', ')}, not implemented yet)`,
      handler: () => json(implementedTypes()),
    },
    {
      method: 'POST',
      path: '/command/add',
      access: 'write',
      tag: 'commands',
      summary: 'Add a command (started at once unless enabled is false); answers the command (no password) with its id and state',
      body: { type: 'object', required: ['type', 'config'], properties: { id: { type: 'string' }, name: { type: 'string' }, type: { enum: [...SPEC_COMMAND_TYPES] }, config: { type: 'object', description: CONFIG_HELP }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'type', 'config', 'enabled']);
        const id = str(b, 'id', { nonEmpty: true, max: 64 });
        if (id !== undefined && !/^[A-Za-z0-9._-]+$/.test(id)) throw new DomainError('INVALID_PARAMETER', 'id: letters, digits, . _ - only', { field: 'id' });
        const input = { id, name: str(b, 'name', { max: 128 }), type: reqStr(b, 'type'), config: configField(b, true)!, enabled: bool(b, 'enabled') };
        return ok(await commands.add(input));
      },
    },
    {
      method: 'POST',
      path: '/command/query',
      access: 'read',
      readOnly: true,
      tag: 'commands',
      summary: 'Commands, paged, optionally of one type, by name (a substring) or id; each with its state (passwords never shown)',
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, type: { enum: [...SPEC_COMMAND_TYPES] }, name: { type: 'string' }, id: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'type', 'name', 'id']);
        const { page, size } = paging(b);
        return paged(commands.list({ type: oneOf(b, 'type', SPEC_COMMAND_TYPES), name: str(b, 'name'), id: str(b, 'id') }), page, size);
      },
    },
    {
      method: 'POST',
      path: '/command/update',
      access: 'write',
      tag: 'commands',
      summary: 'Change a command: name, enabled, config (merged: a field given replaces the stored one, null removes it; the password need not be sent again). A running command restarts with it',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, name: { type: 'string' }, config: { type: 'object' }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'type', 'config', 'enabled']);
        const id = reqStr(b, 'id');
        const change = { name: str(b, 'name', { max: 128 }), type: str(b, 'type'), config: configField(b, false), enabled: bool(b, 'enabled') };
        return ok(await commands.update(id, change));
      },
    },
    byId('/command/delete', 'Delete a command (its consumer stops; what it had not acknowledged stays in the source)', async (id) => {
      await commands.delete(id);
      return { id };
    }),
    byId('/command/start', 'Enable and start a command (one that failed is tried again)', (id) => commands.setEnabled(id, true)),
    byId('/command/stop', 'Stop and disable a command (its consumer closes; what it had not acknowledged stays in the source)', (id) => commands.setEnabled(id, false)),
    byId('/command/runtime', "A command's state (starting, running, reconnecting, failed, stopped) since when, last error, and counters: received, published, failed by reason, publishRetries, reconnects, lag; details (NACOS: the registered instances, confirmedAt, lastBeatError)", (id) => commands.runtime(id)),
  ];
}
