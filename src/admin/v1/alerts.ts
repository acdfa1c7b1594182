// /api/v1/alert-rules, /api/v1/alerts and /api/v1/notification-channels. A rule and a channel
// belong to an organization (its OrganizationAdmins manage them; its other users read them) or,
// with organizationId null, to the platform (SystemAdmins only; they may watch the broker's own
// signals). Alerts are listed in the caller's scope and handled (status) by admins of their
// organization.
import { randomUUID } from 'node:crypto';

import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { isSystem, managesOrganization, need, seesOrganization, allow, organizationFor, type Caller } from '../../platform/scope.ts';
import { PlatformError, invalid } from '../../platform/errors.ts';
import { ALERT_RULE_INPUT, ALERT_RULE_NEW, ALERT_STATES, ALERT_STATUSES, SEVERITIES, SIGNALS, normalizeAlertRule, signalAllowed, type AlertRecord, type AlertRuleRecord } from '../../platform/alerts/index.ts';
import { CHANNEL_CHANGE, CHANNEL_INPUT, type ChannelRecord } from '../../platform/channels.ts';
import { choice } from '../../schema/check.ts';
import { FILTER, TIME_FILTER, callerOf, contains, list, listQuery, note, timeOf, v1 } from './common.ts';

export function alertRoutes(ctx: AdminContext): Route[] {
  const p = ctx.platform;
  const sees = (c: Caller, organizationId: string | null) => (organizationId === null ? isSystem(c) : seesOrganization(c, organizationId));
  const manages = (c: Caller, organizationId: string | null) => (organizationId === null ? isSystem(c) : managesOrganization(c, organizationId));

  const rule = (c: Caller, id: string): AlertRuleRecord => {
    const r = p.alerts.getRule(id);
    if (!r || !sees(c, r.organizationId)) throw new PlatformError(404, `alert rule ${id} not found`);
    return r;
  };
  const alert = (c: Caller, id: string): AlertRecord => {
    const a = p.alerts.getAlert(id);
    if (!a || !sees(c, a.organizationId)) throw new PlatformError(404, `alert ${id} not found`);
    return a;
  };
  const channel = (c: Caller, id: string): ChannelRecord => {
    const ch = p.channels.get(id);
    if (!ch || !sees(c, ch.organizationId)) throw new PlatformError(404, `notification channel ${id} not found`);
    return ch;
  };
  /** The rule's channels exist and are the rule's organization's (or the platform's, for a platform rule). */
  const checkChannels = (ids: readonly string[], organizationId: string | null) => {
    ids.forEach((id, i) => {
      const ch = p.channels.get(id);
      if (!ch || (ch.organizationId !== organizationId && ch.organizationId !== null) || (organizationId !== null && ch.organizationId === null)) throw invalid(`channelIds[${i}]`, `no notification channel ${id} in the rule's organization`);
    });
  };
  const application = (b: { applicationId?: string | null }, organizationId: string | null): string | null => {
    const v = b.applicationId;
    if (v === undefined || v === null) return null;
    const a = typeof v === 'string' ? p.tenants.application(v) : undefined;
    if (!a || (organizationId !== null && a.organizationId !== organizationId)) throw invalid('applicationId', 'no such application in the rule\'s organization');
    return a.id;
  };

  return [
    v1({
      method: 'GET', path: '/alert-rules/signals', tag: 'platform-alert-rules', summary: 'The signals alert rules may watch (broker scope: platform rules only)',
      handler: () => ok(SIGNALS),
    }),
    v1({
      method: 'GET', path: '/alert-rules', tag: 'platform-alert-rules', summary: 'Alert rules in the caller\'s scope, paged; filters: organizationId, signal, enabled, name (contains)',
      query: listQuery({ organizationId: FILTER, signal: FILTER, enabled: Type.Optional(Type.Boolean()), name: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = p.alerts.listRules().filter((r) => sees(c, r.organizationId) && (!q.organizationId || r.organizationId === q.organizationId)
          && (!q.signal || r.signal === q.signal) && (q.enabled === undefined || r.enabled === q.enabled) && contains(r.name, q.name))
          .sort((a, b) => a.createTime.localeCompare(b.createTime));
        return list(q, items);
      },
    }),
    v1({
      method: 'POST', path: '/alert-rules', tag: 'platform-alert-rules',
      summary: 'Add an alert rule: {name, signal, aggregation?, window? (s), operator, threshold, severity?, channelIds?, enabled?, description?, organizationId? (SystemAdmin: null for a platform rule), applicationId?}',
      body: ALERT_RULE_NEW,
      async handler(req) {
        const c = callerOf(req);
        const b = req.body;
        const organizationId = organizationFor(c, b.organizationId);
        if (organizationId !== null && !p.tenants.organization(organizationId)) throw invalid('organizationId', 'no such organization');
        allow(manages(c, organizationId), c, 'add alert rules here');
        const { organizationId: _o, applicationId: _a, ...fields } = b;
        const normalized = normalizeAlertRule(fields);
        if (!signalAllowed(normalized.signal, organizationId)) throw invalid('signal', `${normalized.signal} is a broker signal: only platform rules (organizationId null, SystemAdmin) may watch it`);
        checkChannels(normalized.channelIds, organizationId);
        const now = new Date().toISOString();
        const r = await p.alerts.addRule({ id: randomUUID(), ...normalized, organizationId, applicationId: application(b, organizationId), createTime: now, updateTime: now });
        note(req, { resource: 'alert-rule', resourceId: r.id, organizationId, after: r });
        return ok(r);
      },
    }),
    v1({
      method: 'GET', path: '/alert-rules/:id', tag: 'platform-alert-rules', summary: 'One alert rule',
      handler: (req) => ok(rule(callerOf(req), req.params.id)),
    }),
    v1({
      method: 'PUT', path: '/alert-rules/:id', tag: 'platform-alert-rules', summary: 'Change an alert rule (fields left out keep their values)',
      body: ALERT_RULE_INPUT,
      async handler(req) {
        const c = callerOf(req);
        const before = rule(c, req.params.id);
        need(true, manages(c, before.organizationId), 'alert rule', before.id, c);
        const b = req.body;
        if (b.organizationId !== undefined && b.organizationId !== before.organizationId) throw invalid('organizationId', 'cannot be changed');
        const { organizationId: _o, applicationId: _a, ...fields } = b;
        const normalized = normalizeAlertRule(fields, before);
        if (!signalAllowed(normalized.signal, before.organizationId)) throw invalid('signal', `${normalized.signal} is a broker signal: only platform rules may watch it`);
        checkChannels(normalized.channelIds, before.organizationId);
        const after = await p.alerts.updateRule({ ...before, ...normalized, applicationId: b.applicationId === undefined ? before.applicationId : application(b, before.organizationId), updateTime: new Date().toISOString() });
        if (!after) throw new PlatformError(404, `alert rule ${before.id} not found`);
        note(req, { resource: 'alert-rule', resourceId: before.id, organizationId: before.organizationId, before, after });
        return ok(after);
      },
    }),
    v1({
      method: 'DELETE', path: '/alert-rules/:id', tag: 'platform-alert-rules', summary: 'Delete an alert rule (its firing alerts resolve)',
      async handler(req) {
        const c = callerOf(req);
        const r = rule(c, req.params.id);
        need(true, manages(c, r.organizationId), 'alert rule', r.id, c);
        await p.alerts.deleteRule(r.id);
        note(req, { resource: 'alert-rule', resourceId: r.id, organizationId: r.organizationId, before: r });
        return ok({ id: r.id });
      },
    }),

    v1({
      method: 'GET', path: '/alerts', tag: 'platform-alerts',
      summary: 'Alerts in the caller\'s scope, newest first, paged; filters: organizationId, ruleId, state (firing, resolved), status (unhandled, handled, ignored), severity, from, to (on firstTime)',
      query: listQuery({
        organizationId: FILTER, ruleId: FILTER, state: Type.Optional(choice(ALERT_STATES)), status: Type.Optional(choice(ALERT_STATUSES)), severity: Type.Optional(choice(SEVERITIES)),
        from: TIME_FILTER, to: TIME_FILTER,
      }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = p.alerts.listAlerts({
          organizationId: q.organizationId ?? (isSystem(c) ? undefined : c.organizationId),
          ruleId: q.ruleId, state: q.state, status: q.status, severity: q.severity,
          from: timeOf(q.from, 'from'), to: timeOf(q.to, 'to'),
        }).filter((a) => sees(c, a.organizationId));
        return list(q, items);
      },
    }),
    v1({
      method: 'GET', path: '/alerts/:id', tag: 'platform-alerts', summary: 'One alert',
      handler: (req) => ok(alert(callerOf(req), req.params.id)),
    }),
    v1({
      method: 'PUT', path: '/alerts/:id', tag: 'platform-alerts', summary: 'Handle an alert: {status: unhandled | handled | ignored}',
      body: Type.Object({ status: choice(ALERT_STATUSES) }, { additionalProperties: false, description: 'only status may change' }),
      async handler(req) {
        const c = callerOf(req);
        const before = alert(c, req.params.id);
        need(true, c.role !== 'User' && (before.organizationId !== null || isSystem(c)), 'alert', before.id, c);
        const after = await p.alerts.setStatus(before.id, req.body.status, c.username);
        if (!after) throw new PlatformError(404, `alert ${before.id} not found`);
        note(req, { action: 'update', resource: 'alert', resourceId: before.id, organizationId: before.organizationId, before: { status: before.status }, after: { status: after.status } });
        return ok(after);
      },
    }),

    v1({
      method: 'GET', path: '/notification-channels', tag: 'platform-notification-channels', summary: 'Notification channels in the caller\'s scope (secrets as "******"), paged; filters: organizationId, type, name (contains)',
      query: listQuery({ organizationId: FILTER, type: FILTER, name: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = p.channels.list().filter((ch) => sees(c, ch.organizationId) && (!q.organizationId || ch.organizationId === q.organizationId)
          && (!q.type || ch.type === q.type) && contains(ch.name, q.name)).sort((a, b) => a.createTime.localeCompare(b.createTime)).map((ch) => p.channels.view(ch));
        return list(q, items);
      },
    }),
    v1({
      method: 'POST', path: '/notification-channels', tag: 'platform-notification-channels',
      summary: 'Add a channel: {name, type: webhook | slack | email, config, enabled?, organizationId? (SystemAdmin: null for the platform\'s)}',
      body: CHANNEL_INPUT,
      async handler(req) {
        const c = callerOf(req);
        const b = req.body;
        const organizationId = organizationFor(c, b.organizationId);
        if (organizationId !== null && !p.tenants.organization(organizationId)) throw invalid('organizationId', 'no such organization');
        allow(manages(c, organizationId), c, 'add notification channels here');
        const ch = await p.channels.add(b, organizationId);
        note(req, { resource: 'notification-channel', resourceId: ch.id, organizationId, after: p.channels.view(ch) });
        return ok(p.channels.view(ch));
      },
    }),
    v1({
      method: 'GET', path: '/notification-channels/:id', tag: 'platform-notification-channels', summary: 'One channel (secrets as "******")',
      handler: (req) => ok(p.channels.view(channel(callerOf(req), req.params.id))),
    }),
    v1({
      method: 'PUT', path: '/notification-channels/:id', tag: 'platform-notification-channels', summary: 'Change a channel ("******" keeps a secret while the destination is the same)',
      body: CHANNEL_CHANGE,
      async handler(req) {
        const c = callerOf(req);
        const ch = channel(c, req.params.id);
        need(true, manages(c, ch.organizationId), 'notification channel', ch.id, c);
        const { before, after } = await p.channels.update(ch.id, req.body);
        note(req, { resource: 'notification-channel', resourceId: ch.id, organizationId: ch.organizationId, before: p.channels.view(before), after: p.channels.view(after) });
        return ok(p.channels.view(after));
      },
    }),
    v1({
      method: 'DELETE', path: '/notification-channels/:id', tag: 'platform-notification-channels', summary: 'Delete a channel (409 while an alert rule uses it, unless ?force=true)',
      query: Type.Object({ force: Type.Optional(Type.Boolean()) }),
      async handler(req) {
        const c = callerOf(req);
        const ch = channel(c, req.params.id);
        need(true, manages(c, ch.organizationId), 'notification channel', ch.id, c);
        const users = p.alerts.listRules().filter((r) => r.channelIds.includes(ch.id));
        if (users.length > 0 && req.queryValues.force !== true) throw new PlatformError(409, `alert rule(s) ${users.map((r) => r.name).join(', ')} use this channel; change them first`, 'id');
        await p.channels.delete(ch.id);
        note(req, { resource: 'notification-channel', resourceId: ch.id, organizationId: ch.organizationId, before: p.channels.view(ch) });
        return ok({ id: ch.id });
      },
    }),
    v1({
      method: 'POST', path: '/notification-channels/:id/test', tag: 'platform-notification-channels',
      summary: 'Send a test notice through the channel now (one attempt): {ok, attempts, status?, error?, ms}',
      async handler(req) {
        const c = callerOf(req);
        const ch = channel(c, req.params.id);
        need(true, manages(c, ch.organizationId), 'notification channel', ch.id, c);
        const result = await p.notifier.sendTest(ch, ctx.config.nodeName);
        note(req, { action: 'test', resource: 'notification-channel', resourceId: ch.id, organizationId: ch.organizationId, after: result });
        return ok(result);
      },
    }),
  ];
}
