// Data sources (spec 4.6): add, query (paged, by type), delete, the types, check (really
// connects, says what failed), and a source's info. Passwords are kept but never answered.
// A source's "queries" are what runs against it: the rule actions that write to it, each with
// the id `<ruleId>:<action index>`; /source/query/info lists them with their counters and
// /source/query/delete removes one (the action leaves its rule).
import { Type, type Static } from '@sinclair/typebox';

import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { BY_ID, byType, PAGING, pageOf, route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { SOURCE_TYPES } from '../../sources/types.ts';
import { SOURCE_CONFIG_SCHEMAS } from '../../sources/config-schemas.ts';

const TYPE = choice(SOURCE_TYPES);
const CONFIG = Type.Record(Type.String(), Type.Unknown(), { description: 'the fields of the type (README, Data sources); checked by the source registry' });
const QUERY_ID = '^(.+):(\\d+)$';
const NAME = Type.String({ minLength: 1, maxLength: 128 });
const ADD_FIELDS = Type.Object({ name: NAME, type: TYPE, config: Type.Optional(CONFIG) });
/** A source to add: its name, and the config of its type (config-schemas.ts). */
const ADD_BODY = byType<Static<typeof ADD_FIELDS>>({ name: NAME }, SOURCE_CONFIG_SCHEMAS, { configRequired: false });

export function sourceRoutes(ctx: AdminContext): Route[] {
  const sources = ctx.sources;
  const rules = ctx.rules;
  return [
    route({
      method: 'POST',
      path: '/source/add',
      access: 'write',
      tag: 'sources',
      summary: 'Add a data source (mysql, postgresql, redis, kafka, mongodb, http); its pool opens at once',
      body: ADD_BODY,
      handler: async (req) => ok(await sources.add({ name: req.body.name, type: req.body.type, config: req.body.config ?? {} })),
    }),
    route({
      method: 'POST',
      path: '/source/query',
      access: 'read',
      readOnly: true,
      tag: 'sources',
      summary: 'Data sources, paged, optionally of one type (passwords never shown)',
      body: Type.Object({ ...PAGING, type: Type.Optional(TYPE), name: Type.Optional(Type.String({ description: 'a substring of the name' })) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { type, name } = req.body;
        const all = sources.list({ type, page: 1, size: Number.MAX_SAFE_INTEGER }).data.filter((r) => !name || r.name.includes(name));
        return paged(all.map((r) => ({ ...r, health: sources.get(r.id)?.health().state ?? 'closed' })), page, size);
      },
    }),
    route({
      method: 'POST',
      path: '/source/delete',
      access: 'write',
      tag: 'sources',
      summary: 'Delete a data source (409 while a rule uses it)',
      body: BY_ID,
      async handler(req) {
        await sources.delete(req.body.id);
        return ok({ id: req.body.id });
      },
    }),
    {
      method: 'GET',
      path: '/source/type',
      access: 'read',
      tag: 'sources',
      summary: 'The data source types (an array of strings)',
      handler: () => json([...SOURCE_TYPES]),
    },
    route({
      method: 'POST',
      path: '/source/check',
      access: 'write',
      readOnly: true,
      tag: 'sources',
      summary: 'Connect to a source (by id, or a {type, config} not saved) and answer {ok, latencyMs, failure, message}; failure is dns, refused, auth, timeout, tls, database, http or other',
      body: Type.Object(
        {
          id: Type.Optional(Type.String({ description: 'a saved source; or give type and config of a source to try' })),
          type: Type.Optional(TYPE),
          config: Type.Optional(CONFIG),
          timeout: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000, default: 5000, description: 'ms' })),
        },
        strict,
      ),
      async handler(req) {
        const { id, type, config, timeout = 5000 } = req.body;
        if (id !== undefined) return ok(await sources.check(id, timeout));
        // One of two shapes: a saved source, or a source to try.
        if (type === undefined) throw invalid('id', 'is required (or type and config of a source to try)');
        return ok(await sources.checkConfig(type, config ?? {}, timeout));
      },
    }),
    route({
      method: 'POST',
      path: '/source/query/info',
      access: 'read',
      readOnly: true,
      tag: 'sources',
      summary: "A source: its record (no password), pool health, and its queries (the rule actions writing to it, with their counters)",
      body: BY_ID,
      async handler(req) {
        const id = req.body.id;
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
    }),
    route({
      method: 'POST',
      path: '/source/query/delete',
      access: 'write',
      tag: 'sources',
      summary: 'Remove a query of a source (`<ruleId>:<action index>`): the action leaves its rule',
      body: Type.Object({ id: Type.String({ pattern: QUERY_ID, 'x-message': 'expected <ruleId>:<action index>' }) }),
      async handler(req) {
        const [, ruleId, index] = new RegExp(QUERY_ID).exec(req.body.id)!;
        await rules.removeAction(ruleId, Number(index));
        return ok({ id: req.body.id });
      },
    }),
  ];
}
