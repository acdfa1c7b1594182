// Owns where a database policy sends its query: a shared data source, looked up by id on every
// call (it may be replaced or deleted while the policy lives; it is never closed here), or the
// policy's own `datasource`, one pool created when the policy is compiled (source id
// `policy-<policy id>`) and ended by close().
import { DRIVERS } from '../sources/drivers.ts';
import type { AnySource } from '../sources/types.ts';
import type { DatabaseConfig } from './database-config.ts';
import { datasourceType, isDatabaseSourceType, DATABASE_SOURCE_TYPES, type DatabaseSourceType } from './datasource-config.ts';
import { PolicyConfigError, type PolicyContext } from './types.ts';

export interface PolicySource {
  readonly type: DatabaseSourceType;
  /** The config field naming the server (`config.source` or `config.datasource`). */
  readonly field: string;
  /** The source to ask now, or why there is none (a shared source deleted or changed type). */
  current(): AnySource | string;
  close(): Promise<void>;
}

/** The type of the source `config` names; throws PolicyConfigError('config.source') for a
 * source that does not exist or is not a database. */
export function policySourceType(config: DatabaseConfig, ctx: PolicyContext): DatabaseSourceType {
  if (config.datasource !== undefined) return datasourceType(config.datasource);
  const id = config.source as string;
  const type = ctx.typeOf(id);
  if (type === undefined) throw new PolicyConfigError('config.source', `no data source ${id}`);
  if (!isDatabaseSourceType(type)) throw new PolicyConfigError('config.source', `data source ${id} is a ${type} source; a database policy takes ${DATABASE_SOURCE_TYPES.join(', ')}`);
  return type;
}

/** Opens the policy's own pool (datasource) or binds the shared source by id. Call it last when
 * compiling: a pool opened before a config error would be left open. */
export function openPolicySource(config: DatabaseConfig, type: DatabaseSourceType, ctx: PolicyContext, policyId: string): PolicySource {
  if (config.datasource !== undefined) return ownSource(config.datasource, type, ctx, policyId);
  return sharedSource(config.source as string, type, ctx);
}

function ownSource(datasource: Record<string, unknown>, type: DatabaseSourceType, ctx: PolicyContext, policyId: string): PolicySource {
  const driver = DRIVERS[type];
  if (!driver) throw new PolicyConfigError('config.datasource.url', `${type} sources are not available in this build`);
  const source = driver.create(`policy-${policyId}`, driver.parse(datasource), ctx.log);
  return {
    type,
    field: 'config.datasource',
    current: () => source,
    close: () => source.close(),
  };
}

function sharedSource(id: string, type: DatabaseSourceType, ctx: PolicyContext): PolicySource {
  return {
    type,
    field: 'config.source',
    current() {
      const source = ctx.source(id);
      if (source === undefined) return `data source ${id} does not exist (deleted?)`;
      if (source.type !== type) return `data source ${id} is now a ${source.type} source, the policy was compiled for ${type}`;
      return source;
    },
    close: async () => {},
  };
}
