// Owns the evaluators of the `database` policy type (spec 4.7), main thread: authentication (the
// first row's password_hash/password, salt and is_superuser, verified with the configured hash)
// and ACL (the rows as rules, acl-rows.ts). Never throws and never allows on a failure: a source
// that is down, slow, missing or refusing the query answers ignore with `error` (the next policy
// decides), logged at warn at most once per 10 s per policy with a count (rate-limited-warn.ts);
// ACL rows that cannot be read are skipped and logged the same way, on their own count.
// The config is database-config.ts; the query database-query.ts; the source policy-source.ts.
import { verifyWithStrategy, type StrategyOptions } from '../auth/strategies/password-strategy.ts';
import type { Row } from '../sources/types.ts';
import { ScopeWalk } from '../auth/acl-scope.ts';
import { decideAcl } from './acl-rows.ts';
import { hasScramColumns, isSuperuser, scramCredentialsOf, storedPasswordOf } from './auth-row.ts';
import { formatScramCredentials } from '../auth/scram/credentials.ts';
import { readDatabaseAclConfig, readDatabaseAuthConfig, type DatabaseConfig } from './database-config.ts';
import { ACL_COLUMNS, AUTH_COLUMNS, dryRun } from './database-dry-run.ts';
import { DRY_RUN_ACL, DRY_RUN_AUTH } from './params.ts';
import { compileDatabaseQuery, type DatabaseQuery } from './database-query.ts';
import { strategyOptions } from './password-hash-config.ts';
import { openPolicySource, policySourceType, type PolicySource } from './policy-source.ts';
import { RateLimitedWarn } from './rate-limited-warn.ts';
import type { PolicyKind } from './types.ts';
import type {
  AclAnswer,
  AclQuery,
  AuthAnswer,
  AuthQuery,
  CompiledAclPolicy,
  CompiledAuthPolicy,
  PolicyContext,
  PolicyParam,
  PolicyRecord,
  ScramAnswer,
  ScramQuery,
} from './types.ts';

const NO_PASSWORD = Buffer.alloc(0);
/** What an ACL answer depends on besides the query's templates: the asked topic and action, and
 * the client's username and client id, which a row's %u and %c patterns expand with. */
const ACL_ANSWER_PARAMS: readonly PolicyParam[] = ['topic', 'action', 'username', 'clientid'];

/** Throws PolicyConfigError for a config that cannot work (a source that does not exist or is
 * not a database, a query field that does not fit its type, a template inside quotes). */
export function compileDatabaseAuthPolicy(record: PolicyRecord<'database'>, ctx: PolicyContext): CompiledAuthPolicy {
  const config = readDatabaseAuthConfig(record.config);
  const base = compileBase(record, config, ctx, 'auth');
  return new DatabaseAuthPolicy(base, strategyOptions(config.passwordHash));
}

export function compileDatabaseAclPolicy(record: PolicyRecord<'database'>, ctx: PolicyContext): CompiledAclPolicy {
  const config = readDatabaseAclConfig(record.config);
  return new DatabaseAclPolicy(compileBase(record, config, ctx, 'acl'));
}

/** What both evaluators are made of. */
interface Base {
  id: string;
  name: string;
  /** The query's templates. */
  params: ReadonlySet<PolicyParam>;
  query: DatabaseQuery;
  where: PolicySource;
  /** Failures (the client is ignored), and ACL rows that cannot be read: rate-limited apart. */
  warn: RateLimitedWarn;
  skippedRow: RateLimitedWarn;
}

function compileBase(record: PolicyRecord<'database'>, config: DatabaseConfig, ctx: PolicyContext, purpose: PolicyKind): Base {
  const type = policySourceType(config, ctx);
  const query = compileDatabaseQuery(config.query, type, purpose);
  // Last: nothing may throw once the policy's own pool is open.
  const where = openPolicySource(config, type, ctx, record.id);
  const log = ctx.log.child({ policy: record.id, policyType: 'database', purpose });
  return { id: record.id, name: record.name, params: config.params, query, where, warn: new RateLimitedWarn(log), skippedRow: new RateLimitedWarn(log) };
}

/** The rows of the query for `q`, or why they could not be read (reported, rate-limited). */
async function ask(base: Base, q: AuthQuery | AclQuery): Promise<Row[] | { failure: string }> {
  const source = base.where.current();
  if (typeof source === 'string') return failed(base, source);
  try {
    return (await base.query.run(source, q)).rows;
  } catch (err) {
    return failed(base, err instanceof Error ? err.message : String(err));
  }
}

function failed(base: Base, reason: string): { failure: string } {
  base.warn.warn('database policy failed: the client is ignored by it', { reason });
  return { failure: reason };
}

/** The ignore answer of a query that needs a username the client did not give. */
function needsUsername(base: Base, q: AuthQuery | AclQuery): { result: 'ignore'; reason: string } | undefined {
  if (q.username !== undefined || !base.params.has('username')) return undefined;
  return { result: 'ignore', reason: 'the client gave no username and the query uses ${username}' };
}

