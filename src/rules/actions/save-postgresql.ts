// Owns the save_postgresql action: rule outputs as rows of a PostgreSQL table (sql-insert.ts).
import { SQL_FIELDS, compileSqlInsert } from './sql-insert.ts';
import type { ActionSpec } from './types.ts';

export const SAVE_POSTGRESQL: ActionSpec = {
  type: 'save_postgresql',
  sourceType: 'postgresql',
  description: 'Inserts each output as a row of a PostgreSQL table (batched multi-row INSERT).',
  fields: SQL_FIELDS,
  compile: (config) => compileSqlInsert(config, 'postgresql'),
};
