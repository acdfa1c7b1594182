// Owns what an `ldap` policy asks its directory (main thread), over its pool (ldap-pool.ts): the
// DN of a user (mode bind: the template filled; mode search: the one entry the filter finds), the
// bind as that user, the attributes of their entry, and their groups (a group search, or an
// attribute of the entry such as memberOf). Each operation is counted by kind and outcome
// (ldap-stats.ts). Values from the client are escaped by the templates (ldap-template.ts).
import type { Client, Entry } from 'ldapts';

import type { LdapConfig, LdapSearchSpec } from './ldap-config.ts';
import { LdapPool, loadLdapts, resultCodeOf, type Lease } from './ldap-pool.ts';
import type { LdapOp, LdapStats } from './ldap-stats.ts';
import { LdapTemplate } from './ldap-template.ts';

/** Bind result codes that mean "these credentials are wrong" (RFC 4511 appendix A): invalid
 * credentials, inappropriate authentication (an entry without a password), invalid DN syntax. */
const REFUSED_BIND = new Set([49, 48, 34]);
/** noSuchObject: the entry (or the base) is not there. */
const NO_SUCH_OBJECT = 32;
/** A user search that finds more than this is ambiguous anyway: the directory stops there. */
const USER_SIZE_LIMIT = 2;
/** Groups read for one user at most (a group search stops there; more is a failure). */
export const MAX_GROUPS = 1000;

/** Who asks: the client's username and client id. */
export interface Who {
  username: string;
  clientid: string;
}

/** A user's entry: its DN and the attributes asked for (names lower-case, values as text). */
export interface UserEntry {
  dn: string;
  attributes: Map<string, string[]>;
}

export type Found = { entry: UserEntry } | { none: true } | { many: number };

export class LdapDirectory {
  private readonly userDn: LdapTemplate | undefined;
  private readonly userFilter: LdapTemplate | undefined;
  private readonly groupFilter: LdapTemplate | undefined;
  /** What is read of a user's entry: the superuser attribute and the groups' attribute. */
  readonly entryAttributes: string[];

  constructor(
    readonly config: LdapConfig,
    readonly pool: LdapPool,
    private readonly stats: LdapStats,
  ) {
    this.userDn = config.userDn === undefined ? undefined : LdapTemplate.parse(config.userDn, 'dn', ['username', 'clientid'], 'config.userDn');
    this.userFilter = config.user === undefined ? undefined : LdapTemplate.parse(config.user.filter, 'filter', ['username', 'clientid'], 'config.filter');
    this.groupFilter = config.groups?.kind === 'search' ? LdapTemplate.parse(config.groups.filter, 'filter', ['username', 'clientid', 'dn'], 'config.groups.filter') : undefined;
    const attributes: string[] = [];
    if (config.superuserAttribute !== undefined) attributes.push(config.superuserAttribute);
    if (config.groups?.kind === 'attribute') attributes.push(config.groups.attribute);
    this.entryAttributes = attributes;
  }

  /** Whether a template reads the client id (answers then depend on it). */
  get readsClientid(): boolean {
    return [this.userDn, this.userFilter, this.groupFilter].some((t) => t?.params.has('clientid') === true);
  }

  /** mode bind: the user's DN, the username escaped per RFC 4514. */
  dnOf(who: Who): string {
    return this.userDn!.fill(who);
  }

  /** mode search: the entry the filter finds under the base (searched as the service account). */
  findUser(who: Who): Promise<Found> {
    const spec = this.config.user!;
    return this.pool.use('search', (lease) => this.searchUser(lease.client, spec, who));
  }

  /**
   * Binds as `dn` with `password` on a connection of the pool: false when the directory refuses
   * the credentials. With `then`, runs it on the same connection bound as the user (to read what
   * the user may read, when there is no service account).
   */
  async bindAs<T>(dn: string, password: string, then?: (client: Client) => Promise<T>): Promise<{ ok: false } | { ok: true; value: T | undefined }> {
    // Never an unauthenticated bind (RFC 4513 5.1.2): a DN with an empty password "succeeds"
    // as anonymous. The policies refuse empty passwords before; this is the last guard.
    if (password === '') return { ok: false };
    // ldapts takes a bind "DN" that is the name of a SASL mechanism (PLAIN, EXTERNAL...) for a
    // SASL bind of that mechanism: never a user's simple bind (a username alone filling a
    // template of `${username}` could otherwise choose one).
    if ((await loadLdapts()).SASL_MECHANISMS.includes(dn as never)) {
      this.stats.count('user-bind', 'refused');
      return { ok: false };
    }
    return this.pool.use('bind', async (lease: Lease) => {
      try {
        await lease.client.bind(dn, password);
      } catch (err) {
        lease.as = 'anonymous';
        const code = resultCodeOf(err);
        if (code !== undefined && REFUSED_BIND.has(code)) {
          this.stats.count('user-bind', 'refused');
          return { ok: false };
        }
        this.stats.count('user-bind', 'error');
        throw err;
      }
      lease.as = 'user';
      this.stats.count('user-bind', 'ok');
      return { ok: true, value: then === undefined ? undefined : await then(lease.client) };
    });
  }

