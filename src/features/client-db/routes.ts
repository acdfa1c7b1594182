// The built-in client database's admin routes (/api/client-db/...): clients, roles, the settings
// (anonymous roles, default access), export and import (JSON, and a Mosquitto
// dynamic-security.json). Every write is audited by the admin API (secrets in bodies masked).
import { Type } from '@sinclair/typebox';

import { ok, paged, type Route } from '../../admin/http.ts';
import { route } from '../../admin/schema.ts';
import { compileSchema } from '../../schema/check.ts';
import { fromDynsec } from './dynsec-import.ts';
import type { ClientDbManager } from './manager.ts';
import { CLIENT_CREATE, CLIENT_UPDATE, EXPORT, IMPORT_MODE, ROLE_CREATE, ROLE_UPDATE, SETTINGS } from './schemas.ts';

const TAG = 'client-db';
const KICK = Type.Object({ kick: Type.Optional(Type.Boolean({ description: 'also disconnect (0x98) the sessions connected with this username, on every node' })) }, { additionalProperties: false });
const KICK_ROLE = Type.Object({ kick: Type.Optional(Type.Boolean({ description: 'also disconnect (0x98) every connected client that has the role, on every node' })) }, { additionalProperties: false });
const LIST = Type.Object({
  page: Type.Integer({ minimum: 1, default: 1 }),
  size: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  username: Type.Optional(Type.String({ maxLength: 256, description: 'only usernames containing this text' })),
}, { additionalProperties: false });
const checkExport: (value: unknown) => void = compileSchema(EXPORT);

