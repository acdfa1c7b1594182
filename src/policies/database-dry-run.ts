// Owns the dry run of a database policy: its query run once with sample values, the SQL result's
// columns checked against what the policy reads, and every failure turned into a PolicyConfigError
// naming the field to fix: the query field (`config.sql`, `config.command`, `config.filter`) when
// the server refused the query, the server field (`config.source`, `config.datasource`) when it
// could not be used at all (refused, dns, auth, timeout, tls, connection lost).
import { SourceError, type FailureKind } from '../sources/types.ts';
import type { DatabaseQuery } from './database-query.ts';
import type { PolicySource } from './policy-source.ts';
import { PolicyConfigError, type AclQuery, type AuthQuery } from './types.ts';

/** Columns a result must have: each entry lists alternatives, one of which must be present. */
export type NeededColumns = readonly (readonly string[])[];
/** A password hash, or SCRAM credentials (auth-row.ts). */
export const AUTH_COLUMNS: NeededColumns = [['password_hash', 'password', 'scram_sha_256', 'scram_sha_512', 'stored_key']];
export const ACL_COLUMNS: NeededColumns = [['permission'], ['action'], ['topic']];

const SERVER_FAILURES: Partial<Record<FailureKind, string>> = {
  refused: 'connection refused',
  dns: 'host name not found',
  auth: 'authentication failed',
  timeout: 'timed out',
  tls: 'TLS failed',
  protocol: 'connection lost',
};

/** Resolves when the query runs and its result has the columns; rejects with a PolicyConfigError. */
export async function dryRun(query: DatabaseQuery, where: PolicySource, q: AuthQuery | AclQuery, needed: NeededColumns): Promise<void> {
  const source = where.current();
  if (typeof source === 'string') throw new PolicyConfigError(where.field, source);
  let columns: string[] | undefined;
  try {
    ({ columns } = await query.run(source, q));
  } catch (err) {
    throw dryRunFailure(err, query.field, where.field);
  }
  if (columns === undefined) return;
  for (const alternatives of needed) {
    if (!alternatives.some((c) => columns.includes(c))) {
      const want = alternatives.join(' or ');
      throw new PolicyConfigError(query.field, `the result has no column ${want} (it has ${columns.join(', ') || 'none'}): select it, or rename one with AS ${alternatives[0]}`);
    }
  }
}

/** The PolicyConfigError of a failed query: the server field when the server could not be used. */
export function dryRunFailure(err: unknown, queryField: string, serverField: string): PolicyConfigError {
  if (err instanceof PolicyConfigError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof SourceError && (err.transient || SERVER_FAILURES[err.kind] !== undefined)) {
    const what = SERVER_FAILURES[err.kind] ?? 'unavailable';
    const failure = new PolicyConfigError(serverField, `cannot use the server: ${what} (${message})`);
    failure.cause = err;
    return failure;
  }
  const failure = new PolicyConfigError(queryField, `the query failed: ${message}`);
  failure.cause = err;
  return failure;
}
