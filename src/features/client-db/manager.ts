// The built-in client database, the main thread's half: clients and roles kept in the store (admin
// kinds client-db-client, client-db-role, client-db-settings), replicated to the cluster's nodes,
// and sent to every worker (each holds a copy, worker-db.ts). A change is stored, then sent to the
// running workers as a delta (one client changed: that client); a worker that starts gets
// everything before it opens its listeners. Passwords are hashed here (argon2id, on the libuv
// pool) and made into SCRAM credentials (credentials.ts), never kept or answered in plain. Kicking sessions already connected is done on every
// worker of this node and, through the replicated kind client-db-kick, of every node.
import { randomBytes, randomUUID } from 'node:crypto';

import { aclPatternProblem } from '../../auth/acl-pattern.ts';
import { pskKeyProblem } from '../../auth/index.ts';
import { rateLimitProblem, type RateLimit } from '../../broker/rate-limit.ts';
import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import type { FeatureWorkers } from '../feature.ts';
import { checkStoredCredentials, credentialsOf, hashKind, scramMechanisms, type Credentials } from './credentials.ts';
import { ClientDbError } from './errors.ts';
import type { ClientCreate, ClientUpdate, ExportBody, RoleCreate, RoleUpdate } from './schemas.ts';
import { DEFAULT_SETTINGS, LIMITS, type ClientDbDelta, type ClientDbExport, type ClientDoc, type RoleDoc, type RoleRef, type RoleRule, type SettingsDoc, type WorkerClient, type WorkerRole } from './types.ts';

export const KINDS = { client: 'client-db-client', role: 'client-db-role', settings: 'client-db-settings', kick: 'client-db-kick', secret: 'client-db-secret' } as const;
const SETTINGS_ID = 'settings';
/** The key SCRAM makes the salts of unknown usernames from (kind client-db-secret): kept so the
 * salt shown for a name stays the same across restarts; not replicated (a cluster on a shared
 * store reads the same one). */
const SCRAM_MOCK_ID = 'scram-mock-key';
/** A kick another node asked for is acted on only this soon after (a node catching up later
 * must not kick clients that connected since). */
const KICK_FRESH_MS = 60_000;
/** A kick record is removed from the store this long after it was written. */
const KICK_KEEP_MS = 10_000;

interface KickDoc {
  usernames: string[];
  at: number;
}

/** A client as the API answers it: never its password, hash, SCRAM keys or PSK key; which SCRAM
 * mechanisms it can sign in with, and whether it has a PSK key. */
export type ClientView = Omit<ClientDoc, 'passwordHash' | 'scram' | 'pskKey'> & { passwordType: string; scramMechanisms: string[]; hasPskKey: boolean };

export interface ClientDbCountsHost {
  readonly clients: number;
  readonly roles: number;
}

export class ClientDbManager implements ClientDbCountsHost {
  private readonly clientDocs = new Map<string, ClientDoc>();
  private readonly roleDocs = new Map<string, RoleDoc>();
  private settingsDoc: SettingsDoc = DEFAULT_SETTINGS;
  private readonly kickTimers = new Set<NodeJS.Timeout>();
  /** Changes are made one at a time (a store write, then the workers). */
  private queue: Promise<unknown> = Promise.resolve();
  private scramMockKey = randomBytes(32).toString('base64');

  constructor(
    private readonly store: Store,
    private readonly workers: FeatureWorkers,
    private readonly log: Logger,
    /** PBKDF2 iterations of the SCRAM credentials made from a plain password (auth.scram.iterations). */
    private readonly scramIterations: number,
  ) {
    workers.onWorkerStart((worker) => workers.call(worker, 'clientDb.apply', this.fullDelta()));
  }

  get clients(): number {
    return this.clientDocs.size;
  }

