// Saved monitoring dashboards (spec 4.10): a dashboard is {name, panels: [{title, type, metric}]},
// kept in the store (kind 'dashboard', keyed by name) and saved by name (a save replaces the
// dashboard of that name). The config export and import (system.ts) use the same checks.
import { invalid, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route, type Schema } from '../http.ts';
import { object, onlyFields, reqStr } from '../validate.ts';
import type { Store } from '../../store/types.ts';

export const PANEL_TYPES = ['line', 'bar', 'gauge', 'stat', 'table'] as const;
export type PanelType = (typeof PANEL_TYPES)[number];

export interface Panel {
  title: string;
  type: PanelType;
  /** A metric name of /prometheus or /api/endpoints/metrics (or a PromQL expression over them). */
  metric: string;
}

export interface Dashboard {
  /** The name (dashboards are keyed by it). */
  id: string;
  name: string;
  panels: Panel[];
  createTime: string;
  updateTime: string;
}

const KIND = 'dashboard';
const MAX_NAME = 128;
const MAX_PANELS = 100;
const MAX_TEXT = 1024;

export const DASHBOARD_SCHEMA: Schema = {
  type: 'object',
  required: ['name', 'panels'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: MAX_NAME },
    panels: {
      type: 'array',
      maxItems: MAX_PANELS,
      items: {
        type: 'object',
        required: ['title', 'type', 'metric'],
        properties: { title: { type: 'string', minLength: 1 }, type: { enum: PANEL_TYPES }, metric: { type: 'string', minLength: 1 } },
      },
    },
  },
};

/**
 * Checks a dashboard sent by a client; `prefix` goes before field names in the 400 (e.g.
 * "config.dashboards[0]."). Answers the name and panels; ids and times are the server's.
 */
export function checkDashboard(input: unknown, prefix = ''): { name: string; panels: Panel[] } {
  const b = object(input, prefix ? prefix.replace(/\.$/, '') : 'body');
  for (const k of Object.keys(b)) {
    // Records read back from GET (or an export) may be saved as they are.
    if (!['name', 'panels', 'id', 'createTime', 'updateTime'].includes(k)) throw invalid(`${prefix}${k}`, 'unknown field');
  }
  const name = text(b.name, `${prefix}name`, MAX_NAME);
  if (!Array.isArray(b.panels)) throw invalid(`${prefix}panels`, b.panels === undefined ? 'is required' : 'expected an array');
  if (b.panels.length > MAX_PANELS) throw invalid(`${prefix}panels`, `at most ${MAX_PANELS} panels`);
  const panels = b.panels.map((p: unknown, i: number): Panel => {
    const at = `${prefix}panels[${i}]`;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) throw invalid(at, 'expected an object {title, type, metric}');
    const panel = p as Record<string, unknown>;
    for (const k of Object.keys(panel)) if (!['title', 'type', 'metric'].includes(k)) throw invalid(`${at}.${k}`, 'unknown field');
    const title = text(panel.title, `${at}.title`, MAX_TEXT);
    const type = text(panel.type, `${at}.type`, MAX_TEXT);
    if (!(PANEL_TYPES as readonly string[]).includes(type)) throw invalid(`${at}.type`, `must be one of ${PANEL_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
    const metric = text(panel.metric, `${at}.metric`, MAX_TEXT);
    return { title, type: type as PanelType, metric };
  });
  return { name, panels };
}

function text(v: unknown, field: string, max: number): string {
  if (v === undefined || v === null) throw invalid(field, 'is required');
  if (typeof v !== 'string') throw invalid(field, 'expected a string');
  if (v.trim().length === 0) throw invalid(field, 'must not be empty');
  if (v.length > max) throw invalid(field, `longer than ${max} characters`);
  return v;
}

export async function listDashboards(store: Store): Promise<Dashboard[]> {
  const all = await store.listAdmin<Dashboard>(KIND);
  return all.map((r) => r.doc).sort((a, b) => a.createTime.localeCompare(b.createTime) || a.name.localeCompare(b.name));
}

/** Saves (creates or replaces) the dashboard of that name; keeps its createTime. */
export async function saveDashboard(store: Store, d: { name: string; panels: Panel[] }): Promise<Dashboard> {
  const old = await store.getAdmin<Dashboard>(KIND, d.name);
  const now = new Date().toISOString();
  const doc: Dashboard = { id: d.name, name: d.name, panels: d.panels, createTime: old?.createTime ?? now, updateTime: now };
  await store.putAdmin(KIND, d.name, doc);
  return doc;
}

export function deleteDashboard(store: Store, name: string): Promise<boolean> {
  return store.deleteAdmin(KIND, name);
}

export function dashboardRoutes(ctx: AdminContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/monitor/dashboard',
      access: 'read',
      tag: 'dashboards',
      summary: 'The saved dashboards: [{id, name, panels: [{title, type, metric}], createTime, updateTime}]',
      handler: async () => ok(await listDashboards(ctx.store)),
    },
    {
      method: 'POST',
      path: '/monitor/dashboard',
      access: 'write',
      tag: 'dashboards',
      summary: `Save a dashboard (replaces the one of the same name); panel type one of ${PANEL_TYPES.join(', ')}`,
      body: DASHBOARD_SCHEMA,
      async handler(req) {
        return ok(await saveDashboard(ctx.store, checkDashboard(req.body)));
      },
    },
    {
      method: 'POST',
      path: '/monitor/dashboard/delete',
      access: 'write',
      tag: 'dashboards',
      summary: 'Delete a saved dashboard by name (404 when there is none)',
      body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['name']);
        const name = reqStr(b, 'name');
        if (!(await deleteDashboard(ctx.store, name))) throw notFound(`dashboard ${name} not found`);
        return ok();
      },
    },
  ];
}
