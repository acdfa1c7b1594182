// Owns the config of the `database` policy type (spec 4.7), for auth and ACL: where to ask (exactly
// one of `source`, the id of a shared mysql/postgresql/redis/mongodb data source, or `datasource`,
// the policy's own {url, ...}), what to ask (`sql` for mysql/postgresql, `command` for redis,
// `collection` + `filter` for mongodb, with `${name}` templates), and for auth how passwords are
// hashed (`passwordHash`). Normalized by parse*, read back typed by read* (compile re-reads the
// stored config, so the normalized form parses to itself). A `source`'s type is only known when
// compiling: the query field is matched with it there (checkQueryFits), and its SQL checked in its
// dialect; here SQL is refused only for what no dialect takes. With a `datasource` both happen here.
import { datasourceType, parseDatasource, type DatabaseSourceType } from './datasource-config.ts';
import { parseCollection, parseMongoFilter } from './mongo-filter.ts';
import { allowedParams, paramsOf } from './params.ts';
import { parsePasswordHash, type PasswordHashConfig } from './password-hash-config.ts';
import { parseRedisCommand, redisCommandParams } from './redis-command.ts';
import { compileSqlTemplate } from './sql-template.ts';
import { PolicyConfigError, type PolicyKind, type PolicyParam } from './types.ts';

export type DatabaseQuerySpec =
  | { kind: 'sql'; sql: string }
  | { kind: 'command'; command: string[] }
  | { kind: 'mongodb'; collection: string; filter: Record<string, unknown> };

export interface DatabaseConfig {
  /** A shared data source's id, or undefined with `datasource`. */
  source?: string;
  /** The policy's own source (normalized, see datasource-config.ts). */
  datasource?: Record<string, unknown>;
  query: DatabaseQuerySpec;
  /** The parameters the query's templates read. */
  params: Set<PolicyParam>;
}

export interface DatabaseAuthConfig extends DatabaseConfig {
  passwordHash: PasswordHashConfig;
}

const QUERY_FIELDS = ['sql', 'command', 'collection', 'filter'];
const WHERE_FIELDS = ['source', 'datasource'];

export function parseDatabaseAuthConfig(raw: unknown): Record<string, unknown> {
  const c = readDatabaseAuthConfig(raw);
  return { ...toRecord(c), passwordHash: { ...c.passwordHash } };
}

export function parseDatabaseAclConfig(raw: unknown): Record<string, unknown> {
  return toRecord(readDatabaseAclConfig(raw));
}

export function readDatabaseAuthConfig(raw: unknown): DatabaseAuthConfig {
  const o = configObject(raw, [...WHERE_FIELDS, ...QUERY_FIELDS, 'passwordHash']);
  return { ...readCommon(o, 'auth'), passwordHash: parsePasswordHash(o.passwordHash) };
}

export function readDatabaseAclConfig(raw: unknown): DatabaseConfig {
  return readCommon(configObject(raw, [...WHERE_FIELDS, ...QUERY_FIELDS]), 'acl');
}

/** The field holding the query, for errors about it (`config.sql`, `config.command`, `config.filter`). */
export function queryField(query: DatabaseQuerySpec): string {
  return query.kind === 'sql' ? 'config.sql' : query.kind === 'command' ? 'config.command' : 'config.filter';
}

/** Throws PolicyConfigError naming the query field when it does not fit a source of `type`. */
export function checkQueryFits(query: DatabaseQuerySpec, type: DatabaseSourceType): void {
  const wanted = type === 'redis' ? 'command' : type === 'mongodb' ? 'mongodb' : 'sql';
  if (query.kind === wanted) return;
  const takes = wanted === 'mongodb' ? 'config.collection and config.filter' : `config.${wanted}`;
  const field = query.kind === 'mongodb' ? 'config.collection' : `config.${query.kind}`;
  throw new PolicyConfigError(field, `a ${type} source takes ${takes}`);
}