  /** The entry at `dn` with entryAttributes, or undefined when there is none (or it cannot be
   * seen): on `client` (bound as the user), else as the service account. */
  readEntry(dn: string, client?: Client): Promise<UserEntry | undefined> {
    const read = (c: Client) => this.counted('entry-read', async () => {
      try {
        const { searchEntries } = await c.search(dn, { scope: 'base', filter: '(objectClass=*)', attributes: this.requested(), sizeLimit: 1 });
        return searchEntries.length === 0 ? undefined : entryOf(searchEntries[0]);
      } catch (err) {
        if (resultCodeOf(err) === NO_SUCH_OBJECT) return undefined;
        throw err;
      }
    });
    return client === undefined ? this.pool.use('search', (lease) => read(lease.client)) : read(client);
  }

  /** The DNs of the groups of the user at `entry` (memberOf-like attribute, or the group search
   * as the service account or on `client`). Throws past MAX_GROUPS. */
  async groupsOf(entry: UserEntry, who: Who, client?: Client): Promise<string[]> {
    const groups = this.config.groups;
    if (groups === null) return [];
    if (groups.kind === 'attribute') {
      const values = entry.attributes.get(groups.attribute.toLowerCase()) ?? [];
      if (values.length > MAX_GROUPS) throw new Error(`the user is in more than ${MAX_GROUPS} groups`);
      return values;
    }
    const search = (c: Client) => this.counted('group-search', async () => {
      const filter = this.groupFilter!.fill({ ...who, dn: entry.dn });
      const { searchEntries } = await c.search(groups.base, { scope: groups.scope, filter, attributes: ['1.1'], sizeLimit: MAX_GROUPS + 1 });
      if (searchEntries.length > MAX_GROUPS) throw new Error(`the user is in more than ${MAX_GROUPS} groups`);
      return searchEntries.map((e) => e.dn);
    });
    return client === undefined ? this.pool.use('search', (lease) => search(lease.client)) : search(client);
  }

  /** The dry run's checks of the searches: each base exists and each filter is one the
   * directory takes, asked for a username no entry has (throws naming nothing: the caller names
   * the field). */
  async checkSearch(client: Client, spec: LdapSearchSpec, filter: string): Promise<void> {
    await client.search(spec.base, { scope: spec.scope, filter, attributes: ['1.1'], sizeLimit: 1 });
  }

  private async searchUser(client: Client, spec: LdapSearchSpec, who: Who): Promise<Found> {
    return this.counted('user-search', async () => {
      const filter = this.userFilter!.fill(who);
      let entries: Entry[];
      try {
        ({ searchEntries: entries } = await client.search(spec.base, { scope: spec.scope, filter, attributes: this.requested(), sizeLimit: USER_SIZE_LIMIT }));
      } catch (err) {
        // sizeLimitExceeded (4): more entries than asked for.
        if (resultCodeOf(err) === 4) return { many: USER_SIZE_LIMIT };
        throw err;
      }
      if (entries.length === 0) return { none: true };
      if (entries.length > 1) return { many: entries.length };
      return { entry: entryOf(entries[0]) };
    });
  }

  private requested(): string[] {
    return this.entryAttributes.length === 0 ? ['1.1'] : this.entryAttributes;
  }

  private async counted<T>(op: LdapOp, fn: () => Promise<T>): Promise<T> {
    try {
      const v = await fn();
      this.stats.count(op, 'ok');
      return v;
    } catch (err) {
      this.stats.count(op, 'error');
      throw err;
    }
  }
}

/** An entry as ldapts gives it, with attribute names lower-case and values as text. */
export function entryOf(e: Entry): UserEntry {
  const attributes = new Map<string, string[]>();
  for (const [name, value] of Object.entries(e)) {
    if (name === 'dn') continue;
    const list = Array.isArray(value) ? value : [value];
    attributes.set(name.toLowerCase(), list.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v))));
  }
  return { dn: e.dn, attributes };
}

/** An entry known by its DN alone (mode bind without attributes to read). */
export function entryAt(dn: string): UserEntry {
  return { dn, attributes: new Map() };
}
