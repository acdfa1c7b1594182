// The schema registry's routes: schemas (list, get, add, replace, delete, try a decode) and the
// schema checks on topic filters (list, put, delete). Each write is audited (resource `schema`,
// id its name; `schema-check`, id its filter).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import { MAX_SOURCE, type SchemaRegistry } from './registry.ts';
import { SchemaRegistryError } from './errors.ts';
import { SCHEMA_TYPES } from './types.ts';

const TYPE = Type.Union(SCHEMA_TYPES.map((t) => Type.Literal(t)), { description: 'protobuf (a .proto text), avro (an Avro schema, JSON) or json (a JSON Schema)' });
const FIELDS = {
  type: TYPE,
  source: Type.String({ minLength: 1, maxLength: MAX_SOURCE, description: 'the schema text, compiled when it is added: one that does not compile is refused (400, field source)' }),
  description: Type.Optional(Type.String({ maxLength: 1024 })),
};

export function schemaRoutes(registry: SchemaRegistry): Route[] {
  const by = (user: string | undefined) => user ?? 'admin';
  return [
    route({
      method: 'GET',
      path: '/api/schemas',
      access: 'read',
      tag: 'schemas',
      summary: 'Schemas of the registry by name: [{name, type, source, description, by, at}]',
      handler: () => ok(registry.list()),
    }),
    route({
      method: 'POST',
      path: '/api/schemas',
      access: 'write',
      tag: 'schemas',
      summary: 'Add a named schema (409 when the name is taken): compiled at once, a bad one refused (400, field source, with the parser\'s message); sent to every worker and node',
      body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.-]+$' }), ...FIELDS }, strict),
      async handler(req) {
        const made = await registry.put({ ...req.body, by: by(req.user?.username) }, false);
        req.audit = { action: 'create', resource: 'schema', resourceId: made.name, after: made };
        return ok(made);
      },
    }),
    {
      method: 'GET',
      path: '/api/schemas/:name',
      access: 'read',
      tag: 'schemas',
      summary: 'One schema; 404 when none',
      handler: (req) => ok(registry.get(req.params.name)),
    },
    route({
      method: 'PUT',
      path: '/api/schemas/:name',
      access: 'write',
      tag: 'schemas',
      summary: 'Replace a schema (404 when none); compiled first like an added one',
      body: Type.Object(FIELDS, strict),
      async handler(req) {
        const before = registry.get(req.params.name);
        const made = await registry.put({ ...req.body, name: req.params.name, by: by(req.user?.username) }, true);
        req.audit = { action: 'update', resource: 'schema', resourceId: made.name, before, after: made };
        return ok(made);
      },
    }),
    {
      method: 'DELETE',
      path: '/api/schemas/:name',
      access: 'write',
      tag: 'schemas',
      summary: 'Delete a schema (409 while a check uses it); answers the schema removed',
      async handler(req) {
        const gone = await registry.delete(req.params.name);
        req.audit = { action: 'delete', resource: 'schema', resourceId: gone.name, before: gone };
        return ok(gone);
      },
    },
    route({
      method: 'POST',
      path: '/api/schemas/:name/decode',
      access: 'read',
      tag: 'schemas',
      summary: 'Try a decode: the payload (base64, or text) decoded by the schema as schema_decode() does; 400 naming why it does not decode',
      body: Type.Object({
        payload: Type.String({ maxLength: 4 * MAX_SOURCE }),
        encoding: Type.Optional(Type.Union([Type.Literal('base64'), Type.Literal('text')], { description: 'how payload is written (default base64)' })),
        messageType: Type.Optional(Type.String({ maxLength: 512, description: 'the Protobuf message type' })),
      }, strict),
      handler(req) {
        registry.get(req.params.name);
        const payload = Buffer.from(req.body.payload, req.body.encoding === 'text' ? 'utf8' : 'base64');
        try {
          return ok(registry.runtime.decode(req.params.name, payload, req.body.messageType || undefined));
        } catch (err) {
          throw new SchemaRegistryError(400, 'payload', `payload: ${(err as Error).message}`);
        }
      },
    }),
    route({
      method: 'GET',
      path: '/api/schema-checks',
      access: 'read',
      tag: 'schemas',
      summary: 'Schema checks on topic filters: [{filter, schema, messageType, by, at}]',
      handler: () => ok(registry.listChecks()),
    }),
    route({
      method: 'POST',
      path: '/api/schema-checks',
      access: 'write',
      tag: 'schemas',
      summary: 'Put a schema check on a topic filter (replacing that filter\'s): a PUBLISH to a matching topic whose payload does not decode is refused (v5 QoS 1/2: 0x99 Payload format invalid; v5 QoS 0 and 3.1.1: dropped), counted. messageType is required for a protobuf schema with more than one message type',
      body: Type.Object({
        filter: Type.String({ minLength: 1, maxLength: 65535 }),
        schema: Type.String({ minLength: 1, maxLength: 128 }),
        messageType: Type.Optional(Type.Union([Type.String({ maxLength: 512 }), Type.Null()])),
      }, strict),
      async handler(req) {
        const made = await registry.putCheck({ ...req.body, by: by(req.user?.username) });
        req.audit = { action: 'create', resource: 'schema-check', resourceId: made.filter, after: made };
        return ok(made);
      },
    }),
    {
      method: 'DELETE',
      path: '/api/schema-checks/:filter',
      access: 'write',
      tag: 'schemas',
      summary: 'Remove the check on a topic filter (URL-encoded: / as %2F, # as %23, + as %2B); 404 when none',
      async handler(req) {
        const gone = await registry.deleteCheck(req.params.filter);
        req.audit = { action: 'delete', resource: 'schema-check', resourceId: gone.filter, before: gone };
        return ok(gone);
      },
    },
  ];
}
