// The rule engine (spec 4.5): add, query, delete, enable/disable, test on sample data, runtime
// counters, parse, and the action types. Rules apply at once on every worker (RuleManager).
import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { bool, object, onlyFields, oneOf, paging, reqStr, str, type Body } from '../validate.ts';
import { parseSql, type RuleAction } from '../../rules/rule.ts';
import { ACTION_SPECS } from '../../rules/actions/index.ts';
import { EVENT_NAMES, type EventName } from '../../rules/sql/index.ts';

const NAME_MAX = 200;
const SQL_MAX = 64 * 1024;

function actionsField(b: Body): RuleAction[] {
  const v = b.actions;
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalid('actions', 'expected an array of {type, config}');
  return v.map((a, i) => {
    if (a === null || typeof a !== 'object' || Array.isArray(a)) throw invalid(`actions[${i}]`, 'expected an object {type, config}');
    const o = a as Body;
    onlyFields(o, ['type', 'config']);
    const type = o.type;
    if (typeof type !== 'string' || type.length === 0) throw invalid(`actions[${i}].type`, 'is required (a string)');
    const config = o.config ?? {};
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw invalid(`actions[${i}].config`, 'expected an object');
    return { type, config: config as Record<string, unknown> };
  });
}

export function ruleRoutes(ctx: AdminContext): Route[] {
  const rules = ctx.rules;
  return [
    {
      method: 'POST',
      path: '/rule/add',
      access: 'write',
      tag: 'rules',
      summary: 'Add a rule (applied at once on every worker); answers the JSON string "success"',
      body: { type: 'object', required: ['name', 'sql'], properties: { id: { type: 'string' }, name: { type: 'string' }, sql: { type: 'string' }, actions: { type: 'array' }, enabled: { type: 'boolean' }, description: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'name', 'sql', 'actions', 'enabled', 'description']);
        const id = str(b, 'id', { nonEmpty: true, max: 64 });
        if (id !== undefined && !/^[A-Za-z0-9._-]+$/.test(id)) throw invalid('id', 'letters, digits, . _ - only');
        const name = reqStr(b, 'name', { max: NAME_MAX });
        const sql = reqStr(b, 'sql', { max: SQL_MAX });
        const actions = actionsField(b);
        const enabled = bool(b, 'enabled');
        const description = str(b, 'description', { max: 1000 });
        await rules.add({ id, name, sql, actions, enabled, description });
        return json('success');
      },
    },
    {
      method: 'POST',
      path: '/rule/query',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Rules, paged, optionally by name (a substring)',
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, name: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'name', 'id']);
        const { page, size } = paging(b);
        const id = str(b, 'id');
        const all = rules.list(str(b, 'name'));
        return paged(id ? all.filter((r) => r.id === id) : all, page, size);
      },
    },
    {
      method: 'POST',
      path: '/rule/delete',
      access: 'write',
      tag: 'rules',
      summary: 'Delete a rule (stops at once on every worker; its action queues drain for up to 2 s)',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        const id = reqStr(b, 'id');
        await rules.delete(id);
        return ok({ id });
      },
    },
    {
      method: 'POST',
      path: '/rule/state/set',
      access: 'write',
      tag: 'rules',
      summary: 'Enable or disable a rule, at once on every worker',
      body: { type: 'object', required: ['id', 'enabled'], properties: { id: { type: 'string' }, enabled: { type: 'boolean' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id', 'enabled']);
        const id = reqStr(b, 'id');
        const enabled = bool(b, 'enabled', { required: true })!;
        return ok(await rules.setEnabled(id, enabled));
      },
    },
    {
      method: 'POST',
      path: '/rule/test',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Run SQL on testData without side effects: {matched, output} or {matched:false, reason}',
      body: { type: 'object', required: ['sql', 'testData'], properties: { sql: { type: 'string' }, event: { enum: EVENT_NAMES }, testData: { type: 'object' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['sql', 'testData', 'event']);
        const sql = reqStr(b, 'sql', { max: SQL_MAX });
        const event = oneOf(b, 'event', EVENT_NAMES) as EventName | undefined;
        const data = object(b.testData ?? {}, 'testData');
        if (data.payload !== undefined && typeof data.payload !== 'string') {
          if (typeof data.payload === 'object') data.payload = JSON.stringify(data.payload);
          else throw invalid('testData.payload', 'expected a string (or a JSON object)');
        }
        if ((event ?? 'PUBLISH') === 'PUBLISH' && typeof data.topic !== 'string') throw invalid('testData.topic', 'is required (a string)');
        return ok(await rules.test(sql, event, data));
      },
    },
    {
      method: 'POST',
      path: '/rule/runtime',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: "A rule's counters: matched, passed, filtered, failed, per action success/failed/dropped/queued, last error, rate over the last minute",
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        return ok(await rules.runtime(id));
      },
    },
    {
      method: 'POST',
      path: '/rule/sql',
      access: 'read',
      readOnly: true,
      tag: 'rules',
      summary: 'Parse SQL: its fields, sources (topic filters and events) and WHERE, or a 400 with line and column',
      body: { type: 'object', required: ['sql'], properties: { sql: { type: 'string' } } },
      async handler(req) {
        const sql = reqStr(object(req.body), 'sql', { max: SQL_MAX });
        const p = await parseSql(sql);
        return ok({ fields: p.fields, sources: p.sources, where: p.where, events: p.events, filters: p.filters });
      },
    },
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
