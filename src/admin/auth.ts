// Admin users and their credentials: users with roles (admin, viewer) kept in the store, HTTP
// Basic, and the tokens /public/login issues (tokens.ts). Each user record has an immutable
// random id and a credential version: a token names both, so it dies with a password or role
// change, with the user's deletion, and is never taken for a user re-created under the same name.
// Failed sign-ins go through the LoginLimiter (429 while locked out). The signing secret is
// generated at first start and kept in the store, so tokens survive a restart. Owned by the main
// thread.
import { randomBytes, randomUUID, createHash } from 'node:crypto';

import { DomainError } from '../errors/domain-error.ts';
import { hashPassword, verifyPassword } from '../auth/password.ts';
import type { Store } from '../store/types.ts';
import type { Logger } from '../log/index.ts';
import { HttpError, type AdminUser, type AnyRole, type Role } from './http.ts';
import { signToken, verifyToken } from './tokens.ts';
import { LoginLimiter, type LoginLimits, type Lockout } from './login-limiter.ts';
import type { AuthMetrics, SignInMethod } from './auth-metrics.ts';

export const ROLES: readonly Role[] = ['admin', 'viewer'];
const USER_KIND = 'admin-user';
const SECRET_KIND = 'admin-secret';
/** Basic credentials verified recently (argon2 costs ~50 ms; a dashboard polls every second). */
const BASIC_CACHE_MS = 60_000;
const BASIC_CACHE_MAX = 1024;

export interface StoredAdminUser {
  /** Random, never changed or reused: the `sub` of the user's tokens. */
  id: string;
  username: string;
  passwordHash: string;
  role: AnyRole;
  /** A tenant user's organization and project (control platform); absent for the broker's users. */
  organizationId?: string | null;
  projectId?: string | null;
  email?: string;
  /** Credential version, the `ver` of the user's tokens: raised by a password or role change. */
  tokenVersion: number;
  createTime: string;
}

export interface AdminAuthOptions {
  username: string;
  password: string;
  tokenLifetime: number;
  limits: LoginLimits;
}

export class AdminAuth {
  private secret: Uint8Array = new Uint8Array(0);
  private readonly users = new Map<string, StoredAdminUser>();
  private readonly basicCache = new Map<string, { username: string; until: number }>();
  private readonly limiter: LoginLimiter;

  constructor(private readonly store: Store, private readonly options: AdminAuthOptions, private readonly log: Logger, private readonly metrics: AuthMetrics) {
    this.limiter = new LoginLimiter(options.limits, () => metrics.eviction());
  }

  /** Loads users and the signing secret; creates both at first start. */
  async init(): Promise<void> {
    const secret = await this.store.getAdmin<{ key: string }>(SECRET_KIND, 'jwt');
    if (secret) this.secret = Buffer.from(secret.key, 'base64url');
    else {
      this.secret = randomBytes(32);
      await this.store.putAdmin(SECRET_KIND, 'jwt', { key: Buffer.from(this.secret).toString('base64url') });
    }
    for (const { doc } of await this.store.listAdmin<Partial<StoredAdminUser> & Omit<StoredAdminUser, 'id' | 'tokenVersion'>>(USER_KIND)) {
      if (typeof doc.id === 'string' && typeof doc.tokenVersion === 'number') {
        this.users.set(doc.username, doc as StoredAdminUser);
        continue;
      }
      // A user stored before records had ids: given one now, and kept.
      const user: StoredAdminUser = { ...doc, id: doc.id ?? randomUUID(), tokenVersion: doc.tokenVersion ?? 1 };
      await this.store.putAdmin(USER_KIND, user.username, user);
      this.users.set(user.username, user);
      this.log.info('admin user given an id', { username: user.username });
    }
    if (this.users.size === 0) {
      const generated = this.options.password === '';
      const password = generated ? randomBytes(12).toString('base64url') : this.options.password;
      await this.addUser(this.options.username, password, 'admin');
      if (generated) {
        // Printed once: the hash is all that is kept.
        process.stdout.write(`\nspindle: created admin user "${this.options.username}" with password ${password}\n` +
          'spindle: it is not shown again; set admin.password (SPINDLE_ADMIN_PASSWORD) before the first start to choose it\n\n');
      }
      this.log.info('admin user created', { username: this.options.username, generatedPassword: generated });
    }
  }

