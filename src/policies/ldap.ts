// Owns the `ldap` policy type (auth and ACL, main thread), as EMQX's and mosquitto-go-auth's LDAP
// backends: the directory is asked over the policy's own bounded pool (ldap-pool.ts) with ldapts,
// never on a worker, never blocking the event loop.
//   auth, mode bind: bind as the DN template filled with the username (RFC 4514-escaped);
//   auth, mode search: search the base with the filter (RFC 4515-escaped values) as the service
//     account, exactly one entry -> bind as its DN; no entry -> ignore (another policy may know
//     the user); several -> ignore with error.
//   The bind refused (invalid credentials) -> deny; an empty password -> deny, never sent (an
//   LDAP bind with an empty password is an unauthenticated bind, which succeeds as anonymous).
//   An allow may be a superuser: an attribute of the entry (TRUE, true, 1), or membership of a
//   configured group.
//   acl: the user's groups (a group search with the user's DN, or an attribute such as memberOf)
//     give ordered rules (ldap-group-rules.ts), cached per user (ldap-group-cache.ts); the answer
//     of a SUBSCRIBE carries the rules it met that only overlap the filter (auth/acl-scope.ts).
// Every failure (unreachable, timeout, TLS, a refused service account) is an ignore with error,
// written at warn at most once per 10 s per policy with a count; nothing here throws to the caller
// and nothing allows on a failure.
import type { Client } from 'ldapts';

import { ScopeWalk } from '../auth/acl-scope.ts';
import { caOf, readLdapPolicyConfig, type LdapConfig, type LdapSearchSpec } from './ldap-config.ts';
import { entryAt, LdapDirectory, type UserEntry, type Who } from './ldap-directory.ts';
import { GroupCache } from './ldap-group-cache.ts';
import { decideRules, GroupRules, GroupSet, type CompiledRule } from './ldap-group-rules.ts';
import { errorText, LdapPool, loadLdapts, resultCodeOf, ServiceBindError } from './ldap-pool.ts';
import { LdapStats } from './ldap-stats.ts';
import { LdapTemplate } from './ldap-template.ts';
import { DRY_RUN_USERNAME } from './params.ts';
import { RateLimitedWarn } from './rate-limited-warn.ts';
import { superuserOf } from './superuser-flag.ts';
import {
  PolicyConfigError,
  type AclAnswer,
  type AclQuery,
  type AuthAnswer,
  type AuthQuery,
  type CompiledAclPolicy,
  type CompiledAuthPolicy,
  type PolicyContext,
  type PolicyKind,
  type PolicyParam,
  type PolicyRecord,
} from './types.ts';

export { parseLdapPolicyConfig } from './ldap-config.ts';

/** TLS errors of a certificate the directory showed (the dry run names config.tls for them). */
const CERTIFICATE_ERRORS = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS_CERT_ALTNAME_INVALID/;
/** What an ACL answer depends on: the topic and action asked, and the username and client id
 * (the rules' %u and %c, and the templates). */
const ACL_PARAMS: readonly PolicyParam[] = ['username', 'clientid', 'topic', 'action'];

type Failure = { result: 'ignore'; reason: string; error: true };

/** What the metrics read of a running LDAP policy (ldap-metrics.ts). */
export interface LdapRuntime {
  readonly stats: LdapStats;
  poolCounts(): { idle: number; busy: number; opening: number; waiting: number };
  /** Users whose groups are kept (ACL), 0 for an auth policy. */
  cachedUsers(): number;
}

/** A compiled policy of type ldap (auth or ACL), with what its metrics read. */
export interface LdapPolicyHandle {
  readonly type: 'ldap';
  readonly ldap: LdapRuntime;
}

export function compileLdapAuthPolicy(record: PolicyRecord<'ldap'>, ctx: PolicyContext): CompiledAuthPolicy & LdapPolicyHandle {
  return new LdapAuthPolicy(record, new LdapCore(record, ctx, 'auth'));
}

export function compileLdapAclPolicy(record: PolicyRecord<'ldap'>, ctx: PolicyContext): CompiledAclPolicy & LdapPolicyHandle {
  return new LdapAclPolicy(record, new LdapCore(record, ctx, 'acl'));
}

/** What the auth and the ACL policy share: the config, the pool, the directory, the warnings. */
class LdapCore {
  readonly config: LdapConfig;
  readonly stats = new LdapStats();
  readonly pool: LdapPool;
  readonly directory: LdapDirectory;
  private readonly warning: RateLimitedWarn;

  constructor(record: PolicyRecord<'ldap'>, ctx: PolicyContext, kind: PolicyKind) {
    this.config = readLdapPolicyConfig(record.config, kind);
    const c = this.config;
    const ca = caOf(c.tls);
    const tls = c.tls === null ? null : { rejectUnauthorized: c.tls.rejectUnauthorized, ...(ca === undefined ? {} : { ca }) };
    this.pool = new LdapPool({ urls: c.urls, startTls: c.startTls, tls, connectTimeout: c.connectTimeout, timeout: c.timeout, size: c.poolSize, service: c.service, stats: this.stats });
    this.directory = new LdapDirectory(c, this.pool, this.stats);
    this.warning = new RateLimitedWarn(ctx.log.child({ policy: record.name, policyId: record.id, type: 'ldap', kind }));
  }