function readCommon(o: Record<string, unknown>, purpose: PolicyKind): DatabaseConfig {
  const config: DatabaseConfig = { ...readWhere(o), ...readQuery(o, purpose) };
  if (config.datasource !== undefined) {
    const type = datasourceType(config.datasource);
    checkQueryFits(config.query, type);
    if (config.query.kind === 'sql') compileSqlTemplate(config.query.sql, type as 'mysql' | 'postgresql', allowedParams(purpose));
  }
  return config;
}

function readWhere(o: Record<string, unknown>): Pick<DatabaseConfig, 'source' | 'datasource'> {
  if ((o.source === undefined) === (o.datasource === undefined)) {
    throw new PolicyConfigError('config.source', 'give exactly one of source (a data source id) or datasource ({url, username, password})');
  }
  if (o.datasource !== undefined) return { datasource: parseDatasource(o.datasource) };
  if (typeof o.source !== 'string' || o.source === '') throw new PolicyConfigError('config.source', 'must be the id of a data source');
  return { source: o.source };
}

function readQuery(o: Record<string, unknown>, purpose: PolicyKind): Pick<DatabaseConfig, 'query' | 'params'> {
  const given = ['sql', 'command', 'collection'].filter((k) => o[k] !== undefined);
  if (given.length !== 1) {
    throw new PolicyConfigError(given.length === 0 ? 'config.sql' : `config.${given[1]}`, 'give exactly one query: sql (mysql, postgresql), command (redis) or collection with filter (mongodb)');
  }
  const allowed = allowedParams(purpose);
  if (o.filter !== undefined && o.collection === undefined) throw new PolicyConfigError('config.filter', 'goes with collection (mongodb)');
  if (o.sql !== undefined) {
    if (typeof o.sql !== 'string' || o.sql.trim() === '') throw new PolicyConfigError('config.sql', 'must be a non-empty SQL query');
    checkSqlInSomeDialect(o.sql, allowed);
    return { query: { kind: 'sql', sql: o.sql }, params: paramsOf(o.sql, allowed, 'config.sql') };
  }
  if (o.command !== undefined) {
    const command = parseRedisCommand(o.command, purpose, allowed);
    return { query: { kind: 'command', command }, params: redisCommandParams(command, allowed) };
  }
  const collection = parseCollection(o.collection);
  if (o.filter === undefined) throw new PolicyConfigError('config.filter', 'is required with collection, e.g. {"username": "${username}"}');
  const { filter, params } = parseMongoFilter(o.filter, allowed);
  return { query: { kind: 'mongodb', collection, filter }, params };
}

/** Before the source's dialect is known: refuses what no dialect takes (a template in quotes,
 * an unknown name); the dialect's own rules (a mysql `?`, a postgresql `$1`) wait for compile. */
function checkSqlInSomeDialect(sql: string, allowed: readonly PolicyParam[]): void {
  try {
    compileSqlTemplate(sql, 'postgresql', allowed);
  } catch (postgresqlError) {
    try {
      compileSqlTemplate(sql, 'mysql', allowed);
    } catch {
      throw postgresqlError;
    }
  }
}

function configObject(raw: unknown, fields: readonly string[]): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyConfigError('config', 'must be an object');
  // A null field is an absent one (a client may send every field, the unused ones null).
  const o = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined && v !== null));
  for (const key of Object.keys(o)) {
    if (!fields.includes(key)) throw new PolicyConfigError(`config.${key}`, `is not a field of a database policy (${fields.join(', ')})`);
  }
  return o;
}

function toRecord(c: DatabaseConfig): Record<string, unknown> {
  const out: Record<string, unknown> = c.source !== undefined ? { source: c.source } : { datasource: { ...c.datasource } };
  if (c.query.kind === 'sql') out.sql = c.query.sql;
  else if (c.query.kind === 'command') out.command = [...c.query.command];
  else Object.assign(out, { collection: c.query.collection, filter: c.query.filter });
  return out;
}
