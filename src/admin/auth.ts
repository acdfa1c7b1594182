// Admin users and their credentials: users with roles (admin, viewer) kept in the store, HTTP
// Basic, and HS256 JWTs issued by /public/login. The signing secret is generated at first start
// and kept in the store, so tokens survive a restart. Owned by the main thread.
import { createHmac, randomBytes, timingSafeEqual, createHash } from 'node:crypto';

import { hashPassword, verifyPassword } from '../auth/password.ts';
import type { Store } from '../store/types.ts';
import type { Logger } from '../log/index.ts';
import { HttpError, type AdminUser, type Role } from './http.ts';

export const ROLES: readonly Role[] = ['admin', 'viewer'];
const USER_KIND = 'admin-user';
const SECRET_KIND = 'admin-secret';
/** Basic credentials verified recently (argon2 costs ~50 ms; a dashboard polls every second). */
const BASIC_CACHE_MS = 60_000;
const BASIC_CACHE_MAX = 1024;

export interface StoredAdminUser {
  username: string;
  passwordHash: string;
  role: Role;
  createTime: string;
}

export interface AdminAuthOptions {
  username: string;
  password: string;
  tokenLifetime: number;
}

export class AdminAuth {
  private secret: Buffer = Buffer.alloc(0);
  private readonly users = new Map<string, StoredAdminUser>();
  private readonly basicCache = new Map<string, { username: string; until: number }>();

  constructor(private readonly store: Store, private readonly options: AdminAuthOptions, private readonly log: Logger) {}

  /** Loads users and the signing secret; creates both at first start. */
  async init(): Promise<void> {
    const secret = await this.store.getAdmin<{ key: string }>(SECRET_KIND, 'jwt');
    if (secret) this.secret = Buffer.from(secret.key, 'base64url');
    else {
      this.secret = randomBytes(32);
      await this.store.putAdmin(SECRET_KIND, 'jwt', { key: this.secret.toString('base64url') });
    }
    for (const { doc } of await this.store.listAdmin<StoredAdminUser>(USER_KIND)) this.users.set(doc.username, doc);
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

  list(): { username: string; role: Role; createTime: string }[] {
    return [...this.users.values()].map(({ username, role, createTime }) => ({ username, role, createTime }));
  }

  has(username: string): boolean {
    return this.users.has(username);
  }

  async addUser(username: string, password: string, role: Role): Promise<void> {
    const user: StoredAdminUser = { username, passwordHash: await hashPassword(password), role, createTime: new Date().toISOString() };
    await this.store.putAdmin(USER_KIND, username, user);
    this.users.set(username, user);
    this.forgetBasic(username);
  }

  async setPassword(username: string, password: string): Promise<void> {
    const user = this.users.get(username);
    if (!user) throw new HttpError(404, `user ${username} not found`);
    const next = { ...user, passwordHash: await hashPassword(password) };
    await this.store.putAdmin(USER_KIND, username, next);
    this.users.set(username, next);
    this.forgetBasic(username);
  }

  async deleteUser(username: string): Promise<boolean> {
    if (!this.users.has(username)) return false;
    await this.store.deleteAdmin(USER_KIND, username);
    this.users.delete(username);
    this.forgetBasic(username);
    return true;
  }

  /** The user when the password is right, null otherwise. */
  async check(username: string, password: string): Promise<AdminUser | null> {
    const user = this.users.get(username);
    if (!user) {
      // Same work as a real check, so timing does not tell which usernames exist.
      await verifyPassword(DUMMY_HASH, password).catch(() => false);
      return null;
    }
    return (await verifyPassword(user.passwordHash, password)) ? { username: user.username, role: user.role } : null;
  }

  /** A signed token for `user`, valid for the configured lifetime. */
  issue(user: AdminUser, now = Date.now()): { token: string; expires: string; expiresIn: number } {
    const iat = Math.floor(now / 1000);
    const exp = iat + this.options.tokenLifetime;
    const token = signJwt({ sub: user.username, role: user.role, iat, exp }, this.secret);
    return { token, expires: new Date(exp * 1000).toISOString(), expiresIn: this.options.tokenLifetime };
  }

  /**
   * The user an Authorization header stands for; null when there is none or it is wrong.
   * A token of a deleted user, or one signed before a restart with a lost secret, is refused.
   */
  async authenticate(header: string | undefined, now = Date.now()): Promise<AdminUser | null> {
    if (!header) return null;
    const space = header.indexOf(' ');
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === 'bearer') {
      const claims = verifyJwt(value, this.secret, now);
      if (!claims || typeof claims.sub !== 'string') return null;
      const user = this.users.get(claims.sub);
      return user ? { username: user.username, role: user.role } : null;
    }
    if (scheme === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return null;
      const username = decoded.slice(0, colon);
      const key = createHash('sha256').update(decoded).digest('base64');
      const cached = this.basicCache.get(key);
      if (cached && cached.until > now && this.users.has(cached.username)) {
        const u = this.users.get(cached.username)!;
        return { username: u.username, role: u.role };
      }
      const user = await this.check(username, decoded.slice(colon + 1));
      if (user) {
        if (this.basicCache.size >= BASIC_CACHE_MAX) this.basicCache.delete(this.basicCache.keys().next().value!);
        this.basicCache.set(key, { username, until: now + BASIC_CACHE_MS });
      }
      return user;
    }
    return null;
  }

  private forgetBasic(username: string): void {
    for (const [k, v] of this.basicCache) if (v.username === username) this.basicCache.delete(k);
  }
}

// argon2 hash of a random password, for constant-time refusal of unknown users.
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$AsqZAD3RLictPo1WHDVPfA$H9zVLoXTRyZM0gbGrbUwx91Eyhn/aayt+XcbOEp8nUU';

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

const JWT_HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

export function signJwt(claims: Record<string, unknown>, secret: Buffer): string {
  const body = `${JWT_HEADER}.${b64url(JSON.stringify(claims))}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

/** The claims of a valid, unexpired HS256 token; null otherwise. */
export function verifyJwt(token: string, secret: Buffer, now = Date.now()): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  let header: { alg?: unknown };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: unknown };
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  // Only HS256: "none" and asymmetric algorithms are refused, whatever the header says.
  if (header.alg !== 'HS256') return null;
  const expected = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(parts[2], 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null;
  return claims;
}