  /** The user's entry as far as it is known without binding: mode bind, its DN; mode search,
   * the one entry found (or why there is none to bind as). */
  async locate(who: Who): Promise<UserEntry | { none: true } | { many: number }> {
    if (this.config.mode === 'bind') return entryAt(this.directory.dnOf(who));
    const found = await this.directory.findUser(who);
    return 'entry' in found ? found.entry : found;
  }

  failed(reason: string): Failure {
    this.warning.warn('ldap policy: the directory gave no usable answer (the client was ignored)', { reason });
    return { result: 'ignore', reason: `ldap: ${reason}`, error: true };
  }

  /** Connects (with StartTLS), binds as the service account, and runs each search once with a
   * username no entry has: each mistake is a PolicyConfigError naming its field. */
  async dryRun(): Promise<void> {
    const { FilterParser } = await loadLdapts();
    const c = this.config;
    const sample: Who = { username: DRY_RUN_USERNAME, clientid: 'dry-run' };
    const checks: { spec: LdapSearchSpec; filter: string; field: string }[] = [];
    if (c.user !== undefined) checks.push({ spec: c.user, filter: LdapTemplate.parse(c.user.filter, 'filter', ['username', 'clientid'], 'config.filter').fill(sample), field: 'config' });
    if (c.groups?.kind === 'search') {
      const filter = LdapTemplate.parse(c.groups.filter, 'filter', ['username', 'clientid', 'dn'], 'config.groups.filter').fill({ ...sample, dn: `uid=${DRY_RUN_USERNAME}` });
      checks.push({ spec: c.groups, filter, field: 'config.groups' });
    }
    for (const check of checks) {
      try {
        FilterParser.parseString(check.filter);
      } catch (err) {
        throw new PolicyConfigError(`${check.field}.filter`, `is not a valid LDAP filter: ${errorText(err)}`);
      }
    }
    try {
      await this.pool.probe(async (client) => {
        if (c.service !== null) await this.checkServiceBind(client, c.service);
        for (const check of checks) await this.checkSearch(client, check.spec, check.filter, check.field);
      });
    } catch (err) {
      if (err instanceof PolicyConfigError) throw err;
      const code = (err as Error).cause instanceof Error ? String(((err as Error).cause as { code?: unknown }).code ?? '') : '';
      if (CERTIFICATE_ERRORS.test(code)) throw new PolicyConfigError('config.tls', `the directory's certificate is not trusted: ${errorText(err)}`);
      throw new PolicyConfigError('config.urls', `cannot reach the directory: ${errorText(err)}`);
    }
  }

  private async checkServiceBind(client: Client, service: { dn: string; password: string }): Promise<void> {
    try {
      await client.bind(service.dn, service.password);
    } catch (err) {
      if (resultCodeOf(err) === undefined) throw err;
      throw new PolicyConfigError('config.service', `the directory refused the service account's bind: ${errorText(err)}`);
    }
  }

  private async checkSearch(client: Client, spec: LdapSearchSpec, filter: string, field: string): Promise<void> {
    try {
      await this.directory.checkSearch(client, spec, filter);
    } catch (err) {
      const code = resultCodeOf(err);
      if (code === undefined) throw err;
      if (code === 32) throw new PolicyConfigError(`${field}.base`, `no such entry in the directory (or it cannot be seen by ${this.config.service === null ? 'an anonymous search' : 'the service account'})`);
      throw new PolicyConfigError(`${field}.filter`, `the directory refused the search: ${errorText(err)}`);
    }
  }

  runtime(cachedUsers: () => number): LdapRuntime {
    return { stats: this.stats, poolCounts: () => this.pool.counts, cachedUsers };
  }
}

class LdapAuthPolicy implements CompiledAuthPolicy, LdapPolicyHandle {
  readonly id: string;
  readonly name: string;
  readonly type = 'ldap' as const;
  readonly params: ReadonlySet<PolicyParam>;
  readonly ldap: LdapRuntime;
  private readonly superuserGroups: GroupSet;
  /** Something to read after the bind: the superuser attribute or groups. */
  private readonly lookups: boolean;

  constructor(record: PolicyRecord<'ldap'>, private readonly core: LdapCore) {
    this.id = record.id;
    this.name = record.name;
    this.params = new Set<PolicyParam>(core.directory.readsClientid ? ['username', 'password', 'clientid'] : ['username', 'password']);
    this.ldap = core.runtime(() => 0);
    this.superuserGroups = new GroupSet(core.config.superuserGroups);
    this.lookups = core.config.superuserAttribute !== undefined || this.superuserGroups.size > 0;
  }

