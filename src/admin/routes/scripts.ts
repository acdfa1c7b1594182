// Scripts and extensions (spec 4.9): add, query, delete, enable or disable, the syntax check, and
// our additions update and runtime. Both apply at once on every worker (ProcessorManager).
import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, paged, type Route } from '../http.ts';
import { bool, object, onlyFields, oneOf, paging, reqStr, str, type Body } from '../validate.ts';
import { checkScript } from '../../scripts/check.ts';
import { CONTENT_MAX, type ProcessorManager } from '../../scripts/manager.ts';
import type { ProcessorKind } from '../../scripts/types.ts';

const NAME_MAX = 200;
const ID = /^[A-Za-z0-9._-]+$/;

function idField(b: Body): string | undefined {
  const id = str(b, 'id', { nonEmpty: true, max: 64 });
  if (id !== undefined && !ID.test(id)) throw invalid('id', 'letters, digits, . _ - only');
  return id;
}

function optionsField(v: unknown, field: string): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'expected an object');
  return v as Record<string, unknown>;
}

/** The routes both kinds share: query, delete, state, runtime. */
function commonRoutes(m: ProcessorManager, kind: ProcessorKind, prefix: string): Route[] {
  return [
    {
      method: 'POST',
      path: `${prefix}/query`,
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: `${kind === 'script' ? 'Scripts' : 'Extensions'}, paged, in the order they apply; optionally by id, name (a substring) or enabled`,
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, id: { type: 'string' }, name: { type: 'string' }, enabled: { type: 'boolean' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'id', 'name', 'enabled']);
        const { page, size } = paging(b);
        const id = str(b, 'id');
        const all = m.list(kind, { name: str(b, 'name'), enabled: bool(b, 'enabled') });
        return paged(id ? all.filter((d) => d.id === id) : all, page, size);
      },
    },
    {
      method: 'POST',
      path: `${prefix}/delete`,
      access: 'write',
      tag: 'scripts',
      summary: `Delete a${kind === 'script' ? ' script' : 'n extension'} (stops at once on every worker)`,
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        await m.delete(kind, id);
        return ok({ id });
      },
    },
    {
      method: 'POST',
      path: `${prefix}/state`,
      access: 'write',
      tag: 'scripts',
      summary: `Enable or disable a${kind === 'script' ? ' script' : 'n extension'}, at once on every worker`,
      body: { type: 'object', required: ['id', 'enabled'], properties: { id: { type: 'string' }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'enabled']);
        const id = reqStr(b, 'id');
        const enabled = bool(b, 'enabled', { required: true })!;
        return ok(await m.setEnabled(kind, id, enabled));
      },
    },
    {
      method: 'POST',
      path: `${prefix}/runtime`,
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: 'Counters summed over the workers: messages, converted, unchanged, dropped, failed by reason (error, timeout, memory, invalid), time spent (µs), last error',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        return ok(await m.runtime(kind, id));
      },
    },
  ];
}

export function scriptRoutes(ctx: AdminContext): Route[] {
  const m = ctx.processors;
  return [
    {
      method: 'POST',
      path: '/script/add',
      access: 'write',
      tag: 'scripts',
      summary: 'Add a script defining convert(topic, payload); compiled first (a syntax error is a 400 with line and column), applied at once on every worker to PUBLISHes whose topic matches `topic` (default #)',
      body: { type: 'object', required: ['name', 'content'], properties: { id: { type: 'string' }, name: { type: 'string' }, type: { enum: ['javascript'] }, content: { type: 'string' }, topic: { type: 'string' }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'type', 'content', 'topic', 'enabled']);
        oneOf(b, 'type', ['javascript'] as const);
        const input = { id: idField(b), name: reqStr(b, 'name', { max: NAME_MAX }), content: reqStr(b, 'content', { max: CONTENT_MAX }), topic: str(b, 'topic', { nonEmpty: true, max: 65535 }), enabled: bool(b, 'enabled') };
        return ok(await m.addScript(input));
      },
    },
    {
      method: 'POST',
      path: '/script/update',
      access: 'write',
      tag: 'scripts',
      summary: "Change a script's name, content or topic filter (compiled first; applied at once)",
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, name: { type: 'string' }, content: { type: 'string' }, topic: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'content', 'topic']);
        const id = reqStr(b, 'id');
        const change = { name: str(b, 'name', { nonEmpty: true, max: NAME_MAX }), content: str(b, 'content', { max: CONTENT_MAX }), topic: str(b, 'topic', { nonEmpty: true, max: 65535 }) };
        return ok(await m.updateScript(id, change));
      },
    },
    {
      method: 'POST',
      path: '/script/check',
      access: 'read',
      readOnly: true,
      tag: 'scripts',
      summary: 'Compile a script without running it: {valid: true}, or {valid: false, message, line, column}',
      body: { type: 'object', required: ['content'], properties: { content: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['content', 'type']);
        oneOf(b, 'type', ['javascript'] as const);
        return ok(checkScript(reqStr(b, 'content', { max: CONTENT_MAX })));
      },
    },
    ...commonRoutes(m, 'script', '/script'),
  ];
}

export function extensionRoutes(ctx: AdminContext): Route[] {
  const m = ctx.processors;
  return [
    {
      method: 'POST',
      path: '/extension/add',
      access: 'write',
      tag: 'scripts',
      summary: 'Add an extension: config.className is "<module in extensions.dir>#<ExportedClass>"; the module is checked in a thread of its own, then run at once on every worker for PUBLISHes matching config.topic (default #)',
      body: { type: 'object', required: ['name', 'config'], properties: { id: { type: 'string' }, name: { type: 'string' }, type: { enum: ['processor'] }, config: { type: 'object' }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'type', 'config', 'enabled']);
        oneOf(b, 'type', ['processor'] as const);
        const config = object(b.config, 'config');
        onlyFields(config, ['className', 'topic', 'options']);
        const input = {
          id: idField(b),
          name: reqStr(b, 'name', { max: NAME_MAX }),
          className: reqStr(config, 'className', { max: 1024 }),
          topic: str(config, 'topic', { nonEmpty: true, max: 65535 }),
          options: optionsField(config.options, 'config.options'),
          enabled: bool(b, 'enabled'),
        };
        return ok(await m.addExtension(input));
      },
    },
    {
      method: 'POST',
      path: '/extension/update',
      access: 'write',
      tag: 'scripts',
      summary: "Change an extension's name, className, topic filter or options (checked first; applied at once)",
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, name: { type: 'string' }, config: { type: 'object' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'config']);
        const id = reqStr(b, 'id');
        const config = b.config === undefined ? {} : object(b.config, 'config');
        onlyFields(config, ['className', 'topic', 'options']);
        const change = { name: str(b, 'name', { nonEmpty: true, max: NAME_MAX }), className: str(config, 'className', { nonEmpty: true, max: 1024 }), topic: str(config, 'topic', { nonEmpty: true, max: 65535 }), options: optionsField(config.options, 'config.options') };
        return ok(await m.updateExtension(id, change));
      },
    },
    ...commonRoutes(m, 'extension', '/extension'),
  ];
}
