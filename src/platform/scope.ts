// Who may see and change what on the control platform. Roles:
// - SystemAdmin (the broker's admin users): everything, every organization.
// - OrganizationAdmin: its organization: its projects, applications, users, alert rules,
//   channels and alerts; reads its licences and audit log.
// - ProjectAdmin: its project's applications; reads its organization, alert rules, channels and
//   alerts, and handles alerts; its project's audit log.
// - User: reads its organization (or, when it belongs to a project, that project).
// Anything outside the caller's scope is answered 404 (never its data, nor that it exists); a
// write the caller's role does not allow, on something it can see, is 403.
import { PlatformError } from './errors.ts';

export type PlatformRole = 'SystemAdmin' | 'OrganizationAdmin' | 'ProjectAdmin' | 'User';
export const PLATFORM_ROLES: readonly PlatformRole[] = ['SystemAdmin', 'OrganizationAdmin', 'ProjectAdmin', 'User'];

export interface Caller {
  id: string;
  username: string;
  role: PlatformRole;
  organizationId: string | null;
  projectId: string | null;
}

/** The platform role of a stored user role: admin is SystemAdmin; a viewer has none. */
export function platformRole(stored: string): PlatformRole | null {
  if (stored === 'admin') return 'SystemAdmin';
  if (stored === 'OrganizationAdmin' || stored === 'ProjectAdmin' || stored === 'User') return stored;
  return null;
}

export function isSystem(c: Caller): boolean {
  return c.role === 'SystemAdmin';
}

/** Whether the caller sees organization `orgId` (its record, licences, alerts). */
export function seesOrganization(c: Caller, orgId: string): boolean {
  return isSystem(c) || c.organizationId === orgId;
}

/** Whether the caller sees project `projectId` of organization `orgId` (and its applications). */
export function seesProject(c: Caller, orgId: string, projectId: string): boolean {
  if (isSystem(c)) return true;
  if (c.organizationId !== orgId) return false;
  if (c.role === 'OrganizationAdmin') return true;
  return c.projectId === null || c.projectId === projectId;
}

/** Whether the caller may change project `projectId`'s applications. */
export function managesProject(c: Caller, orgId: string, projectId: string): boolean {
  if (isSystem(c)) return true;
  if (c.organizationId !== orgId) return false;
  return c.role === 'OrganizationAdmin' || (c.role === 'ProjectAdmin' && c.projectId === projectId);
}

/** Whether the caller may change what belongs to the organization as a whole (projects, users,
 * alert rules, channels). */
export function managesOrganization(c: Caller, orgId: string): boolean {
  return isSystem(c) || (c.role === 'OrganizationAdmin' && c.organizationId === orgId);
}

/** 404 unless `visible`; then 403 unless `allowed`. */
export function need(visible: boolean, allowed: boolean, what: string, id: string, c: Caller): void {
  if (!visible) throw new PlatformError(404, `${what} ${id} not found`);
  if (!allowed) throw new PlatformError(403, `${c.role} ${c.username} may not change ${what} ${id}`);
}

/** 403 unless `allowed` (an action that is not about one visible record). */
export function allow(allowed: boolean, c: Caller, action: string): void {
  if (!allowed) throw new PlatformError(403, `${c.role} ${c.username} may not ${action}`);
}

/** The organization a non-SystemAdmin acts in (its own); a SystemAdmin names one. */
export function organizationFor(c: Caller, given: unknown): string | null {
  if (isSystem(c)) return typeof given === 'string' && given !== '' ? given : null;
  if (given !== undefined && given !== null && given !== c.organizationId) throw new PlatformError(404, `organization ${String(given)} not found`);
  return c.organizationId;
}
