// Scripts and extensions (spec 4.9): add, query, delete, enable or disable, the syntax check, and
// our additions update and runtime. Both apply at once on every worker (ProcessorManager).
import { Type } from '@sinclair/typebox';

import { ok, paged, type Route } from '../../admin/http.ts';
import { BY_ID, FREE_OBJECT, ID, PAGING, pageOf, route, strict } from '../../admin/schema.ts';
import { choice } from '../../schema/check.ts';
import { checkScript } from './check.ts';
import { CONTENT_MAX, type ProcessorManager } from './manager.ts';
import type { ProcessorKind } from './types.ts';

const NAME = Type.String({ minLength: 1, maxLength: 200 });
const CONTENT = Type.String({ minLength: 1, maxLength: CONTENT_MAX, description: 'JavaScript defining convert(topic, payload)' });
const TOPIC = Type.String({ minLength: 1, maxLength: 65535, description: 'a topic filter (default #)' });

const EXTENSION_CONFIG = {
  className: Type.String({ minLength: 1, maxLength: 1024, description: '<module in extensions.dir>#<ExportedClass>' }),
  topic: Type.Optional(TOPIC),
  options: Type.Optional(FREE_OBJECT),
};

/** The routes both kinds share: query, delete, state, runtime. */
function commonRoutes(m: ProcessorManager, kind: ProcessorKind, prefix: string): Route[] {
  return [
    route({
      method: 'POST',
      path: `${prefix}/query`,
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: `${kind === 'script' ? 'Scripts' : 'Extensions'}, paged, in the order they apply; optionally by id, name (a substring) or enabled`,
      body: Type.Object({ ...PAGING, id: Type.Optional(Type.String()), name: Type.Optional(Type.String({ description: 'a substring of the name' })), enabled: Type.Optional(Type.Boolean()) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { id, name, enabled } = req.body;
        const all = m.list(kind, { name, enabled });
        return paged(id ? all.filter((d) => d.id === id) : all, page, size);
      },
    }),
    route({
      method: 'POST',
      path: `${prefix}/delete`,
      access: 'write',
      tag: 'scripts',
      summary: `Delete a${kind === 'script' ? ' script' : 'n extension'} (stops at once on every worker)`,
      body: BY_ID,
      async handler(req) {
        await m.delete(kind, req.body.id);
        return ok({ id: req.body.id });
      },
    }),
    route({
      method: 'POST',
      path: `${prefix}/state`,
      access: 'write',
      tag: 'scripts',
      summary: `Enable or disable a${kind === 'script' ? ' script' : 'n extension'}, at once on every worker`,
      body: Type.Object({ id: Type.String({ minLength: 1 }), enabled: Type.Boolean() }, strict),
      handler: async (req) => ok(await m.setEnabled(kind, req.body.id, req.body.enabled)),
    }),
    route({
      method: 'POST',
      path: `${prefix}/runtime`,
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: 'Counters summed over the workers: messages, converted, unchanged, dropped, failed by reason (error, timeout, memory, invalid), time spent (µs), last error',
      body: BY_ID,
      handler: async (req) => ok(await m.runtime(kind, req.body.id)),
    }),
  ];
}

export function scriptRoutes(m: ProcessorManager): Route[] {
  return [
    route({
      method: 'POST',
      path: '/script/add',
      access: 'write',
      tag: 'scripts',
      summary: 'Add a script defining convert(topic, payload); compiled first (a syntax error is a 400 with line and column), applied at once on every worker to PUBLISHes whose topic matches `topic` (default #)',
      body: Type.Object(
        { id: Type.Optional(ID), name: NAME, type: Type.Optional(choice(['javascript'] as const)), content: CONTENT, topic: Type.Optional(TOPIC), enabled: Type.Optional(Type.Boolean()) },
        strict,
      ),
      async handler(req) {
        const { type: _type, ...input } = req.body;
        return ok(await m.addScript(input));
      },
    }),
    route({
      method: 'POST',
      path: '/script/update',
      access: 'write',
      tag: 'scripts',
      summary: "Change a script's name, content or topic filter (compiled first; applied at once)",
      body: Type.Object(
        { id: Type.String({ minLength: 1 }), name: Type.Optional(NAME), content: Type.Optional(Type.String({ maxLength: CONTENT_MAX })), topic: Type.Optional(TOPIC) },
        strict,
      ),
      async handler(req) {
        const { id, ...change } = req.body;
        return ok(await m.updateScript(id, change));
      },
    }),
    route({
      method: 'POST',
      path: '/script/check',
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: 'Compile a script without running it: {valid: true}, or {valid: false, message, line, column}',
      body: Type.Object({ content: CONTENT, type: Type.Optional(choice(['javascript'] as const)) }, strict),
      handler: (req) => ok(checkScript(req.body.content)),
    }),
    ...commonRoutes(m, 'script', '/script'),
  ];
}

export function extensionRoutes(m: ProcessorManager): Route[] {
  return [
    route({
      method: 'POST',
      path: '/extension/add',
      access: 'write',
      tag: 'scripts',
      summary: 'Add an extension: config.className is "<module in extensions.dir>#<ExportedClass>"; the module is checked in a thread of its own, then run at once on every worker for PUBLISHes matching config.topic (default #)',
      body: Type.Object(
        {
          id: Type.Optional(ID),
          name: NAME,
          type: Type.Optional(choice(['processor'] as const)),
          config: Type.Object(EXTENSION_CONFIG, strict),
          enabled: Type.Optional(Type.Boolean()),
        },
        strict,
      ),
      async handler(req) {
        const { id, name, enabled, config } = req.body;
        return ok(await m.addExtension({ id, name, enabled, ...config }));
      },
    }),
    route({
      method: 'POST',
      path: '/extension/update',
      access: 'write',
      tag: 'scripts',
      summary: "Change an extension's name, className, topic filter or options (checked first; applied at once)",
      body: Type.Object(
        { id: Type.String({ minLength: 1 }), name: Type.Optional(NAME), config: Type.Optional(Type.Partial(Type.Object(EXTENSION_CONFIG, strict))) },
        strict,
      ),
      async handler(req) {
        const { id, name, config } = req.body;
        return ok(await m.updateExtension(id, { name, ...config }));
      },
    }),
    ...commonRoutes(m, 'extension', '/extension'),
  ];
}
