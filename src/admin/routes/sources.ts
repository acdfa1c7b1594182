// Data sources (spec 4.6): add, query (paged, by type), delete, the types, check (really
// connects, says what failed), and a source's info. Passwords are kept but never answered.
// A source's "queries" are what runs against it: the rule actions that write to it, each with
// the id `<ruleId>:<action index>`; /source/query/info lists them with their counters and
// /source/query/delete removes one (the action leaves its rule).
import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { int, object, onlyFields, paging, reqStr, str } from '../validate.ts';
import { SOURCE_TYPES, type SourceType } from '../../sources/types.ts';


export function sourceRoutes(ctx: AdminContext): Route[] {
  const sources = ctx.sources;
  const rules = ctx.rules;
  return [
    {
      method: 'POST',
      path: '/source/add',
      access: 'write',
      tag: 'sources',
      summary: 'Add a data source (mysql, postgresql, redis, kafka, mongodb, http); its pool opens at once',
      body: { type: 'object', required: ['name', 'type', 'config'], properties: { name: { type: 'string' }, type: { enum: SOURCE_TYPES }, config: { type: 'object' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['name', 'type', 'config']);
        reqStr(b, 'name', { max: 128 });
        reqStr(b, 'type');
        object(b.config ?? {}, 'config');
        return ok(await sources.add({ name: b.name, type: b.type, config: b.config ?? {} }));
      },
    },
    {
      method: 'POST',
      path: '/source/query',
      access: 'read',
      readOnly: true,
      tag: 'sources',
      summary: 'Data sources, paged, optionally of one type (passwords never shown)',
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, type: { enum: SOURCE_TYPES } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'type', 'name']);
        const { page, size } = paging(b);
        const type = str(b, 'type');
        if (type !== undefined && !(SOURCE_TYPES as readonly string[]).includes(type)) throw invalid('type', `must be one of ${SOURCE_TYPES.join(', ')}`);
        const name = str(b, 'name');
        const all = sources.list({ type: type as SourceType | undefined, page: 1, size: Number.MAX_SAFE_INTEGER }).data.filter((r) => !name || r.name.includes(name));
        return paged(all.map((r) => ({ ...r, health: sources.get(r.id)?.health().state ?? 'closed' })), page, size);
      },
    },
    {
      method: 'POST',
      path: '/source/delete',
      access: 'write',
      tag: 'sources',
      summary: 'Delete a data source (409 while a rule uses it)',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        await sources.delete(id);
        return ok({ id });
      },
    },
    {
      method: 'GET',
      path: '/source/type',
      access: 'read',
      tag: 'sources',
      summary: 'The data source types (an array of strings)',
      handler: () => json([...SOURCE_TYPES]),
    },
    {
      method: 'POST',
      path: '/source/check',
      access: 'write',
      readOnly: true,
      tag: 'sources',
      summary: 'Connect to a source (by id, or a {type, config} not saved) and answer {ok, latencyMs, failure, message}; failure is dns, refused, auth, timeout, tls, database, http or other',
      body: { type: 'object', properties: { id: { type: 'string' }, type: { enum: SOURCE_TYPES }, config: { type: 'object' }, timeout: { type: 'integer' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'type', 'config', 'timeout']);
        const timeout = int(b, 'timeout', 100, 60_000) ?? 5000;
        const id = str(b, 'id');
        if (id !== undefined) return ok(await sources.check(id, timeout));
        if (b.type === undefined) throw invalid('id', 'is required (or type and config of a source to try)');
        return ok(await sources.checkConfig(b.type, b.config ?? {}, timeout));
      },
    },
    {
      method: 'POST',
      path: '/source/query/info',
      access: 'read',
      readOnly: true,
      tag: 'sources',
      summary: "A source: its record (no password), pool health, and its queries (the rule actions writing to it, with their counters)",
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        const info = await sources.queryInfo(id);
        const queries: unknown[] = [];
        for (const ruleId of rules.usesSource(id)) {
          const rt = await rules.runtime(ruleId).catch(() => null);
          const doc = rules.doc(ruleId);
          doc.actions.forEach((a, index) => {
            if (a.config.source !== id) return;
            queries.push({ id: `${ruleId}:${index}`, rule: ruleId, ruleName: doc.name, type: a.type, config: a.config, enabled: doc.enabled, runtime: rt?.actions[index] ?? null });
          });
        }
        return ok({ ...info, queries });
      },
    },
    {
      method: 'POST',
      path: '/source/query/delete',
      access: 'write',
      tag: 'sources',
      summary: 'Remove a query of a source (`<ruleId>:<action index>`): the action leaves its rule',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        const m = /^(.+):(\d+)$/.exec(id);
        if (!m) throw invalid('id', 'expected <ruleId>:<action index>');
        await rules.removeAction(m[1], Number(m[2]));
        return ok({ id });
      },
    },
  ];
}
