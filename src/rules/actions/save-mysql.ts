// Owns the save_mysql action: rule outputs as rows of a MySQL/MariaDB table (sql-insert.ts).
import { SQL_FIELDS, compileSqlInsert } from './sql-insert.ts';
import type { ActionSpec } from './types.ts';

export const SAVE_MYSQL: ActionSpec = {
  type: 'save_mysql',
  sourceType: 'mysql',
  description: 'Inserts each output as a row of a MySQL or MariaDB table (batched multi-row INSERT).',
  fields: SQL_FIELDS,
  compile: (config) => compileSqlInsert(config, 'mysql'),
};