  list(): { username: string; role: AnyRole; createTime: string }[] {
    return [...this.users.values()].map(({ username, role, createTime }) => ({ username, role, createTime }));
  }

  /** Every user record (with its hash: callers answer a view without it). */
  records(): StoredAdminUser[] {
    return [...this.users.values()];
  }

  recordById(id: string): StoredAdminUser | undefined {
    return this.byId(id);
  }

  record(username: string): StoredAdminUser | undefined {
    return this.users.get(username);
  }

  /** Changes a user's profile (email, organization, project) and, when given, role or password
   * (either ends the user's tokens). */
  async updateUser(username: string, changes: { email?: string; organizationId?: string | null; projectId?: string | null; role?: AnyRole; password?: string }): Promise<StoredAdminUser> {
    const passwordHash = changes.password === undefined ? undefined : await hashPassword(changes.password);
    const user = this.users.get(username);
    if (!user) throw new DomainError('NOT_FOUND', `user ${username} not found`);
    const credentials = passwordHash !== undefined || (changes.role !== undefined && changes.role !== user.role);
    const next: StoredAdminUser = {
      ...user,
      ...(changes.email !== undefined ? { email: changes.email } : {}),
      ...(changes.organizationId !== undefined ? { organizationId: changes.organizationId } : {}),
      ...(changes.projectId !== undefined ? { projectId: changes.projectId } : {}),
      ...(changes.role !== undefined ? { role: changes.role } : {}),
      ...(passwordHash !== undefined ? { passwordHash } : {}),
      tokenVersion: credentials ? user.tokenVersion + 1 : user.tokenVersion,
    };
    await this.store.putAdmin(USER_KIND, username, next);
    this.users.set(username, next);
    if (credentials) this.forgetBasic(username);
    return next;
  }

  has(username: string): boolean {
    return this.users.has(username);
  }

  async addUser(username: string, password: string, role: AnyRole, profile: { email?: string; organizationId?: string | null; projectId?: string | null } = {}): Promise<StoredAdminUser> {
    const user: StoredAdminUser = { id: randomUUID(), username, passwordHash: await hashPassword(password), role, ...profile, tokenVersion: 1, createTime: new Date().toISOString() };
    await this.store.putAdmin(USER_KIND, username, user);
    this.users.set(username, user);
    this.forgetBasic(username);
    return user;
  }

  /** A new password: the user's tokens issued before are refused from now on. */
  async setPassword(username: string, password: string): Promise<void> {
    const passwordHash = await hashPassword(password);
    await this.change(username, (user) => ({ ...user, passwordHash }));
  }

  /** A new role: the user's tokens issued before are refused from now on. */
  async setRole(username: string, role: Role): Promise<void> {
    await this.change(username, (user) => ({ ...user, role }));
  }

  /** A user changed on another node of the cluster, stored here once applied (null: deleted);
   * the user's cached Basic sign-ins are forgotten. */
  applyStored(username: string, doc: StoredAdminUser | null): void {
    this.forgetBasic(username);
    if (doc === null) {
      this.users.delete(username);
      return;
    }
    if (typeof doc !== 'object' || doc.username !== username || typeof doc.passwordHash !== 'string' || typeof doc.tokenVersion !== 'number') throw new DomainError('INVALID_PARAMETER', `user ${username} from another node is not a user record`);
    this.users.set(username, doc);
  }

  /** The user the configuration file names (its password is per node: never replicated). */
  get configUsername(): string {
    return this.options.username;
  }

  async deleteUser(username: string): Promise<boolean> {
    if (!this.users.has(username)) return false;
    await this.store.deleteAdmin(USER_KIND, username);
    this.users.delete(username);
    this.forgetBasic(username);
    return true;
  }

  /**
   * /public/login: the user when the password is right, null when it is not (counted against the
   * address and the username); 429 while either is locked out, without checking the password.
   */
  async login(username: string, password: string, address: string): Promise<AdminUser | null> {
    return this.limited('login', address, username, () => this.check(username, password));
  }

  /** A signed token for `user`, valid for the configured lifetime. */
  async issue(user: AdminUser, now = Date.now()): Promise<{ token: string; expires: string; expiresIn: number }> {
    const stored = this.users.get(user.username);
    if (!stored) throw new DomainError('NOT_FOUND', `user ${user.username} not found`);
    const iat = Math.floor(now / 1000);
    const exp = iat + this.options.tokenLifetime;
    const token = await signToken({ sub: stored.id, ver: stored.tokenVersion, iat, exp }, this.secret);
    return { token, expires: new Date(exp * 1000).toISOString(), expiresIn: this.options.tokenLifetime };
  }

