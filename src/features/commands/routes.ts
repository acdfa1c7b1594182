// Commands (spec 4.9): inbound bridges from Kafka and RabbitMQ into the broker, and the NACOS
// registration of the broker's endpoints. The spec's GET
// /command/type and /command/add, and the documented additions a user needs: query (paged, by type
// or name), update, delete, start, stop and runtime. Passwords are kept but never answered.
import { Type, type Static } from '@sinclair/typebox';

import type { CommandManager } from './manager.ts';
import { json, ok, paged, type Route } from '../../admin/http.ts';
import { byType, ID, PAGING, pageOf, route, strict } from '../../admin/schema.ts';
import { choice } from '../../schema/check.ts';
import { implementedTypes } from './registry.ts';
import { SPEC_COMMAND_TYPES } from './types.ts';
import { COMMAND_CONFIG_SCHEMAS } from './config-schemas.ts';

const CONFIG_HELP = 'per type (README, Commands): KAFKA bootstrapServers, topic|topics, groupId, fromBeginning, sasl, tls; RABBITMQ url|host/port/username/password/vhost, queue, exchange, routingKey, declare, prefetch; every bridge: mqttTopic (template), payload (template), qos, retain; NACOS serverAddr, serviceName, namespace, group, ip, username/password, metadata, endpoints (no mapping)';
// The type's and config's fields are the command manager's to check: which types this build has,
// and each type's config (also for commands of the configuration file).
const CONFIG = Type.Record(Type.String(), Type.Unknown(), { description: CONFIG_HELP });
const TYPE = Type.String({ minLength: 1, description: `one of ${SPEC_COMMAND_TYPES.join(', ')} this build implements (GET /command/type)` });
const NAME = Type.String({ maxLength: 128 });
const ADD_FIELDS = Type.Object({ id: Type.Optional(ID), name: Type.Optional(NAME), type: TYPE, config: CONFIG, enabled: Type.Optional(Type.Boolean()) }, strict);

export function commandRoutes(commands: CommandManager): Route[] {
  const byId = (path: string, summary: string, work: (id: string) => unknown): Route => route({
    method: 'POST',
    path,
    access: path === '/command/runtime' ? 'read' : 'write',
    ...(path === '/command/runtime' ? { readOnly: true as const } : {}),
    tag: 'commands',
    summary,
    body: Type.Object({ id: Type.String({ minLength: 1 }) }, strict),
    handler: async (req) => ok(await work(req.body.id)),
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
    route({
      method: 'POST',
      path: '/command/add',
      access: 'write',
      tag: 'commands',
      summary: 'Add a command (started at once unless enabled is false); answers the command (no password) with its id and state',
      // One shape per type, with that type's config (config-schemas.ts).
      body: byType<Static<typeof ADD_FIELDS>>({ id: Type.Optional(ID), name: Type.Optional(NAME), enabled: Type.Optional(Type.Boolean()) }, COMMAND_CONFIG_SCHEMAS),
      handler: async (req) => ok(await commands.add(req.body)),
    }),
    route({
      method: 'POST',
      path: '/command/query',
      access: 'read',
      readOnly: true,
      tag: 'commands',
      summary: 'Commands, paged, optionally of one type, by name (a substring) or id; each with its state (passwords never shown)',
      body: Type.Object({ ...PAGING, type: Type.Optional(choice(SPEC_COMMAND_TYPES)), name: Type.Optional(Type.String({ description: 'a substring of the name' })), id: Type.Optional(Type.String()) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { type, name, id } = req.body;
        return paged(commands.list({ type, name, id }), page, size);
      },
    }),
    route({
      method: 'POST',
      path: '/command/update',
      access: 'write',
      tag: 'commands',
      summary: 'Change a command: name, enabled, config (merged: a field given replaces the stored one, null removes it; the password need not be sent again). A running command restarts with it',
      body: Type.Object(
        { id: Type.String({ minLength: 1 }), name: Type.Optional(NAME), type: Type.Optional(Type.String({ description: 'cannot change; accepted when it is the same' })), config: Type.Optional(CONFIG), enabled: Type.Optional(Type.Boolean()) },
        strict,
      ),
      async handler(req) {
        const { id, ...change } = req.body;
        return ok(await commands.update(id, change));
      },
    }),
    byId('/command/delete', 'Delete a command (its consumer stops; what it had not acknowledged stays in the source)', async (id) => {
      await commands.delete(id);
      return { id };
    }),
    byId('/command/start', 'Enable and start a command (one that failed is tried again)', (id) => commands.setEnabled(id, true)),
    byId('/command/stop', 'Stop and disable a command (its consumer closes; what it had not acknowledged stays in the source)', (id) => commands.setEnabled(id, false)),
    byId('/command/runtime', "A command's state (starting, running, reconnecting, failed, stopped) since when, last error, and counters: received, published, failed by reason, publishRetries, reconnects, lag; details (NACOS: the registered instances, confirmedAt, lastBeatError)", (id) => commands.runtime(id)),
  ];
}
