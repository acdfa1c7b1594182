// Owns reading a Mosquitto dynamic-security.json (what the dynamic security plugin of Mosquitto 2
// writes, as mosquitto_ctrl changes it) into the built-in client database's import shape:
// - clients keep their PBKDF2-SHA512 password (base64 `password`, `salt`, `iterations`) as a
//   Mosquitto `$7$` hash, which Spindle verifies; `clientid` binds the client id, `disabled`
//   becomes enabled: false, `textname` / `textdescription` the text name and description.
// - Groups are flattened: a client's roles are its own roles by priority (highest first), then
//   the roles of each of its groups, groups by priority, each group's roles by priority, as the
//   plugin checks them; a role met twice counts at its first place.
// - Roles' ACLs by type: publishClientSend -> publish; publishClientReceive -> subscribe (the read
//   check of every message delivered through a subscription granted in part, and the scope of a
//   subscription); subscribeLiteral -> subscribe-filter literal; subscribePattern ->
//   subscribe-filter; unsubscribeLiteral / unsubscribePattern are left out (Spindle does not
//   check UNSUBSCRIBE) and reported. Within a role: by priority, highest first, literals before
//   patterns for subscriptions. A '%' in a topic is taken literally.
// - defaultACLAccess -> settings.defaultAccess (publishClientSend -> publish, publishClientReceive
//   -> subscribe, subscribe -> subscribeFilter); anonymousGroup -> settings.anonymousRoles (its
//   roles, by priority; none: anonymous clients get the default access only).
import { ClientDbError } from './errors.ts';
import type { ExportBody } from './schemas.ts';
import type { ClientDoc, DefaultAccess, RoleDoc, RoleRule } from './types.ts';

/** What could not be imported, one line each. */
export type Skipped = string[];

interface DynsecRoleRef { rolename?: unknown; priority?: unknown }
interface DynsecAcl { acltype?: unknown; topic?: unknown; priority?: unknown; allow?: unknown }