export function clientDbRoutes(db: ClientDbManager): Route[] {
  return [
    route({
      method: 'GET', path: '/api/client-db/clients', access: 'read', tag: TAG, query: LIST,
      summary: 'Clients of the built-in database, by username, paged: {data: [{username, clientId?, enabled, textName?, description?, roles: [{name, priority?}], passwordType, scramMechanisms, createTime, updateTime}], total, page, size}; never a password, hash or SCRAM key',
      handler: (req) => paged(db.listClients(req.queryValues.username), req.queryValues.page, req.queryValues.size),
    }),
    {
      method: 'GET', path: '/api/client-db/clients/:username', access: 'read', tag: TAG,
      summary: 'One client (404 when unknown)',
      handler: (req) => ok(db.getClient(req.params.username)),
    },
    route({
      method: 'POST', path: '/api/client-db/clients', access: 'write', tag: TAG, body: CLIENT_CREATE,
      summary: 'Add a client: username, password (hashed with argon2id, and made into SCRAM-SHA-256 and SCRAM-SHA-512 credentials) or passwordHash and/or scram (ready RFC 5803 SCRAM credentials), clientId (bound: the client must connect with it), enabled, textName, description, roles [{name, priority}] (409 when the username exists; 400 naming an unknown role)',
      handler: async (req) => ok(await db.createClient(req.body)),
    }),
    route({
      method: 'PUT', path: '/api/client-db/clients/:username', access: 'write', tag: TAG, body: CLIENT_UPDATE, query: KICK,
      summary: 'Change a client (fields left out keep their values; null clears clientId, textName, description). Applies to its next CONNECT, PUBLISH and SUBSCRIBE; ?kick=true also disconnects its connected sessions',
      handler: async (req) => ok(await db.updateClient(req.params.username, req.body, req.queryValues.kick === true)),
    }),
    route({
      method: 'DELETE', path: '/api/client-db/clients/:username', access: 'write', tag: TAG, query: KICK,
      summary: 'Delete a client; ?kick=true also disconnects its connected sessions (otherwise they stay until they reconnect)',
      handler: async (req) => {
        await db.deleteClient(req.params.username, req.queryValues.kick === true);
        return ok();
      },
    }),
    {
      method: 'GET', path: '/api/client-db/roles', access: 'read', tag: TAG,
      summary: 'Roles of the built-in database: [{name, description?, rules: [{action, permission, topic, literal?}], createTime, updateTime}]',
      handler: () => ok(db.listRoles()),
    },
    {
      method: 'GET', path: '/api/client-db/roles/:name', access: 'read', tag: TAG,
      summary: 'One role, with the number of clients that have it (404 when unknown)',
      handler: (req) => ok(db.getRole(req.params.name)),
    },
    route({
      method: 'POST', path: '/api/client-db/roles', access: 'write', tag: TAG, body: ROLE_CREATE,
      summary: 'Add a role: name, description, rules tried in order (the first that applies decides): action publish | subscribe | all | subscribe-filter, permission allow | deny, topic (a filter; %u username, %c client id), literal (subscribe-filter only). 409 when the name exists',
      handler: async (req) => ok(await db.createRole(req.body)),
    }),
    route({
      method: 'PUT', path: '/api/client-db/roles/:name', access: 'write', tag: TAG, body: ROLE_UPDATE, query: KICK_ROLE,
      summary: 'Change a role\'s rules or description; applies to the next PUBLISH and SUBSCRIBE of every client that has it, without reconnecting; ?kick=true also disconnects them',
      handler: async (req) => ok(await db.updateRole(req.params.name, req.body, req.queryValues.kick === true)),
    }),
    {
      method: 'DELETE', path: '/api/client-db/roles/:name', access: 'write', tag: TAG,
      summary: 'Delete a role (409 while a client or settings.anonymousRoles names it)',
      handler: async (req) => {
        await db.deleteRole(req.params.name);
        return ok();
      },
    },
    {
      method: 'GET', path: '/api/client-db/settings', access: 'read', tag: TAG,
      summary: 'Settings: anonymousRoles (roles of clients without a username, or null: the database says nothing about them) and defaultAccess {publish?, subscribe?, subscribeFilter?} (what the database answers when none of a client\'s rules applies; left out: the next ACL decides)',
      handler: () => ok(db.settings()),
    },
    route({
      method: 'PUT', path: '/api/client-db/settings', access: 'write', tag: TAG, body: SETTINGS,
      summary: 'Replace the settings (400 naming an unknown anonymous role)',
      handler: async (req) => ok(await db.setSettings(req.body)),
    }),
    {
      method: 'GET', path: '/api/client-db/export', access: 'write', tag: TAG,
      summary: 'The whole database as JSON {clients (with their password hashes and SCRAM credentials), roles, settings}, for POST /api/client-db/import',
      handler: () => ok(db.exportAll()),
    },
    route({
      method: 'POST', path: '/api/client-db/import', access: 'write', tag: TAG,
      body: Type.Object({ mode: IMPORT_MODE, data: EXPORT }, { additionalProperties: false }),
      summary: 'Import an export: mode replace (the database becomes the import) or merge (clients and roles of the same name are replaced, the others stay). Checked whole first: a refused import changes nothing. Answers {clients, roles, removedClients, removedRoles}',
      handler: async (req) => ok(await db.importAll(req.body.data, req.body.mode)),
    }),
    route({
      method: 'POST', path: '/api/client-db/import/mosquitto', access: 'write', tag: TAG,
      body: Type.Object({ mode: IMPORT_MODE, config: Type.Object({}, { additionalProperties: true, description: 'the contents of a Mosquitto dynamic-security.json' }) }, { additionalProperties: false }),
      summary: 'Import a Mosquitto dynamic-security.json: clients with their PBKDF2 passwords, groups flattened onto the clients\' roles, roles\' ACLs mapped onto rules, defaultACLAccess and anonymousGroup onto the settings (docs/features/client-db.md). Answers the counts and skipped (what could not be carried over: unsubscribe ACLs, clients without a password)',
      handler: async (req) => {
        const { data, skipped } = fromDynsec(req.body.config);
        checkExport(data);
        return ok({ ...(await db.importAll(data, req.body.mode)), skipped });
      },
    }),
  ];
}