class DatabaseAuthPolicy implements CompiledAuthPolicy {
  readonly type = 'database' as const;
  readonly id: string;
  readonly name: string;
  readonly params: ReadonlySet<PolicyParam>;

  constructor(
    private readonly base: Base,
    private readonly strategy: StrategyOptions,
  ) {
    this.id = base.id;
    this.name = base.name;
    this.params = base.params;
  }

  async authenticate(q: AuthQuery): Promise<AuthAnswer> {
    try {
      return await this.decide(q);
    } catch (err) {
      // Not expected (every failure above is answered): still never reject, never allow.
      const reason = `unexpected: ${err instanceof Error ? err.message : String(err)}`;
      return { result: 'ignore', error: true, reason: failed(this.base, reason).failure };
    }
  }

  private async decide(q: AuthQuery): Promise<AuthAnswer> {
    const noUsername = needsUsername(this.base, q);
    if (noUsername) return noUsername;
    const rows = await ask(this.base, q);
    if (!Array.isArray(rows)) return { result: 'ignore', error: true, reason: rows.failure };
    if (rows.length === 0) return { result: 'ignore', reason: 'not found' };
    const stored = storedPasswordOf(rows[0]);
    // A client kept with SCRAM credentials only signs in with SCRAM (MQTT 5 AUTH), not a password.
    if (typeof stored === 'string' && hasScramColumns(rows[0])) return { result: 'ignore', reason: 'the row has SCRAM credentials and no password hash' };
    if (typeof stored === 'string') return { result: 'ignore', error: true, reason: failed(this.base, stored).failure };
    if (!(await verifyWithStrategy(this.strategy, q.password ?? NO_PASSWORD, stored))) return { result: 'deny', reason: 'bad password' };
    return { result: 'allow', superuser: isSuperuser(rows[0]) };
  }

  async scramCredentials(q: ScramQuery): Promise<ScramAnswer> {
    try {
      return await this.decideScram(q);
    } catch (err) {
      const reason = `unexpected: ${err instanceof Error ? err.message : String(err)}`;
      return { result: 'ignore', error: true, reason: failed(this.base, reason).failure };
    }
  }

  /** The first row's SCRAM columns (auth-row.ts), found with the same query as a password. */
  private async decideScram(q: ScramQuery): Promise<ScramAnswer> {
    // A SCRAM client never sends its password: a query that needs it cannot find the client.
    if (this.params.has('password')) return { result: 'ignore', reason: 'the query uses ${password}, which a SCRAM client never sends' };
    const asked: AuthQuery = { clientid: q.clientid, username: q.username, peerhost: q.peerhost };
    const rows = await ask(this.base, asked);
    if (!Array.isArray(rows)) return { result: 'ignore', error: true, reason: rows.failure };
    if (rows.length === 0) return { result: 'ignore', reason: 'not found' };
    const credentials = scramCredentialsOf(rows[0], q.mechanism);
    if (credentials === undefined) return { result: 'ignore', reason: `the row has no ${q.mechanism} credentials` };
    if (typeof credentials === 'string') return { result: 'ignore', error: true, reason: failed(this.base, credentials).failure };
    return { result: 'allow', credentials: formatScramCredentials(credentials), superuser: isSuperuser(rows[0]) };
  }

  dryRun(): Promise<void> {
    return dryRun(this.base.query, this.base.where, DRY_RUN_AUTH, AUTH_COLUMNS);
  }

  close(): Promise<void> {
    return this.base.where.close();
  }
}

class DatabaseAclPolicy implements CompiledAclPolicy {
  readonly type = 'database' as const;
  readonly id: string;
  readonly name: string;
  readonly params: ReadonlySet<PolicyParam>;

  constructor(private readonly base: Base) {
    this.id = base.id;
    this.name = base.name;
    this.params = new Set([...base.params, ...ACL_ANSWER_PARAMS]);
  }

  async authorize(q: AclQuery): Promise<AclAnswer> {
    try {
      return await this.decide(q);
    } catch (err) {
      const reason = `unexpected: ${err instanceof Error ? err.message : String(err)}`;
      return { result: 'ignore', error: true, reason: failed(this.base, reason).failure };
    }
  }

  private async decide(q: AclQuery): Promise<AclAnswer> {
    const noUsername = needsUsername(this.base, q);
    if (noUsername) return noUsername;
    const rows = await ask(this.base, q);
    if (!Array.isArray(rows)) return { result: 'ignore', error: true, reason: rows.failure };
    const walk = q.action === 'subscribe' ? new ScopeWalk() : undefined;
    const decision = decideAcl(rows, q, (problem) => this.base.skippedRow.warn('database ACL policy skipped a row', { problem }), walk);
    const overlaps = walk?.overlaps();
    const answer: AclAnswer = decision === undefined ? { result: 'ignore', reason: 'no rule applies' } : { result: decision };
    return overlaps === undefined ? answer : { ...answer, overlaps };
  }

  dryRun(): Promise<void> {
    return dryRun(this.base.query, this.base.where, DRY_RUN_ACL, ACL_COLUMNS);
  }

  close(): Promise<void> {
    return this.base.where.close();
  }
}