  get roles(): number {
    return this.roleDocs.size;
  }

  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<RoleDoc>(KINDS.role)) this.roleDocs.set(doc.name, doc);
    for (const { doc } of await this.store.listAdmin<ClientDoc>(KINDS.client)) this.clientDocs.set(doc.username, doc);
    const settings = await this.store.getAdmin<SettingsDoc>(KINDS.settings, SETTINGS_ID);
    if (settings !== undefined) this.settingsDoc = settings;
    const secret = await this.store.getAdmin<{ key: string }>(KINDS.secret, SCRAM_MOCK_ID);
    if (typeof secret?.key === 'string') this.scramMockKey = secret.key;
    else await this.store.putAdmin(KINDS.secret, SCRAM_MOCK_ID, { key: this.scramMockKey });
  }

  // ---- clients

  listClients(filter?: string): ClientView[] {
    const all = [...this.clientDocs.values()].filter((c) => filter === undefined || c.username.includes(filter));
    return all.sort((a, b) => a.username.localeCompare(b.username)).map(clientView);
  }

  getClient(username: string): ClientView {
    return clientView(this.clientOrThrow(username));
  }

  createClient(body: ClientCreate): Promise<ClientView> {
    return this.serial(async () => {
      if (this.clientDocs.has(body.username)) throw new ClientDbError(409, 'username', `username: client ${body.username} exists`);
      if (this.clientDocs.size >= LIMITS.clients) throw new ClientDbError(409, 'username', `username: the database holds ${LIMITS.clients} clients, its limit`);
      this.checkRoleRefs(body.roles ?? [], 'roles');
      const now = new Date().toISOString();
      const doc: ClientDoc = {
        username: body.username,
        ...(await credentialsOf(body, undefined, this.scramIterations)),
        enabled: body.enabled ?? true,
        roles: body.roles ?? [],
        createTime: now,
        updateTime: now,
      };
      if (body.clientId !== undefined) doc.clientId = body.clientId;
      if (body.textName !== undefined) doc.textName = body.textName;
      if (body.description !== undefined) doc.description = body.description;
      if (body.rateLimit !== undefined) doc.rateLimit = checkRateLimit(body.rateLimit);
      if (body.pskKey !== undefined) doc.pskKey = checkPskKey(body.pskKey);
      await this.putClients([doc]);
      return clientView(doc);
    });
  }

  updateClient(username: string, body: ClientUpdate, kick: boolean): Promise<ClientView> {
    return this.serial(async () => {
      const old = this.clientOrThrow(username);
      if (body.roles !== undefined) this.checkRoleRefs(body.roles, 'roles');
      const doc: ClientDoc = { ...old, updateTime: new Date().toISOString() };
      const credentials = await credentialsOf(body, old, this.scramIterations);
      if (credentials !== undefined) setCredentials(doc, credentials);
      if (body.enabled !== undefined) doc.enabled = body.enabled;
      if (body.roles !== undefined) doc.roles = body.roles;
      setOptional(doc, 'clientId', body.clientId);
      setOptional(doc, 'textName', body.textName);
      setOptional(doc, 'description', body.description);
      setOptional(doc, 'rateLimit', body.rateLimit === undefined || body.rateLimit === null ? body.rateLimit : checkRateLimit(body.rateLimit));
      setOptional(doc, 'pskKey', body.pskKey === undefined || body.pskKey === null ? body.pskKey : checkPskKey(body.pskKey));
      await this.putClients([doc]);
      if (kick) await this.kick([username]);
      return clientView(doc);
    });
  }

  deleteClient(username: string, kick: boolean): Promise<void> {
    return this.serial(async () => {
      this.clientOrThrow(username);
      await this.store.deleteAdmin(KINDS.client, username);
      this.clientDocs.delete(username);
      await this.send({ removeClients: [username] });
      if (kick) await this.kick([username]);
    });
  }

  // ---- roles

  listRoles(): RoleDoc[] {
    return [...this.roleDocs.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  getRole(name: string): RoleDoc & { clients: number } {
    const role = this.roleOrThrow(name);
    return { ...role, clients: this.clientsOfRole(name).length };
  }

  createRole(body: RoleCreate): Promise<RoleDoc> {
    return this.serial(async () => {
      if (this.roleDocs.has(body.name)) throw new ClientDbError(409, 'name', `name: role ${body.name} exists`);
      if (this.roleDocs.size >= LIMITS.roles) throw new ClientDbError(409, 'name', `name: the database holds ${LIMITS.roles} roles, its limit`);
      checkRules(body.rules, 'rules');
      const now = new Date().toISOString();
      const doc: RoleDoc = { name: body.name, rules: body.rules, createTime: now, updateTime: now };
      if (body.description !== undefined) doc.description = body.description;
      if (body.rateLimit !== undefined) doc.rateLimit = checkRateLimit(body.rateLimit);
      await this.putRoles([doc]);
      return doc;
    });
  }

  updateRole(name: string, body: RoleUpdate, kick: boolean): Promise<RoleDoc> {
    return this.serial(async () => {
      const old = this.roleOrThrow(name);
      if (body.rules !== undefined) checkRules(body.rules, 'rules');
      const doc: RoleDoc = { ...old, rules: body.rules ?? old.rules, updateTime: new Date().toISOString() };
      setOptional(doc, 'description', body.description);
      setOptional(doc, 'rateLimit', body.rateLimit === undefined || body.rateLimit === null ? body.rateLimit : checkRateLimit(body.rateLimit));
      await this.putRoles([doc]);
      if (kick) await this.kick(this.clientsOfRole(name));
      return doc;
    });
  }

  /** Refused while a client or the anonymous settings name the role (409 naming them). */
  deleteRole(name: string): Promise<void> {
    return this.serial(async () => {
      this.roleOrThrow(name);
      const users = this.clientsOfRole(name);
      if (users.length > 0) throw new ClientDbError(409, 'name', `name: role ${name} is given to ${users.length} client(s) (${users.slice(0, 5).join(', ')}${users.length > 5 ? ', ...' : ''}); take it from them first`);
      if (this.settingsDoc.anonymousRoles?.includes(name) === true) throw new ClientDbError(409, 'name', `name: role ${name} is an anonymous role (settings.anonymousRoles)`);
      await this.store.deleteAdmin(KINDS.role, name);
      this.roleDocs.delete(name);
      await this.send({ removeRoles: [name] });
    });
  }

  // ---- settings

  settings(): SettingsDoc {
    return this.settingsDoc;
  }

  setSettings(settings: SettingsDoc): Promise<SettingsDoc> {
    return this.serial(async () => {
      this.checkRoleRefs((settings.anonymousRoles ?? []).map((name) => ({ name })), 'anonymousRoles');
      await this.store.putAdmin(KINDS.settings, SETTINGS_ID, settings);
      this.settingsDoc = settings;
      await this.send({ settings });
      return settings;
    });
  }

  // ---- import and export

  exportAll(): ClientDbExport {
    return { clients: [...this.clientDocs.values()], roles: this.listRoles(), settings: this.settingsDoc };
  }

  /**
   * Imports a whole database: `replace` makes the database the import (what it does not hold is
   * removed), `merge` puts its clients and roles over those of the same name. Everything is
   * checked first: a refused import changes nothing. Answers the counts.
   */
  importAll(data: ExportBody, mode: 'replace' | 'merge'): Promise<{ clients: number; roles: number; removedClients: number; removedRoles: number }> {
    return this.serial(async () => {
      const now = new Date().toISOString();
      const roles: RoleDoc[] = data.roles.map((r, i) => {
        checkRules(r.rules, `roles[${i}].rules`);
        if (r.rateLimit !== undefined) checkRateLimit(r.rateLimit, `roles[${i}].rateLimit`);
        return { ...r, createTime: r.createTime ?? now, updateTime: r.updateTime ?? now };
      });
      const roleNames = new Set(roles.map((r) => r.name));
      if (roleNames.size !== roles.length) throw new ClientDbError(400, 'roles', 'roles: a role name is listed twice');
      const known = (name: string): boolean => roleNames.has(name) || (mode === 'merge' && this.roleDocs.has(name));
      const clients: ClientDoc[] = data.clients.map((c, i) => {
        checkStoredCredentials(c, `clients[${i}]`);
        if (c.rateLimit !== undefined) checkRateLimit(c.rateLimit, `clients[${i}].rateLimit`);
        if (c.pskKey !== undefined) checkPskKey(c.pskKey, `clients[${i}].pskKey`);
        c.roles.forEach((ref, j) => {
          if (!known(ref.name)) throw new ClientDbError(400, `clients[${i}].roles[${j}].name`, `clients[${i}].roles[${j}].name: role ${ref.name} is not in the import${mode === 'merge' ? ' or the database' : ''}`);
        });
        return { ...c, createTime: c.createTime ?? now, updateTime: c.updateTime ?? now };
      });
      if (new Set(clients.map((c) => c.username)).size !== clients.length) throw new ClientDbError(400, 'clients', 'clients: a username is listed twice');
      const settings = data.settings;
      (settings?.anonymousRoles ?? []).forEach((name, j) => {
        if (!known(name)) throw new ClientDbError(400, `settings.anonymousRoles[${j}]`, `settings.anonymousRoles[${j}]: role ${name} is not in the import`);
      });
      const total = mode === 'replace' ? clients.length : new Set([...this.clientDocs.keys(), ...clients.map((c) => c.username)]).size;
      if (total > LIMITS.clients) throw new ClientDbError(400, 'clients', `clients: the database would hold ${total} clients, over its limit of ${LIMITS.clients}`);

      const usernames = new Set(clients.map((c) => c.username));
      const removeClients = mode === 'replace' ? [...this.clientDocs.keys()].filter((u) => !usernames.has(u)) : [];
      const removeRoles = mode === 'replace' ? [...this.roleDocs.keys()].filter((n) => !roleNames.has(n)) : [];
      for (const u of removeClients) {
        await this.store.deleteAdmin(KINDS.client, u);
        this.clientDocs.delete(u);
      }
      for (const n of removeRoles) {
        await this.store.deleteAdmin(KINDS.role, n);
        this.roleDocs.delete(n);
      }
      for (const r of roles) {
        await this.store.putAdmin(KINDS.role, r.name, r);
        this.roleDocs.set(r.name, r);
      }
      for (const c of clients) {
        await this.store.putAdmin(KINDS.client, c.username, c);
        this.clientDocs.set(c.username, c);
      }
      const newSettings = settings ?? (mode === 'replace' ? DEFAULT_SETTINGS : undefined);
      if (newSettings !== undefined) {
        await this.store.putAdmin(KINDS.settings, SETTINGS_ID, newSettings);
        this.settingsDoc = newSettings;
      }
      await this.send({ clients: clients.map(this.workerClient), roles: roles.map(workerRole), removeClients, removeRoles, settings: newSettings });
      return { clients: clients.length, roles: roles.length, removedClients: removeClients.length, removedRoles: removeRoles.length };
    });
  }

  // ---- kicking

  /** Disconnects the connections of these usernames on every worker of this node, and asks the
   * other nodes to do the same. Answers how many were disconnected here. */
  async kick(usernames: string[]): Promise<number> {
    if (usernames.length === 0) return 0;
    const id = randomUUID();
    const doc: KickDoc = { usernames, at: Date.now() };
    await this.store.putAdmin(KINDS.kick, id, doc);
    const timer = setTimeout(() => {
      this.kickTimers.delete(timer);
      this.store.deleteAdmin(KINDS.kick, id).catch((err: unknown) => this.log.warn('a kick record could not be removed', { id, err }));
    }, KICK_KEEP_MS).unref();
    this.kickTimers.add(timer);
    return this.kickHere(usernames);
  }

  private async kickHere(usernames: string[]): Promise<number> {
    const counts = await this.workers.callAll('clientDb.kick', { usernames });
    return counts.reduce((a, b) => a + b, 0);
  }

  // ---- changes made on another node of the cluster (stored here by the sync once applied)

  async applyClient(username: string, doc: unknown): Promise<void> {
    if (doc === null) {
      this.clientDocs.delete(username);
      await this.send({ removeClients: [username] });
      return;
    }
    const c = doc as ClientDoc;
    if (typeof c !== 'object' || c.username !== username || !Array.isArray(c.roles)) throw new ClientDbError(400, 'username', `client ${username} from another node is not a client`);
    checkStoredCredentials(c, 'client');
    if (c.pskKey !== undefined && pskKeyProblem(c.pskKey) !== undefined) throw new ClientDbError(400, 'username', `client ${username} from another node is not a client`);
    this.clientDocs.set(username, c);
    await this.send({ clients: [this.workerClient(c)] });
  }

  async applyRole(name: string, doc: unknown): Promise<void> {
    if (doc === null) {
      this.roleDocs.delete(name);
      await this.send({ removeRoles: [name] });
      return;
    }
    const r = doc as RoleDoc;
    if (typeof r !== 'object' || r.name !== name || !Array.isArray(r.rules)) throw new ClientDbError(400, 'name', `role ${name} from another node is not a role`);
    checkRules(r.rules, 'rules');
    this.roleDocs.set(name, r);
    await this.send({ roles: [workerRole(r)] });
  }

  async applySettings(_id: string, doc: unknown): Promise<void> {
    this.settingsDoc = doc === null ? DEFAULT_SETTINGS : doc as SettingsDoc;
    await this.send({ settings: this.settingsDoc });
  }

  async applyKick(_id: string, doc: unknown): Promise<void> {
    if (doc === null) return;
    const k = doc as KickDoc;
    if (!Array.isArray(k.usernames) || typeof k.at !== 'number' || Date.now() - k.at > KICK_FRESH_MS) return;
    await this.kickHere(k.usernames);
  }

  close(): void {
    for (const t of this.kickTimers) clearTimeout(t);
    this.kickTimers.clear();
  }

  // ---- inner

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async putClients(docs: ClientDoc[]): Promise<void> {
    for (const doc of docs) {
      await this.store.putAdmin(KINDS.client, doc.username, doc);
      this.clientDocs.set(doc.username, doc);
    }
    await this.send({ clients: docs.map(this.workerClient) });
  }

  private async putRoles(docs: RoleDoc[]): Promise<void> {
    for (const doc of docs) {
      await this.store.putAdmin(KINDS.role, doc.name, doc);
      this.roleDocs.set(doc.name, doc);
    }
    await this.send({ roles: docs.map(workerRole) });
  }

  /** Sends a change to every running worker (a worker that is down gets everything at its start). */
  private async send(delta: ClientDbDelta): Promise<void> {
    await Promise.all(this.workers.running().map((w) => this.workers.call(w, 'clientDb.apply', delta).catch((err: unknown) => {
      this.log.warn('a worker did not take a client database change (it gets everything when it restarts)', { worker: w, err });
    })));
  }

  private fullDelta(): ClientDbDelta {
    return { full: true, clients: [...this.clientDocs.values()].map(this.workerClient), roles: [...this.roleDocs.values()].map(workerRole), settings: this.settingsDoc, scramMockKey: this.scramMockKey };
  }

  private readonly workerClient = (c: ClientDoc): WorkerClient => {
    const w: WorkerClient = { username: c.username, enabled: c.enabled, roles: orderRoles(c.roles) };
    if (c.passwordHash !== undefined) w.passwordHash = c.passwordHash;
    if (c.scram !== undefined) w.scram = c.scram;
    if (c.clientId !== undefined) w.clientId = c.clientId;
    if (c.rateLimit !== undefined) w.rateLimit = c.rateLimit;
    if (c.pskKey !== undefined) w.pskKey = c.pskKey;
    return w;
  };

  private clientOrThrow(username: string): ClientDoc {
    const c = this.clientDocs.get(username);
    if (c === undefined) throw new ClientDbError(404, 'username', `client ${username} not found`);
    return c;
  }

  private roleOrThrow(name: string): RoleDoc {
    const r = this.roleDocs.get(name);
    if (r === undefined) throw new ClientDbError(404, 'name', `role ${name} not found`);
    return r;
  }

  private checkRoleRefs(refs: readonly RoleRef[], field: string): void {
    refs.forEach((ref, i) => {
      if (!this.roleDocs.has(ref.name)) throw new ClientDbError(400, `${field}[${i}]`, `${field}[${i}]: role ${ref.name} not found`);
    });
  }

  private clientsOfRole(name: string): string[] {
    const out: string[] = [];
    for (const c of this.clientDocs.values()) if (c.roles.some((r) => r.name === name)) out.push(c.username);
    return out;
  }
}

/** Role names by priority, highest first; equal priorities keep their listed order. */
export function orderRoles(refs: readonly RoleRef[]): string[] {
  return refs.map((r, i) => ({ r, i })).sort((a, b) => (b.r.priority ?? 0) - (a.r.priority ?? 0) || a.i - b.i).map(({ r }) => r.name);
}

function workerRole(r: RoleDoc): WorkerRole {
  return r.rateLimit === undefined ? { name: r.name, rules: r.rules } : { name: r.name, rules: r.rules, rateLimit: r.rateLimit };
}

/** A rate limit the schema let through, or 400 naming what it cannot say (a burst without its rate). */
function checkRateLimit(l: RateLimit, field = 'rateLimit'): RateLimit {
  const problem = rateLimitProblem(l);
  if (problem !== null) throw new ClientDbError(400, `${field}.${problem.field}`, `${field}.${problem.field}: ${problem.message}`);
  return l;
}

function clientView(c: ClientDoc): ClientView {
  const { passwordHash, scram, pskKey, ...rest } = c;
  return { ...rest, passwordType: hashKind(passwordHash), scramMechanisms: scramMechanisms(scram), hasPskKey: pskKey !== undefined };
}

/** A PSK key the schema let through (hex), or 400 when it is too long once read. */
function checkPskKey(hex: string, field = 'pskKey'): string {
  const problem = pskKeyProblem(hex);
  if (problem !== undefined) throw new ClientDbError(400, field, `${field}: ${problem}`);
  return hex;
}

/** A client's credentials replaced: a field left out is removed. */
function setCredentials(doc: ClientDoc, c: Credentials): void {
  if (c.passwordHash === undefined) delete doc.passwordHash;
  else doc.passwordHash = c.passwordHash;
  if (c.scram === undefined) delete doc.scram;
  else doc.scram = c.scram;
}

/** Refuses a rule whose topic is not an ACL pattern, or `literal` on another action. */
export function checkRules(rules: readonly RoleRule[], field: string): void {
  rules.forEach((r, i) => {
    const problem = aclPatternProblem(r.topic);
    if (problem !== undefined) throw new ClientDbError(400, `${field}[${i}].topic`, `${field}[${i}].topic: ${problem}`);
    if (r.literal !== undefined && r.action !== 'subscribe-filter') throw new ClientDbError(400, `${field}[${i}].literal`, `${field}[${i}].literal: only a subscribe-filter rule may be literal`);
  });
}

function setOptional<T extends object, K extends keyof T>(doc: T, key: K, value: T[K] | null | undefined): void {
  if (value === undefined) return;
  if (value === null) delete doc[key];
  else doc[key] = value;
}
