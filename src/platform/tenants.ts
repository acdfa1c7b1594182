// TenantDirectory: the control platform's organizations, projects and applications (main thread).
// Kept in memory and in the store (admin kinds platform-org, platform-project, platform-app);
// writes are serialized, so every check (a name taken, a namespace overlapping another tenant's)
// holds when the write lands. Each organization and application has a slot in the shared tenant
// counters the workers count its connections and messages in. An application's credentials are
// answered by `authenticate` (the first policy of the authentication chain, tenant-policy.ts).
import { randomUUID } from 'node:crypto';

import { Serial } from './serial.ts';
import type { Store } from '../store/types.ts';
import { conflict, invalid, missing } from './errors.ts';
import { checkApplication, checkApplicationChange, checkOrganization, checkOrganizationChange, checkProject, checkProjectChange } from './inputs.ts';
import { checkName, checkNamespace, overlaps } from './names.ts';
import { APP_KEY_PREFIX, hashSecret, newAppKey, newSecret, secretMatches } from './credentials.ts';
import type { Application, Organization, Project } from './records.ts';
import type { TenantSlots } from './tenant-slots.ts';

export const KINDS = { org: 'platform-org', project: 'platform-project', app: 'platform-app' } as const;

/** What the directory tells the rest of the platform. */
export interface TenantEvents {
  /** Credentials or namespaces changed: the workers' cached answers must go. */
  credentialsChanged(): void;
  /** These applications' clients must be disconnected (deleted or disabled). */
  kick(applicationIds: string[]): void;
}

export type CredentialCheck =
  | { result: 'unknown' }
  | { result: 'deny'; reason: string }
  | { result: 'allow'; application: Application };

export class TenantDirectory {
  private readonly orgs = new Map<string, Organization>();
  private readonly projects = new Map<string, Project>();
  private readonly apps = new Map<string, Application>();
  private readonly byKey = new Map<string, Application>();
  private readonly writes = new Serial();