export function fromDynsec(config: unknown): { data: ExportBody; skipped: Skipped } {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw bad('config', 'must be the JSON object of a dynamic-security.json');
  const c = config as Record<string, unknown>;
  const skipped: Skipped = [];
  const now = new Date().toISOString();

  const roles: RoleDoc[] = [];
  const roleNames = new Set<string>();
  list(c.roles, 'config.roles').forEach((r, i) => {
    const at = `config.roles[${i}]`;
    const name = str(r.rolename, `${at}.rolename`);
    if (roleNames.has(name)) throw bad(`${at}.rolename`, `role ${name} is listed twice`);
    roleNames.add(name);
    const rules: { rule: RoleRule; priority: number; order: number; index: number }[] = [];
    list(r.acls, `${at}.acls`).forEach((a: DynsecAcl, j) => {
      const aat = `${at}.acls[${j}]`;
      const type = str(a.acltype, `${aat}.acltype`);
      const topic = str(a.topic, `${aat}.topic`).replaceAll('%', '%%');
      const permission = a.allow === true ? 'allow' : 'deny';
      const priority = num(a.priority, 0, `${aat}.priority`);
      let rule: RoleRule;
      let order = 1;
      switch (type) {
        case 'publishClientSend': rule = { action: 'publish', permission, topic }; break;
        case 'publishClientReceive': rule = { action: 'subscribe', permission, topic }; break;
        case 'subscribeLiteral': rule = { action: 'subscribe-filter', permission, topic, literal: true }; order = 0; break;
        case 'subscribePattern': rule = { action: 'subscribe-filter', permission, topic }; break;
        case 'unsubscribeLiteral':
        case 'unsubscribePattern':
          skipped.push(`${aat}: ${type} ${a.topic as string} (Spindle does not check UNSUBSCRIBE)`);
          return;
        default: throw bad(`${aat}.acltype`, `unknown ACL type ${JSON.stringify(type)}`);
      }
      rules.push({ rule, priority, order, index: j });
    });
    rules.sort((x, y) => y.priority - x.priority || x.order - y.order || x.index - y.index);
    const doc: RoleDoc = { name, rules: rules.map((x) => x.rule), createTime: now, updateTime: now };
    const description = text(r.textdescription) ?? text(r.textname);
    if (description !== undefined) doc.description = description;
    roles.push(doc);
  });

  // Groups: their roles by priority, and their members with the group's priority for each.
  const groupRoles = new Map<string, string[]>();
  const memberships = new Map<string, { group: string; priority: number; index: number }[]>();
  list(c.groups, 'config.groups').forEach((g, i) => {
    const at = `config.groups[${i}]`;
    const name = str(g.groupname, `${at}.groupname`);
    groupRoles.set(name, byPriority(list(g.roles, `${at}.roles`), `${at}.roles`, roleNames));
    list(g.clients, `${at}.clients`).forEach((m, j) => {
      const username = str(m.username, `${at}.clients[${j}].username`);
      const entry = { group: name, priority: num(m.priority, -1, `${at}.clients[${j}].priority`), index: i };
      memberships.set(username, [...(memberships.get(username) ?? []), entry]);
    });
  });

  const clients: ClientDoc[] = [];
  list(c.clients, 'config.clients').forEach((cl, i) => {
    const at = `config.clients[${i}]`;
    const username = str(cl.username, `${at}.username`);
    if (typeof cl.password !== 'string' || typeof cl.salt !== 'string') {
      skipped.push(`${at}: client ${username} has no password (it could not sign in)`);
      return;
    }
    const iterations = num(cl.iterations, 101, `${at}.iterations`);
    const names = byPriority(list(cl.roles, `${at}.roles`), `${at}.roles`, roleNames);
    const groups = (memberships.get(username) ?? []).sort((x, y) => y.priority - x.priority || x.index - y.index);
    for (const g of groups) names.push(...(groupRoles.get(g.group) ?? []));
    const doc: ClientDoc = {
      username,
      passwordHash: `$7$${iterations}$${cl.salt}$${cl.password}`,
      enabled: cl.disabled !== true,
      roles: [...new Set(names)].map((name) => ({ name })),
      createTime: now,
      updateTime: now,
    };
    if (typeof cl.clientid === 'string' && cl.clientid !== '') doc.clientId = cl.clientid;
    const textName = text(cl.textname);
    if (textName !== undefined) doc.textName = textName;
    const description = text(cl.textdescription);
    if (description !== undefined) doc.description = description;
    clients.push(doc);
  });

  const d = (c.defaultACLAccess ?? {}) as Record<string, unknown>;
  const defaultAccess: DefaultAccess = {
    publish: access(d.publishClientSend, false),
    subscribe: access(d.publishClientReceive, true),
    subscribeFilter: access(d.subscribe, false),
  };
  let anonymousRoles: string[] = [];
  if (typeof c.anonymousGroup === 'string') {
    const roles = groupRoles.get(c.anonymousGroup);
    if (roles === undefined) throw bad('config.anonymousGroup', `group ${c.anonymousGroup} is not in config.groups`);
    anonymousRoles = roles;
  }
  return { data: { clients, roles, settings: { anonymousRoles, defaultAccess } }, skipped };
}

/** Role names of a list of {rolename, priority} by priority, highest first (absent: -1). */
function byPriority(refs: DynsecRoleRef[], at: string, known: Set<string>): string[] {
  return refs
    .map((r, i) => {
      const name = str(r.rolename, `${at}[${i}].rolename`);
      if (!known.has(name)) throw bad(`${at}[${i}].rolename`, `role ${name} is not in config.roles`);
      return { name, priority: num(r.priority, -1, `${at}[${i}].priority`), i };
    })
    .sort((a, b) => b.priority - a.priority || a.i - b.i)
    .map((r) => r.name);
}

function access(v: unknown, fallback: boolean): 'allow' | 'deny' {
  return (typeof v === 'boolean' ? v : fallback) ? 'allow' : 'deny';
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function list(v: unknown, at: string): Record<string, any>[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => x === null || typeof x !== 'object')) throw bad(at, 'must be a list of objects');
  return v as Record<string, unknown>[];
}

function str(v: unknown, at: string): string {
  if (typeof v !== 'string' || v === '') throw bad(at, 'must be a non-empty string');
  return v;
}

function num(v: unknown, fallback: number, at: string): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(at, 'must be an integer');
  return v;
}

function text(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v.slice(0, 1024) : undefined;
}

function bad(field: string, message: string): ClientDbError {
  return new ClientDbError(400, field, `${field}: ${message}`);
}