  /**
   * The user an Authorization header stands for; null when there is none or it is wrong. A token
   * is refused when its user record is gone or its credential version is not the record's. Wrong
   * Basic credentials count as a failed sign-in; 429 while the address or username is locked out.
   */
  async authenticate(header: string | undefined, address: string, now = Date.now()): Promise<AdminUser | null> {
    if (!header) return null;
    const space = header.indexOf(' ');
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === 'bearer') {
      const claims = await verifyToken(value, this.secret, now);
      if (!claims) return null;
      const user = this.byId(claims.sub);
      return user && user.tokenVersion === claims.ver ? userOf(user) : null;
    }
    if (scheme === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return null;
      const username = decoded.slice(0, colon);
      const key = createHash('sha256').update(decoded).digest('base64');
      const cached = this.basicCache.get(key);
      if (cached && cached.until > now && this.users.has(cached.username)) {
        // Credentials verified within BASIC_CACHE_MS are not a guess: no lockout applies to them.
        return userOf(this.users.get(cached.username)!);
      }
      const user = await this.limited('basic', address, username, () => this.check(username, decoded.slice(colon + 1)));
      if (user) {
        if (this.basicCache.size >= BASIC_CACHE_MAX) this.basicCache.delete(this.basicCache.keys().next().value!);
        this.basicCache.set(key, { username, until: now + BASIC_CACHE_MS });
      }
      return user;
    }
    return null;
  }

  /** The user when the password is right, null otherwise. */
  private async check(username: string, password: string): Promise<AdminUser | null> {
    const user = this.users.get(username);
    if (!user) {
      // Same work as a real check, so timing does not tell which usernames exist.
      await verifyPassword(DUMMY_HASH, password).catch(() => false);
      return null;
    }
    return (await verifyPassword(user.passwordHash, password)) ? userOf(user) : null;
  }

  private async change(username: string, next: (user: StoredAdminUser) => StoredAdminUser): Promise<void> {
    const user = this.users.get(username);
    if (!user) throw new DomainError('NOT_FOUND', `user ${username} not found`);
    const changed: StoredAdminUser = { ...next(user), id: user.id, tokenVersion: user.tokenVersion + 1 };
    await this.store.putAdmin(USER_KIND, username, changed);
    this.users.set(username, changed);
    this.forgetBasic(username);
  }

  private byId(id: string): StoredAdminUser | undefined {
    for (const user of this.users.values()) if (user.id === id) return user;
    return undefined;
  }

  /** Runs a password check through the limiter: 429 while locked out, a failure counted. */
  private async limited(method: SignInMethod, address: string, username: string, check: () => Promise<AdminUser | null>): Promise<AdminUser | null> {
    const lock = this.limiter.begin(address, username);
    if (lock) {
      const seconds = Math.max(1, Math.ceil((lock.until - Date.now()) / 1000));
      throw new HttpError('TOO_MANY_REQUESTS', `too many failed sign-ins for this ${lock.kind}; retry after ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
    }
    let user: AdminUser | null = null;
    try {
      user = await check();
    } finally {
      // A check that threw (the hash library failing) ends the attempt as a failure.
      const started = this.limiter.end(address, username, user !== null);
      if (!user) this.failed(method, address, username, started);
    }
    return user;
  }

  private failed(method: SignInMethod, address: string, username: string, started: Lockout[]): void {
    this.metrics.failure(method);
    for (const lock of started) {
      this.metrics.lockout(lock.kind);
      this.log.warn('admin sign-in locked out', {
        address, username, lockedBy: lock.kind, method,
        failures: this.options.limits.maxFailures, lockoutSeconds: this.options.limits.lockoutMs / 1000,
      });
    }
  }

  private forgetBasic(username: string): void {
    for (const [k, v] of this.basicCache) if (v.username === username) this.basicCache.delete(k);
  }
}

function userOf(u: StoredAdminUser): AdminUser {
  return { username: u.username, role: u.role, id: u.id, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null };
}

// argon2 hash of a random password, for constant-time refusal of unknown users.
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$AsqZAD3RLictPo1WHDVPfA$H9zVLoXTRyZM0gbGrbUwx91Eyhn/aayt+XcbOEp8nUU';
