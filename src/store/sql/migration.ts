// Versioned schema migrations shared by the SQL backends: the ordered list type and the check of
// a database's recorded version against it. Each backend keeps its own list (its dialect) and
// records applied versions in a `spindle_schema_version` table.
import { StoreError } from '../errors.ts';

export interface Migration {
  /** 1, 2, 3, ... in order, never reused or changed once released. */
  version: number;
  name: string;
  statements: string[];
}

/** The migrations still to apply to a database at `current`; refuses a newer database. */
export function pending(migrations: readonly Migration[], current: number, backend: string): Migration[] {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new StoreError('STORE_MIGRATION', `${backend} migration list out of order at ${m.name}`);
  });
  if (current > migrations.length) {
    throw new StoreError('STORE_MIGRATION', `${backend} schema is at version ${current}, newer than this Spindle knows (${migrations.length})`);
  }
  return migrations.slice(current);
}