  constructor(
    private readonly store: Store,
    readonly slots: TenantSlots,
    private readonly maxTopicLevels: number,
    private readonly events: TenantEvents,
  ) {}

  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<Organization>(KINDS.org)) {
      this.orgs.set(doc.id, doc);
      this.slots.take(doc.id);
    }
    for (const { doc } of await this.store.listAdmin<Project>(KINDS.project)) this.projects.set(doc.id, doc);
    for (const { doc } of await this.store.listAdmin<Application>(KINDS.app)) {
      this.apps.set(doc.id, doc);
      this.byKey.set(doc.appKey, doc);
      this.slots.take(doc.id);
    }
  }

  /** An organization, project or application changed on another node of the cluster (`doc`
   * null: removed), applied here as this node's own change would be: tenant slots, the
   * credentials the workers cached, the clients of an application removed or disabled. The store
   * is written by the caller. */
  applyStored(kind: string, id: string, doc: Organization | Project | Application | null): Promise<void> {
    return this.writes.run(async () => {
      if (kind === KINDS.org) {
        const had = this.orgs.has(id);
        if (doc === null) {
          this.orgs.delete(id);
          if (had) this.slots.release(id);
        } else {
          if (!had) this.slots.take(id);
          this.orgs.set(id, doc as Organization);
        }
        this.events.credentialsChanged();
      } else if (kind === KINDS.project) {
        if (doc === null) this.projects.delete(id);
        else this.projects.set(id, doc as Project);
      } else if (kind === KINDS.app) {
        const before = this.apps.get(id);
        if (before) this.byKey.delete(before.appKey);
        if (doc === null) {
          if (before) {
            this.apps.delete(id);
            this.slots.release(id);
            this.afterRemoval([before]);
          }
          return;
        }
        const after = doc as Application;
        if (!before) this.slots.take(id);
        this.apps.set(id, after);
        this.byKey.set(after.appKey, after);
        this.events.credentialsChanged();
        if (before && ((before.enabled && !after.enabled) || before.namespace !== after.namespace)) this.events.kick([id]);
      }
    });
  }

  // Reads.

  organizations(): Organization[] {
    return [...this.orgs.values()];
  }

  organization(id: string): Organization | undefined {
    return this.orgs.get(id);
  }

  projectList(): Project[] {
    return [...this.projects.values()];
  }

  project(id: string): Project | undefined {
    return this.projects.get(id);
  }

  applications(): Application[] {
    return [...this.apps.values()];
  }

  application(id: string): Application | undefined {
    return this.apps.get(id);
  }

  /** The credentials of an MQTT CONNECT: unknown when the username is no app key. */
  authenticate(username: string | undefined, password: Buffer | undefined): CredentialCheck {
    const app = username === undefined ? undefined : this.byKey.get(username);
    // App keys are the platform's usernames: one that is gone (a deleted application) is refused,
    // never passed on to the static users (which may admit anyone).
    if (!app) return username?.startsWith(APP_KEY_PREFIX) ? { result: 'deny', reason: 'unknown application key' } : { result: 'unknown' };
    if (!secretMatches(password, app.secretHash)) return { result: 'deny', reason: 'wrong application secret' };
    if (!app.enabled) return { result: 'deny', reason: 'application disabled' };
    return { result: 'allow', application: app };
  }

  // Organizations.

  addOrganization(input: unknown): Promise<Organization> {
    return this.writes.run(async () => {
      checkOrganization(input);
      const name = checkName('name', input.name);
      if (this.organizations().some((o) => o.name === name)) throw conflict('name', `an organization named ${name} exists`);
      const now = new Date().toISOString();
      const org: Organization = { id: randomUUID(), name, displayName: input.displayName ?? name, description: input.description ?? '', createTime: now, updateTime: now };
      this.slots.take(org.id);
      try {
        await this.store.putAdmin(KINDS.org, org.id, org);
      } catch (err) {
        this.slots.release(org.id);
        throw err;
      }
      this.orgs.set(org.id, org);
      this.events.credentialsChanged();
      return org;
    });
  }

  updateOrganization(id: string, input: unknown): Promise<{ before: Organization; after: Organization }> {
    return this.writes.run(async () => {
      const before = this.orgs.get(id);
      if (!before) throw missing('organization', id);
      checkOrganizationChange(input);
      if (input.name !== undefined && input.name !== before.name) throw invalid('name', 'cannot be changed: it is the first level of the namespaces of the organization\'s applications');
      const after: Organization = { ...before, displayName: input.displayName ?? before.displayName, description: input.description ?? before.description, updateTime: new Date().toISOString() };
      await this.store.putAdmin(KINDS.org, id, after);
      this.orgs.set(id, after);
      return { before, after };
    });
  }

  /** Deletes the organization, and with `cascade` its projects and applications (409 without
   * it while it has any). Users, licences, alert rules and channels are the caller's to remove. */
  deleteOrganization(id: string, cascade: boolean): Promise<{ organization: Organization; projects: Project[]; applications: Application[] }> {
    return this.writes.run(async () => {
      const organization = this.orgs.get(id);
      if (!organization) throw missing('organization', id);
      const projects = this.projectList().filter((p) => p.organizationId === id);
      if (projects.length > 0 && !cascade) throw conflict('cascade', `organization ${organization.name} still has ${projects.length} project(s); delete them first or ask with cascade=true`);
      const applications = this.applications().filter((a) => a.organizationId === id);
      for (const a of applications) await this.removeApplication(a);
      for (const p of projects) {
        await this.store.deleteAdmin(KINDS.project, p.id);
        this.projects.delete(p.id);
      }
      await this.store.deleteAdmin(KINDS.org, id);
      this.orgs.delete(id);
      this.slots.release(id);
      this.afterRemoval(applications);
      return { organization, projects, applications };
    });
  }

  // Projects.

  addProject(input: unknown): Promise<Project> {
    return this.writes.run(async () => {
      checkProject(input);
      const organizationId = input.organizationId ?? '';
      if (!this.orgs.has(organizationId)) throw invalid('organizationId', 'no such organization');
      const name = checkName('name', input.name);
      if (this.projectList().some((p) => p.organizationId === organizationId && p.name === name)) throw conflict('name', `the organization has a project named ${name}`);
      const now = new Date().toISOString();
      const project: Project = { id: randomUUID(), organizationId, name, description: input.description ?? '', createTime: now, updateTime: now };
      await this.store.putAdmin(KINDS.project, project.id, project);
      this.projects.set(project.id, project);
      return project;
    });
  }

  updateProject(id: string, input: unknown): Promise<{ before: Project; after: Project }> {
    return this.writes.run(async () => {
      const before = this.projects.get(id);
      if (!before) throw missing('project', id);
      checkProjectChange(input);
      if (input.organizationId !== undefined && input.organizationId !== before.organizationId) throw invalid('organizationId', 'a project cannot move to another organization');
      const name = input.name === undefined ? before.name : checkName('name', input.name);
      if (name !== before.name && this.projectList().some((p) => p.organizationId === before.organizationId && p.name === name)) throw conflict('name', `the organization has a project named ${name}`);
      const after: Project = { ...before, name, description: input.description ?? before.description, updateTime: new Date().toISOString() };
      await this.store.putAdmin(KINDS.project, id, after);
      this.projects.set(id, after);
      return { before, after };
    });
  }

  deleteProject(id: string, cascade: boolean): Promise<{ project: Project; applications: Application[] }> {
    return this.writes.run(async () => {
      const project = this.projects.get(id);
      if (!project) throw missing('project', id);
      const applications = this.applications().filter((a) => a.projectId === id);
      if (applications.length > 0 && !cascade) throw conflict('cascade', `project ${project.name} still has ${applications.length} application(s); delete them first or ask with cascade=true`);
      for (const a of applications) await this.removeApplication(a);
      await this.store.deleteAdmin(KINDS.project, id);
      this.projects.delete(id);
      if (applications.length > 0) this.afterRemoval(applications);
      return { project, applications };
    });
  }

  // Applications.

  /** A new application with its credentials; the secret is answered this once. `ownNamespace`:
   * the caller may choose a namespace outside `<organization>/` (a SystemAdmin). */
  addApplication(input: unknown, ownNamespace: boolean): Promise<{ application: Application; secret: string }> {
    return this.writes.run(async () => {
      checkApplication(input);
      const { projectId } = input;
      const project = this.projects.get(projectId);
      if (!project) throw invalid('projectId', 'no such project');
      const org = this.orgs.get(project.organizationId)!;
      const name = checkName('name', input.name);
      if (this.applications().some((a) => a.projectId === projectId && a.name === name)) throw conflict('name', `the project has an application named ${name}`);
      const namespace = input.namespace === undefined || input.namespace === null
        ? checkNamespace('namespace', `${org.name}/${project.name}/${name}`, this.maxTopicLevels)
        : this.customNamespace(input.namespace, org, ownNamespace);
      this.checkOverlap(namespace, null, org.id);
      const secret = newSecret();
      const now = new Date().toISOString();
      const application: Application = {
        id: randomUUID(), organizationId: org.id, projectId, name, description: input.description ?? '', namespace,
        appKey: newAppKey(), secretHash: hashSecret(secret), enabled: input.enabled ?? true, secretRotateTime: now, createTime: now, updateTime: now,
      };
      this.slots.take(application.id);
      try {
        await this.store.putAdmin(KINDS.app, application.id, application);
      } catch (err) {
        this.slots.release(application.id);
        throw err;
      }
      this.apps.set(application.id, application);
      this.byKey.set(application.appKey, application);
      this.events.credentialsChanged();
      return { application, secret };
    });
  }

  updateApplication(id: string, input: unknown, ownNamespace: boolean): Promise<{ before: Application; after: Application }> {
    return this.writes.run(async () => {
      const before = this.apps.get(id);
      if (!before) throw missing('application', id);
      checkApplicationChange(input);
      if (input.projectId !== undefined && input.projectId !== before.projectId) throw invalid('projectId', 'an application cannot move to another project');
      const name = input.name === undefined ? before.name : checkName('name', input.name);
      if (name !== before.name && this.applications().some((a) => a.projectId === before.projectId && a.name === name)) throw conflict('name', `the project has an application named ${name}`);
      const org = this.orgs.get(before.organizationId)!;
      const namespace = input.namespace === undefined || input.namespace === null ? before.namespace : this.customNamespace(input.namespace, org, ownNamespace);
      if (namespace !== before.namespace) this.checkOverlap(namespace, id, org.id);
      const after: Application = { ...before, name, namespace, description: input.description ?? before.description, enabled: input.enabled ?? before.enabled, updateTime: new Date().toISOString() };
      await this.store.putAdmin(KINDS.app, id, after);
      this.apps.set(id, after);
      this.byKey.set(after.appKey, after);
      this.events.credentialsChanged();
      // Disabled, or confined elsewhere: its clients connect again under the new terms.
      if ((before.enabled && !after.enabled) || before.namespace !== after.namespace) this.events.kick([id]);
      return { before, after };
    });
  }

  /** A new secret; the old one is refused from now on (connected clients stay connected). */
  rotateSecret(id: string): Promise<{ application: Application; secret: string }> {
    return this.writes.run(async () => {
      const before = this.apps.get(id);
      if (!before) throw missing('application', id);
      const secret = newSecret();
      const now = new Date().toISOString();
      const application: Application = { ...before, secretHash: hashSecret(secret), secretRotateTime: now, updateTime: now };
      await this.store.putAdmin(KINDS.app, id, application);
      this.apps.set(id, application);
      this.byKey.set(application.appKey, application);
      this.events.credentialsChanged();
      return { application, secret };
    });
  }

  deleteApplication(id: string): Promise<Application> {
    return this.writes.run(async () => {
      const application = this.apps.get(id);
      if (!application) throw missing('application', id);
      await this.removeApplication(application);
      this.afterRemoval([application]);
      return application;
    });
  }

  private async removeApplication(a: Application): Promise<void> {
    await this.store.deleteAdmin(KINDS.app, a.id);
    this.apps.delete(a.id);
    this.byKey.delete(a.appKey);
    this.slots.release(a.id);
  }

  private afterRemoval(applications: Application[]): void {
    this.events.credentialsChanged();
    if (applications.length > 0) this.events.kick(applications.map((a) => a.id));
  }

  private customNamespace(v: unknown, org: Organization, ownNamespace: boolean): string {
    const prefix = checkNamespace('namespace', v, this.maxTopicLevels);
    if (!ownNamespace && prefix !== org.name && !prefix.startsWith(`${org.name}/`)) throw invalid('namespace', `must be under ${org.name}/ (the organization's name)`);
    return prefix;
  }

  private checkOverlap(namespace: string, self: string | null, organizationId: string): void {
    for (const a of this.apps.values()) {
      if (a.id === self || !overlaps(a.namespace, namespace)) continue;
      // Another organization's application is not named (it is not the caller's to know).
      throw conflict('namespace', `${namespace}/# overlaps the namespace of ${a.organizationId === organizationId ? `application ${a.name}` : "another organization's application"}`);
    }
  }
}
