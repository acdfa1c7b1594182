// /api/v1/organizations, /api/v1/projects, /api/v1/applications and /api/v1/licenses: the
// control platform's tenants, each answered in the caller's scope (404 outside it, 403 for a
// write its role does not allow). An application's secret is answered when it is made or
// rotated, never again.
import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { allow, isSystem, managesOrganization, managesProject, need, seesOrganization, seesProject, type Caller } from '../../platform/scope.ts';
import { PlatformError, invalid } from '../../platform/errors.ts';
import { APPLICATION_CHANGE, APPLICATION_INPUT, LICENSE_CHANGE, LICENSE_INPUT, ORGANIZATION_CHANGE, ORGANIZATION_INPUT, PROJECT_CHANGE, PROJECT_INPUT } from '../../platform/inputs.ts';
import type { Application, License, Organization, Project } from '../../platform/records.ts';
import { CASCADE, FILTER, callerOf, contains, list, listQuery, note, v1 } from './common.ts';

export function tenantRoutes(ctx: AdminContext): Route[] {
  const p = ctx.platform;
  const t = p.tenants;

  const org = (c: Caller, id: string): Organization => {
    const o = t.organization(id);
    if (!o || !seesOrganization(c, id)) throw new PlatformError(404, `organization ${id} not found`);
    return o;
  };
  const project = (c: Caller, id: string): Project => {
    const x = t.project(id);
    if (!x || !seesProject(c, x.organizationId, x.id)) throw new PlatformError(404, `project ${id} not found`);
    return x;
  };
  const app = (c: Caller, id: string): Application => {
    const a = t.application(id);
    if (!a || !seesProject(c, a.organizationId, a.projectId)) throw new PlatformError(404, `application ${id} not found`);
    return a;
  };
  const license = (c: Caller, id: string): License => {
    const l = p.licenses.get(id);
    const visible = l !== undefined && (l.applicationId === null ? seesOrganization(c, l.organizationId) : (() => {
      const a = t.application(l.applicationId!);
      return a !== undefined && seesProject(c, a.organizationId, a.projectId);
    })());
    if (!visible) throw new PlatformError(404, `licence ${id} not found`);
    return l!;
  };
  const orgView = (o: Organization) => ({ ...o, usage: p.licenses.usage(o.id, null) });
  const appView = (a: Application, secret?: string) => {
    const { secretHash: _hash, namespace, ...rest } = a;
    return { ...rest, namespace: `${namespace}/#`, ...(secret !== undefined ? { appSecret: secret } : {}), usage: p.licenses.usage(a.organizationId, a.id) };
  };
  const licenseView = (l: License) => ({ ...l, usage: p.licenses.usage(l.organizationId, l.applicationId) });

  /** After a tenant is gone: its licences, alert rules, channels and (an organization's) users. */
  const forget = async (organizationIds: string[], applicationIds: string[]) => {
    await p.licenses.forget(organizationIds, applicationIds);
    await p.forgetTenants(organizationIds, applicationIds);
    for (const u of ctx.auth.records()) if (u.organizationId && organizationIds.includes(u.organizationId)) await ctx.auth.deleteUser(u.username);
  };

  return [
    // Organizations.
    v1({
      method: 'GET', path: '/organizations', tag: 'platform-organizations',
      summary: 'Organizations in the caller\'s scope, paged; filter: name (contains). Each with its usage against its licence',
      query: listQuery({ name: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const items = t.organizations().filter((o) => seesOrganization(c, o.id) && contains(o.name, req.queryValues.name)).sort(byCreate).map(orgView);
        return list(req.queryValues, items);
      },
    }),
    v1({
      method: 'POST', path: '/organizations', tag: 'platform-organizations',
      summary: 'Add an organization (SystemAdmin): {name (topic-safe, unique, fixed), displayName?, description?}',
      body: ORGANIZATION_INPUT,
      async handler(req) {
        const c = callerOf(req);
        allow(isSystem(c), c, 'add organizations');
        const o = await t.addOrganization(req.body);
        note(req, { resource: 'organization', resourceId: o.id, organizationId: o.id, after: o });
        return ok(orgView(o));
      },
    }),
    v1({
      method: 'GET', path: '/organizations/:id', tag: 'platform-organizations', summary: 'One organization, with its usage',
      handler: (req) => ok(orgView(org(callerOf(req), req.params.id))),
    }),
    v1({
      method: 'GET', path: '/organizations/:id/usage', tag: 'platform-organizations', summary: 'An organization\'s connections and message rate against its licence, and its refusals',
      handler(req) {
        const o = org(callerOf(req), req.params.id);
        return ok(p.licenses.usage(o.id, null));
      },
    }),
    v1({
      method: 'PUT', path: '/organizations/:id', tag: 'platform-organizations', summary: 'Change an organization\'s displayName or description (its name is fixed)',
      body: ORGANIZATION_CHANGE,
      async handler(req) {
        const c = callerOf(req);
        const o = org(c, req.params.id);
        need(true, managesOrganization(c, o.id), 'organization', o.id, c);
        const { before, after } = await t.updateOrganization(o.id, req.body);
        note(req, { resource: 'organization', resourceId: o.id, organizationId: o.id, before, after });
        return ok(orgView(after));
      },
    }),
    v1({
      method: 'DELETE', path: '/organizations/:id', tag: 'platform-organizations',
      summary: 'Delete an organization (SystemAdmin); 409 while it has projects unless ?cascade=true (then its projects, applications, users, licences, alert rules and channels go with it, and its clients are disconnected)',
      query: CASCADE,
      async handler(req) {
        const c = callerOf(req);
        const o = org(c, req.params.id);
        need(true, isSystem(c), 'organization', o.id, c);
        const gone = await t.deleteOrganization(o.id, req.queryValues.cascade ?? false);
        await forget([o.id], gone.applications.map((a) => a.id));
        note(req, { resource: 'organization', resourceId: o.id, organizationId: o.id, before: o, after: { projects: gone.projects.length, applications: gone.applications.length } });
        return ok({ id: o.id, projects: gone.projects.length, applications: gone.applications.length });
      },
    }),

    // Projects.
    v1({
      method: 'GET', path: '/projects', tag: 'platform-projects', summary: 'Projects in the caller\'s scope, paged; filters: organizationId, name (contains)',
      query: listQuery({ organizationId: FILTER, name: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = t.projectList().filter((x) => seesProject(c, x.organizationId, x.id) && (!q.organizationId || x.organizationId === q.organizationId) && contains(x.name, q.name)).sort(byCreate);
        return list(q, items);
      },
    }),
    v1({
      method: 'POST', path: '/projects', tag: 'platform-projects', summary: 'Add a project: {organizationId (a tenant user\'s own by default), name (unique in the organization), description?}',
      body: PROJECT_INPUT,
      async handler(req) {
        const c = callerOf(req);
        const b = req.body;
        const organizationId = b.organizationId ?? c.organizationId;
        if (organizationId === null) throw invalid('organizationId', 'is required');
        org(c, organizationId);
        allow(managesOrganization(c, organizationId), c, 'add projects');
        const x = await t.addProject({ ...b, organizationId });
        note(req, { resource: 'project', resourceId: x.id, organizationId, projectId: x.id, after: x });
        return ok(x);
      },
    }),
    v1({
      method: 'GET', path: '/projects/:id', tag: 'platform-projects', summary: 'One project',
      handler: (req) => ok(project(callerOf(req), req.params.id)),
    }),
    v1({
      method: 'PUT', path: '/projects/:id', tag: 'platform-projects', summary: 'Change a project\'s name or description',
      body: PROJECT_CHANGE,
      async handler(req) {
        const c = callerOf(req);
        const x = project(c, req.params.id);
        need(true, managesOrganization(c, x.organizationId) || (c.role === 'ProjectAdmin' && c.projectId === x.id), 'project', x.id, c);
        const { before, after } = await t.updateProject(x.id, req.body);
        note(req, { resource: 'project', resourceId: x.id, organizationId: x.organizationId, projectId: x.id, before, after });
        return ok(after);
      },
    }),
    v1({
      method: 'DELETE', path: '/projects/:id', tag: 'platform-projects', summary: 'Delete a project; 409 while it has applications unless ?cascade=true',
      query: CASCADE,
      async handler(req) {
        const c = callerOf(req);
        const x = project(c, req.params.id);
        need(true, managesOrganization(c, x.organizationId), 'project', x.id, c);
        const gone = await t.deleteProject(x.id, req.queryValues.cascade ?? false);
        await forget([], gone.applications.map((a) => a.id));
        note(req, { resource: 'project', resourceId: x.id, organizationId: x.organizationId, projectId: x.id, before: x, after: { applications: gone.applications.length } });
        return ok({ id: x.id, applications: gone.applications.length });
      },
    }),

    // Applications.
    v1({
      method: 'GET', path: '/applications', tag: 'platform-applications', summary: 'Applications in the caller\'s scope, paged; filters: organizationId, projectId, name (contains), enabled',
      query: listQuery({ organizationId: FILTER, projectId: FILTER, name: FILTER, enabled: Type.Optional(Type.Boolean()) }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = t.applications().filter((a) => seesProject(c, a.organizationId, a.projectId)
          && (!q.organizationId || a.organizationId === q.organizationId) && (!q.projectId || a.projectId === q.projectId)
          && contains(a.name, q.name) && (q.enabled === undefined || a.enabled === q.enabled)).sort(byCreate).map((a) => appView(a));
        return list(q, items);
      },
    }),
    v1({
      method: 'POST', path: '/applications', tag: 'platform-applications',
      summary: 'Add an application (a device fleet): {projectId, name, description?, namespace? (default <org>/<project>/<app>/#; under <org>/ unless SystemAdmin), enabled?}. Answers its appKey (the MQTT username) and appSecret (the password), shown this once',
      body: APPLICATION_INPUT,
      async handler(req) {
        const c = callerOf(req);
        const b = req.body;
        const x = t.project(b.projectId);
        if (!x || !seesProject(c, x.organizationId, x.id)) throw invalid('projectId', 'no such project');
        allow(managesProject(c, x.organizationId, x.id), c, 'add applications to this project');
        const { application, secret } = await t.addApplication(b, isSystem(c));
        note(req, { resource: 'application', resourceId: application.id, organizationId: application.organizationId, projectId: application.projectId, after: appView(application) });
        return ok(appView(application, secret));
      },
    }),
    v1({
      method: 'GET', path: '/applications/:id', tag: 'platform-applications', summary: 'One application (never its secret), with its usage',
      handler: (req) => ok(appView(app(callerOf(req), req.params.id))),
    }),
    v1({
      method: 'GET', path: '/applications/:id/usage', tag: 'platform-applications', summary: 'An application\'s connections and message rate against its licence, and its refusals',
      handler(req) {
        const a = app(callerOf(req), req.params.id);
        return ok(p.licenses.usage(a.organizationId, a.id));
      },
    }),
    v1({
      method: 'PUT', path: '/applications/:id', tag: 'platform-applications', summary: 'Change an application: name, description, namespace, enabled (disabling it, or moving its namespace, disconnects its clients)',
      body: APPLICATION_CHANGE,
      async handler(req) {
        const c = callerOf(req);
        const a = app(c, req.params.id);
        need(true, managesProject(c, a.organizationId, a.projectId), 'application', a.id, c);
        const { before, after } = await t.updateApplication(a.id, req.body, isSystem(c));
        note(req, { resource: 'application', resourceId: a.id, organizationId: a.organizationId, projectId: a.projectId, before: appView(before), after: appView(after) });
        return ok(appView(after));
      },
    }),
    v1({
      method: 'POST', path: '/applications/:id/rotate-secret', tag: 'platform-applications', summary: 'A new appSecret (answered this once); the old one is refused from now on; connected clients stay connected',
      async handler(req) {
        const c = callerOf(req);
        const a = app(c, req.params.id);
        need(true, managesProject(c, a.organizationId, a.projectId), 'application', a.id, c);
        const { application, secret } = await t.rotateSecret(a.id);
        note(req, { action: 'rotate_secret', resource: 'application', resourceId: a.id, organizationId: a.organizationId, projectId: a.projectId });
        return ok(appView(application, secret));
      },
    }),
    v1({
      method: 'DELETE', path: '/applications/:id', tag: 'platform-applications', summary: 'Delete an application: its credentials stop working and its clients are disconnected',
      async handler(req) {
        const c = callerOf(req);
        const a = app(c, req.params.id);
        need(true, managesProject(c, a.organizationId, a.projectId), 'application', a.id, c);
        await t.deleteApplication(a.id);
        await forget([], [a.id]);
        note(req, { resource: 'application', resourceId: a.id, organizationId: a.organizationId, projectId: a.projectId, before: appView(a) });
        return ok({ id: a.id });
      },
    }),

    // Licences.
    v1({
      method: 'GET', path: '/licenses', tag: 'platform-licenses', summary: 'Licences in the caller\'s scope, paged, each with its usage; filters: organizationId, applicationId',
      query: listQuery({ organizationId: FILTER, applicationId: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = p.licenses.list().filter((l) => {
          try {
            license(c, l.id);
          } catch {
            return false;
          }
          return (!q.organizationId || l.organizationId === q.organizationId) && (!q.applicationId || l.applicationId === q.applicationId);
        }).sort(byCreate).map(licenseView);
        return list(q, items);
      },
    }),
    v1({
      method: 'POST', path: '/licenses', tag: 'platform-licenses',
      summary: 'Grant a licence (SystemAdmin): {organizationId, applicationId? (null: the whole organization), maxConnections? (null: no limit), maxMessageRate? (per second), features?, expires?, description?}; enforced on every worker at once',
      body: LICENSE_INPUT,
      async handler(req) {
        const c = callerOf(req);
        allow(isSystem(c), c, 'grant licences');
        const l = await p.licenses.add(req.body);
        note(req, { resource: 'license', resourceId: l.id, organizationId: l.organizationId, after: l });
        return ok(licenseView(l));
      },
    }),
    v1({
      method: 'GET', path: '/licenses/:id', tag: 'platform-licenses', summary: 'One licence, with its usage',
      handler: (req) => ok(licenseView(license(callerOf(req), req.params.id))),
    }),
    v1({
      method: 'PUT', path: '/licenses/:id', tag: 'platform-licenses', summary: 'Change a licence\'s terms (SystemAdmin)',
      body: LICENSE_CHANGE,
      async handler(req) {
        const c = callerOf(req);
        const l = license(c, req.params.id);
        need(true, isSystem(c), 'licence', l.id, c);
        const { before, after } = await p.licenses.update(l.id, req.body);
        note(req, { resource: 'license', resourceId: l.id, organizationId: l.organizationId, before, after });
        return ok(licenseView(after));
      },
    }),
    v1({
      method: 'DELETE', path: '/licenses/:id', tag: 'platform-licenses', summary: 'Withdraw a licence (SystemAdmin): the tenant has no limits from it any more',
      async handler(req) {
        const c = callerOf(req);
        const l = license(c, req.params.id);
        need(true, isSystem(c), 'licence', l.id, c);
        await p.licenses.delete(l.id);
        note(req, { resource: 'license', resourceId: l.id, organizationId: l.organizationId, before: l });
        return ok({ id: l.id });
      },
    }),
  ];
}

function byCreate(a: { createTime: string }, b: { createTime: string }): number {
  return a.createTime.localeCompare(b.createTime);
}
