// Saved monitoring dashboards (spec 4.10): a dashboard is {name, panels: [{title, type, metric}]},
// kept in the store (kind 'dashboard', keyed by name) and saved by name (a save replaces the
// dashboard of that name). The config export and import (system.ts) use the same checks.
import { Type, type Static } from '@sinclair/typebox';

import { DomainError, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { choice, compileSchema, type Checker } from '../../schema/check.ts';
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

/** Text with something in it (not only spaces). */
const text = (max: number) => Type.String({ maxLength: max, pattern: '\\S', 'x-message': 'must not be empty' });

export const DASHBOARD = Type.Object(
  {
    name: text(MAX_NAME),
    panels: Type.Array(Type.Object({ title: text(MAX_TEXT), type: choice(PANEL_TYPES), metric: text(MAX_TEXT) }, strict), { maxItems: MAX_PANELS }),
    // Records read back from GET (or an export) may be saved as they are; these are the server's.
    id: Type.Optional(Type.String({ description: 'ignored: the name is the id' })),
    createTime: Type.Optional(Type.String({ description: 'ignored' })),
    updateTime: Type.Optional(Type.String({ description: 'ignored' })),
  },
  strict,
);

const checkSchema: Checker<Static<typeof DASHBOARD>> = compileSchema(DASHBOARD);

/**
 * Checks a dashboard (the import's, which the route's schema has not seen); `at` places the field
 * names of a refusal (`config.dashboards[0]`). Answers the name and panels: ids and times are the
 * server's.
 */
export function checkDashboard(input: unknown, at?: string): { name: string; panels: Panel[] } {
  try {
    checkSchema(input);
  } catch (err) {
    throw at !== undefined && err instanceof DomainError ? err.under(at) : err;
  }
  return { name: input.name, panels: input.panels.map(({ title, type, metric }) => ({ title, type, metric })) };
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
    route({
      method: 'POST',
      path: '/monitor/dashboard',
      access: 'write',
      tag: 'dashboards',
      summary: `Save a dashboard (replaces the one of the same name); panel type one of ${PANEL_TYPES.join(', ')}`,
      body: DASHBOARD,
      handler: async (req) => ok(await saveDashboard(ctx.store, { name: req.body.name, panels: req.body.panels.map(({ title, type, metric }) => ({ title, type, metric })) })),
    }),
    route({
      method: 'POST',
      path: '/monitor/dashboard/delete',
      access: 'write',
      tag: 'dashboards',
      summary: 'Delete a saved dashboard by name (404 when there is none)',
      body: Type.Object({ name: Type.String({ minLength: 1 }) }, strict),
      async handler(req) {
        const { name } = req.body;
        if (!(await deleteDashboard(ctx.store, name))) throw notFound(`dashboard ${name} not found`);
        return ok();
      },
    }),
  ];
}
