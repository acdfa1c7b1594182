// The rule engine (spec 4.5): add, query, delete, enable/disable, test on sample data, runtime
// counters, parse, and the action types. Rules apply at once on every worker (RuleManager).
import { Type } from '@sinclair/typebox';

import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { BY_ID, FREE_OBJECT, ID, PAGING, pageOf, route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { parseSql } from '../../rules/rule.ts';
import { ACTION_SPECS } from '../../rules/actions/index.ts';
import { EVENT_NAMES } from '../../rules/sql/index.ts';

const SQL = Type.String({ minLength: 1, maxLength: 64 * 1024 });

const ACTION = Type.Object(
  { type: Type.String({ minLength: 1, description: 'an action type of /rule/actions' }), config: Type.Optional(FREE_OBJECT) },
  strict,
);

const ADD = Type.Object(
  {
    id: Type.Optional(ID),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    sql: SQL,
    actions: Type.Optional(Type.Array(ACTION)),
    enabled: Type.Optional(Type.Boolean()),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  strict,
);

const UPDATE = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    sql: Type.Optional(SQL),
    actions: Type.Optional(Type.Array(ACTION)),
    enabled: Type.Optional(Type.Boolean()),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  strict,
);

const QUERY = Type.Object({ ...PAGING, name: Type.Optional(Type.String({ description: 'a substring of the name' })), id: Type.Optional(Type.String()) }, strict);

const TEST = Type.Object(
  {
    sql: SQL,
    event: Type.Optional(choice(EVENT_NAMES)),
    testData: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the event\'s fields; payload a string or a JSON object; topic required for PUBLISH' })),
  },
  strict,
);

export function ruleRoutes(ctx: AdminContext): Route[] {
  const rules = ctx.rules;
  return [
    route({
      method: 'POST',
      path: '/rule/add',
      access: 'write',
      tag: 'rules',
      summary: 'Add a rule (applied at once on every worker); answers the JSON string "success"',
      body: ADD,
      async handler(req) {
        const { actions = [], ...rest } = req.body;
        await rules.add({ ...rest, actions: actions.map((a) => ({ type: a.type, config: a.config ?? {} })) });
        return json('success');
      },
    }),
    route({
      method: 'POST',
      path: '/rule/query',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Rules, paged, optionally by name (a substring)',
      body: QUERY,
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { id, name } = req.body;
        const all = rules.list(name);
        return paged(id ? all.filter((r) => r.id === id) : all, page, size);
      },
    }),
    route({
      method: 'POST',
      path: '/rule/delete',
      access: 'write',
      tag: 'rules',
      summary: 'Delete a rule (stops at once on every worker; its action queues drain for up to 2 s)',
      body: BY_ID,
      async handler(req) {
        await rules.delete(req.body.id);
        return ok({ id: req.body.id });
      },
    }),
    route({
      method: 'POST',
      path: '/rule/state/set',
      access: 'write',
      tag: 'rules',
      summary: 'Enable or disable a rule, at once on every worker',
      body: Type.Object({ id: Type.String({ minLength: 1 }), enabled: Type.Boolean() }, strict),
      handler: async (req) => ok(await rules.setEnabled(req.body.id, req.body.enabled)),
    }),
    route({
      method: 'POST',
      path: '/rule/update',
      access: 'write',
      tag: 'rules',
      summary: 'Change a rule: any of name, sql, actions (the whole list, replacing it), enabled, description; checked as /rule/add before anything changes, then applied at once on every worker. Answers the rule',
      body: UPDATE,
      async handler(req) {
        const { id, actions, ...rest } = req.body;
        const doc = await rules.update(id, { ...rest, ...(actions ? { actions: actions.map((a) => ({ type: a.type, config: a.config ?? {} })) } : {}) });
        req.audit = { resourceId: id };
        return ok(doc);
      },
    }),
    route({
      method: 'POST',
      path: '/rule/test',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Run SQL on testData without side effects: {matched, output} or {matched:false, reason}',
      body: TEST,
      async handler(req) {
        const { sql, event } = req.body;
        const data = { ...(req.body.testData ?? {}) };
        if (data.payload !== undefined && typeof data.payload !== 'string') {
          if (typeof data.payload === 'object') data.payload = JSON.stringify(data.payload);
          else throw invalid('testData.payload', 'expected a string (or a JSON object)');
        }
        // A PUBLISH event needs the topic it was published on (other events carry none).
        if ((event ?? 'PUBLISH') === 'PUBLISH' && typeof data.topic !== 'string') throw invalid('testData.topic', 'is required (a string)');
        return ok(await rules.test(sql, event, data));
      },
    }),
    route({
      method: 'POST',
      path: '/rule/runtime',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: "A rule's counters: matched, passed, filtered, failed, per action success/failed/dropped/queued, last error, rate over the last minute",
      body: BY_ID,
      handler: async (req) => ok(await rules.runtime(req.body.id)),
    }),
    route({
      method: 'POST',
      path: '/rule/sql',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Parse SQL: its fields, sources (topic filters and events) and WHERE, or a 400 with line and column',
      body: Type.Object({ sql: SQL }),
      async handler(req) {
        const p = await parseSql(req.body.sql);
        return ok({ fields: p.fields, sources: p.sources, where: p.where, events: p.events, filters: p.filters });
      },
    }),
    ...(['POST', 'GET'] as const).map((method): Route => ({
      method,
      path: '/rule/actions',
      access: 'read',
      tag: 'rules',
      summary: 'The action types, with their config fields',
      handler: () => ok(ACTION_SPECS.map((s) => ({ type: s.type, sourceType: s.sourceType, description: s.description, fields: s.fields }))),
    })),
  ];
}
