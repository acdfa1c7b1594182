// What the database policy tests share: a PolicyContext over a map of live sources whose log lines
// a test can read, policy records with unique ids, stored passwords made with the real strategies,
// and SQL tables (unique names) on the test databases, dropped by the caller.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';

import { hashWithStrategy, type StrategyOptions } from '../../src/auth/strategies/password-strategy.ts';
import { createLogger } from '../../src/log/index.ts';
import { compileDatabaseAclPolicy, compileDatabaseAuthPolicy } from '../../src/policies/database.ts';
import { parsePasswordHash, strategyOptions } from '../../src/policies/password-hash-config.ts';
import { PolicyConfigError, type AclAnswer, type AclQuery, type AuthAnswer, type AuthQuery, type CompiledAclPolicy, type CompiledAuthPolicy, type PolicyContext, type PolicyRecord } from '../../src/policies/types.ts';
import { createMysqlSource, parseMysqlConfig } from '../../src/sources/mysql.ts';
import { createPostgresqlSource, parsePostgresqlConfig } from '../../src/sources/postgresql.ts';
import type { AnySource, SqlSource } from '../../src/sources/types.ts';
import { quietLog } from '../sources/helpers.ts';
import { MYSQL_URL, PG_URL, uniqueName, withHint } from '../store/databases.ts';

export interface TestContext extends PolicyContext {
  /** The lines written to `log` at warn and above, parsed. */
  readonly lines: Record<string, unknown>[];
  sources: Map<string, AnySource>;
}

export function testContext(): TestContext {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _e, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const sources = new Map<string, AnySource>();
  return {
    lines,
    sources,
    source: (id) => sources.get(id),
    typeOf: (id) => sources.get(id)?.type,
    log: createLogger({ level: 'warn', stream }),
  };
}

export function record(config: Record<string, unknown>): PolicyRecord<'database'> {
  const id = `pol-${randomBytes(4).toString('hex')}`;
  return { id, name: id, type: 'database', config, enabled: true, order: 0, createTime: new Date().toISOString() };
}

export function client(username: string | undefined, password: string | undefined, clientid = 'c1'): AuthQuery {
  return { clientid, username, password: password === undefined ? undefined : Buffer.from(password), peerhost: '127.0.0.1' };
}

/** A passwordHash config (as a policy takes it) and the stored hash of `password` with `salt`. */
export async function stored(passwordHash: Record<string, unknown>, password: string, salt = ''): Promise<string> {
  const opts: StrategyOptions = { ...strategyOptions(parsePasswordHash(passwordHash)), bcryptCost: 4 };
  return hashWithStrategy(opts, password, salt);
}

export interface SqlServer {
  dialect: 'mysql' | 'postgresql';
  url: string;
  /** A new pool on the test database (`overrides` e.g. {host, port} to go through a proxy). */
  open(id: string, overrides?: Record<string, unknown>): SqlSource;
  boolean: string;
}

export const SQL_SERVERS: SqlServer[] = [
  {
    dialect: 'postgresql',
    url: PG_URL,
    open: (id, overrides = {}) => createPostgresqlSource(id, parsePostgresqlConfig({ url: PG_URL, poolSize: 2, ...overrides }), quietLog()),
    boolean: 'boolean',
  },
  {
    dialect: 'mysql',
    url: MYSQL_URL,
    open: (id, overrides = {}) => createMysqlSource(id, parseMysqlConfig({ url: MYSQL_URL, poolSize: 2, ...overrides }), quietLog()),
    boolean: 'tinyint',
  },
];

/** Creates a table with a unique name from `columns` (SQL column definitions); answers its name. */
export async function createTable(admin: SqlSource, server: SqlServer, prefix: string, columns: string): Promise<string> {
  const table = uniqueName(prefix);
  try {
    await admin.query(`CREATE TABLE ${table} (${columns})`, []);
  } catch (err) {
    throw withHint(err, server.url);
  }
  return table;
}

/** Compiles an auth policy from `config`, runs `body` with it, and closes it. */
export async function withAuthPolicy<T>(ctx: PolicyContext, config: Record<string, unknown>, body: (p: CompiledAuthPolicy) => Promise<T>): Promise<T> {
  const policy = compileDatabaseAuthPolicy(record(config), ctx);
  try {
    return await body(policy);
  } finally {
    await policy.close();
  }
}

export async function withAclPolicy<T>(ctx: PolicyContext, config: Record<string, unknown>, body: (p: CompiledAclPolicy) => Promise<T>): Promise<T> {
  const policy = compileDatabaseAclPolicy(record(config), ctx);
  try {
    return await body(policy);
  } finally {
    await policy.close();
  }
}

/** An ACL question of client c1 (username alice unless given). */
export function asks(action: 'publish' | 'subscribe', topic: string, username = 'alice', clientid = 'c1'): AclQuery {
  return { clientid, username, peerhost: '127.0.0.1', action, topic };
}

/** The warn lines `ctx` got from policy `id`. */
export function warnLines(ctx: TestContext, id: string): Record<string, unknown>[] {
  return ctx.lines.filter((l) => l.policy === id && l.level === 'warn');
}

/** An ignore caused by a failure, whose reason matches. */
export function assertErrorIgnore(answer: AuthAnswer | AclAnswer, reason: RegExp): void {
  assert.equal(answer.result, 'ignore', JSON.stringify(answer));
  assert.equal(answer.result === 'ignore' && answer.error, true, JSON.stringify(answer));
  assert.match((answer as { reason?: string }).reason ?? '', reason);
}

/** The dry run refuses, naming `field`. */
export async function assertDryRunRefused(policy: CompiledAuthPolicy | CompiledAclPolicy, field: string, message: RegExp): Promise<void> {
  await assert.rejects(policy.dryRun(), (err: unknown) => {
    assert.ok(err instanceof PolicyConfigError, String(err));
    assert.equal(err.field, field, err.message);
    assert.match(err.message, message);
    return true;
  });
}
