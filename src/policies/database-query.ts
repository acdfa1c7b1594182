// Owns running a database policy's query against its source: compiled once for the source's type
// (SQL templates to positional parameters, the redis command, the mongodb filter), then per client
// filled with that client's values (always as values) and answered as rows. The SQL result keeps
// its column names for the dry run. Mongodb ACL reads at most MAX_ACL_DOCUMENTS documents.
import type { AnySource, MongoSource, RedisSource, Row, SqlSource } from '../sources/types.ts';
import { checkQueryFits, queryField, type DatabaseQuerySpec } from './database-config.ts';
import type { DatabaseSourceType } from './datasource-config.ts';
import { fillMongoFilter } from './mongo-filter.ts';
import { allowedParams, fill, paramValue } from './params.ts';
import { redisReplyRows } from './redis-command.ts';
import { compileSqlTemplate } from './sql-template.ts';
import type { AclQuery, AuthQuery, PolicyKind } from './types.ts';

/** Most documents a mongodb ACL query reads (the rules of one client). */
export const MAX_ACL_DOCUMENTS = 1000;

export interface QueryResult {
  rows: Row[];
  /** SQL only: the result's column names (known even with no row). */
  columns?: string[];
}

export interface DatabaseQuery {
  readonly type: DatabaseSourceType;
  /** The config field holding the query (`config.sql`, `config.command`, `config.filter`). */
  readonly field: string;
  /** Rejects with the source's SourceError. `source` must be of `type`. */
  run(source: AnySource, q: AuthQuery | AclQuery): Promise<QueryResult>;
}

/** Throws PolicyConfigError naming the query field when it does not fit `type`. */
export function compileDatabaseQuery(spec: DatabaseQuerySpec, type: DatabaseSourceType, purpose: PolicyKind): DatabaseQuery {
  checkQueryFits(spec, type);
  const field = queryField(spec);
  if (spec.kind === 'sql') {
    const t = compileSqlTemplate(spec.sql, type as 'mysql' | 'postgresql', allowedParams(purpose));
    return {
      type,
      field,
      run: (source, q) => (source as SqlSource).queryWithColumns(t.text, t.names.map((n) => paramValue(n, q) ?? null)),
    };
  }
  if (spec.kind === 'command') {
    const command = spec.command;
    return {
      type,
      field,
      async run(source, q) {
        const filled = command.map((arg, i) => (i === 0 ? arg : fill(arg, q)));
        return { rows: redisReplyRows(command, await (source as RedisSource).command(filled), purpose) };
      },
    };
  }
  const { collection, filter } = spec;
  return {
    type,
    field,
    async run(source, q) {
      const mongo = source as MongoSource;
      const filled = fillMongoFilter(filter, q);
      if (purpose === 'acl') return { rows: await mongo.find(collection, filled, MAX_ACL_DOCUMENTS) };
      const doc = await mongo.findOne(collection, filled);
      return { rows: doc === null ? [] : [doc] };
    },
  };
}
