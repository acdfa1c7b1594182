// Owns what save_mysql and save_postgresql share: the config {source, table, columns?, batchSize}
// and the batched multi-row INSERT. With `columns` ({column: value template}) every output gives one
// row of those columns; without, every field of an output is a column of its name, and outputs
// with different fields go into separate INSERTs of one statement each. Objects are written as
// JSON text, buffers as UTF-8 text.
import { isIdentifier, isTableName } from '../../sources/sql-identifier.ts';
import type { ValueTemplate } from '../template.ts';
import { batchSize, expectSource, requiredString, sourceId, valueTemplate, type Config } from './action-config.ts';
import { ActionConfigError, type ActionField, type CompiledAction, type Output } from './types.ts';

export const SQL_FIELDS: ActionField[] = [
  { name: 'source', type: 'string', required: true, description: 'id of the source to write to' },
  { name: 'table', type: 'string', required: true, description: 'table to insert into (`table` or `schema.table`)' },
  { name: 'columns', type: 'object', required: false, description: '{column: value template}, e.g. {"temp": "${payload.temp}"}; absent: every output field is a column of its name' },
  { name: 'batchSize', type: 'integer', required: false, description: 'most rows in one INSERT', default: 500 },
];

export function compileSqlInsert(config: Config, type: 'mysql' | 'postgresql'): CompiledAction {
  const source = sourceId(config);
  const table = requiredString(config, 'table');
  if (!isTableName(table)) throw new ActionConfigError('table', 'must be a name of letters, digits and _ (optionally schema.table)');
  const columns = columnTemplates(config);
  const maxBatch = batchSize(config, 500);
  return {
    kind: 'write',
    sourceId: source,
    maxBatch,
    async write(s, outputs) {
      const sql = expectSource(s, type);
      if (columns) {
        const names = columns.map(([name]) => name);
        await sql.insert(table, names, outputs.map((o) => columns.map(([, value]) => sqlValue(value(o)))));
        return;
      }
      for (const [names, rows] of groupByFields(outputs)) await sql.insert(table, names, rows);
    },
  };
}

function columnTemplates(config: Config): [string, ValueTemplate][] | null {
  const v = config.columns;
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ActionConfigError('columns', 'must be an object of {column: template}');
  const out: [string, ValueTemplate][] = [];
  for (const [name, text] of Object.entries(v)) {
    if (!isIdentifier(name)) throw new ActionConfigError(`columns.${name}`, 'is not a valid column name (letters, digits and _)');
    if (typeof text !== 'string') throw new ActionConfigError(`columns.${name}`, 'must be a template string');
    out.push([name, valueTemplate(text, `columns.${name}`)]);
  }
  if (out.length === 0) throw new ActionConfigError('columns', 'must name at least one column');
  return out;
}

/** Outputs grouped by their field names (in order of first appearance): one INSERT per group. */
function groupByFields(outputs: readonly Output[]): Map<string[], unknown[][]> {
  const byKey = new Map<string, { names: string[]; rows: unknown[][] }>();
  for (const o of outputs) {
    const names = Object.keys(o);
    const key = names.join('\u0000');
    let group = byKey.get(key);
    if (!group) byKey.set(key, (group = { names, rows: [] }));
    group.rows.push(names.map((n) => sqlValue(o[n])));
  }
  return new Map([...byKey.values()].map((g) => [g.names, g.rows]));
}

function sqlValue(v: unknown): unknown {
  if (v === undefined) return null;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  if (v !== null && typeof v === 'object' && !(v instanceof Date)) return JSON.stringify(v);
  return v;
}