  async authenticate(q: AuthQuery): Promise<AuthAnswer> {
    try {
      return await this.decide(q);
    } catch (err) {
      return this.core.failed(err instanceof ServiceBindError ? err.message : errorText(err));
    }
  }

  private async decide(q: AuthQuery): Promise<AuthAnswer> {
    if (q.username === undefined || q.username === '') return { result: 'ignore', reason: 'no username' };
    if (q.password === undefined || q.password.length === 0) return { result: 'deny', reason: 'empty password (an LDAP unauthenticated bind is never tried)' };
    const who: Who = { username: q.username, clientid: q.clientid };
    const located = await this.core.locate(who);
    if ('none' in located) return { result: 'ignore', reason: 'no such user in the directory' };
    if ('many' in located) return this.core.failed(`the user filter finds ${located.many} or more entries for one username (it must find one)`);
    // Without a service account, what the user's entry says is read as the user, on the
    // connection that just bound; with one, as the service account.
    const asUser = this.lookups && this.core.config.service === null;
    const bound = await this.core.directory.bindAs(located.dn, q.password.toString('utf8'), asUser ? (client) => this.superuserOf(located, who, client) : undefined);
    if (!bound.ok) return { result: 'deny', reason: 'invalid credentials' };
    const superuser = asUser ? bound.value === true : this.lookups ? await this.superuserOf(located, who) : false;
    return { result: 'allow', superuser };
  }

  /** The superuser attribute of the entry, or membership of a superuser group. */
  private async superuserOf(located: UserEntry, who: Who, client?: Client): Promise<boolean> {
    const c = this.core.config;
    const d = this.core.directory;
    let entry = located;
    // Mode bind knows only the DN: the entry is read for its attributes.
    if (c.mode === 'bind' && d.entryAttributes.length > 0) entry = (await d.readEntry(located.dn, client)) ?? located;
    if (c.superuserAttribute !== undefined) {
      const values = entry.attributes.get(c.superuserAttribute.toLowerCase()) ?? [];
      if (values.some((v) => superuserOf(v.toLowerCase()) === true)) return true;
    }
    if (this.superuserGroups.size === 0) return false;
    return this.superuserGroups.anyOf(await d.groupsOf(entry, who, client));
  }

  dryRun(): Promise<void> {
    return this.core.dryRun();
  }

  close(): Promise<void> {
    return this.core.pool.close();
  }
}

class LdapAclPolicy implements CompiledAclPolicy, LdapPolicyHandle {
  readonly id: string;
  readonly name: string;
  readonly type = 'ldap' as const;
  readonly params: ReadonlySet<PolicyParam> = new Set(ACL_PARAMS);
  readonly ldap: LdapRuntime;
  private readonly rules: GroupRules;
  private readonly cache: GroupCache<CompiledRule[]>;

  constructor(record: PolicyRecord<'ldap'>, private readonly core: LdapCore) {
    this.id = record.id;
    this.name = record.name;
    const c = core.config;
    this.rules = new GroupRules(c.groupRules);
    this.cache = new GroupCache(c.groupCacheSize, c.groupCacheTtl * 1000, core.stats.groupCache);
    this.ldap = core.runtime(() => this.cache.size);
  }

  async authorize(q: AclQuery): Promise<AclAnswer> {
    if (q.username === undefined || q.username === '') return { result: 'ignore', reason: 'no username' };
    let rules: CompiledRule[];
    try {
      const key = this.core.directory.readsClientid ? `${q.username}\u0000${q.clientid}` : q.username;
      rules = await this.cache.get(key, () => this.rulesOf({ username: q.username!, clientid: q.clientid }));
    } catch (err) {
      return this.core.failed(err instanceof ServiceBindError ? err.message : errorText(err));
    }
    const walk = q.action === 'subscribe' ? new ScopeWalk() : undefined;
    const decision = decideRules(rules, q, walk);
    const overlaps = walk?.overlaps();
    const answer: AclAnswer = decision === undefined ? { result: 'ignore', reason: rules.length === 0 ? 'no rules for the user\'s groups' : 'no rule applies' } : { result: decision };
    return overlaps === undefined ? answer : { ...answer, overlaps };
  }

  /** The rules of the user's groups; none for a user the directory does not know. */
  private async rulesOf(who: Who): Promise<CompiledRule[]> {
    const d = this.core.directory;
    const located = await this.core.locate(who);
    if ('none' in located) return [];
    if ('many' in located) throw new Error(`the user filter finds ${located.many} or more entries for one username (it must find one)`);
    let entry: UserEntry | undefined = located;
    if (this.core.config.mode === 'bind' && d.entryAttributes.length > 0) entry = await d.readEntry(located.dn);
    if (entry === undefined) return [];
    return this.rules.rulesOf(await d.groupsOf(entry, who));
  }

  dryRun(): Promise<void> {
    return this.core.dryRun();
  }

  close(): Promise<void> {
    return this.core.pool.close();
  }
}
