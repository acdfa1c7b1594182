// Owns SQL identifiers (table and column names) written into INSERT statements: the one place
// they are validated (`[A-Za-z_][A-Za-z0-9_]*`, a table optionally `schema.table`) and quoted by
// the dialect's rules. Values never pass through here: they are always parameters.
import { SourceError } from './types.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_LENGTH = 63; // PostgreSQL's limit (MySQL's is 64)

export type Dialect = 'mysql' | 'postgresql';

export function isIdentifier(name: string): boolean {
  return name.length <= MAX_LENGTH && NAME.test(name);
}

/** `table` or `schema.table`. */
export function isTableName(name: string): boolean {
  const parts = name.split('.');
  return parts.length <= 2 && parts.every(isIdentifier);
}

/** The quoted identifier; a name that is not one is a non-transient SourceError. */
export function quoteIdentifier(name: string, dialect: Dialect): string {
  if (!isIdentifier(name)) throw new SourceError(`invalid SQL identifier ${JSON.stringify(name)}`, 'database', false);
  return dialect === 'mysql' ? `\`${name}\`` : `"${name}"`;
}

export function quoteTable(name: string, dialect: Dialect): string {
  if (!isTableName(name)) throw new SourceError(`invalid SQL table name ${JSON.stringify(name)}`, 'database', false);
  return name.split('.').map((part) => quoteIdentifier(part, dialect)).join('.');
}
