// Owns the table of source drivers the registry builds sources with: per type, how to parse and
// normalize a raw config and how to create the source from it.
import type { Logger } from '../log/index.ts';
import { createHttpSource, parseHttpConfig } from './http.ts';
import { createMysqlSource, parseMysqlConfig } from './mysql.ts';
import { createPostgresqlSource, parsePostgresqlConfig } from './postgresql.ts';
import { createRedisSource, parseRedisConfig } from './redis.ts';
import { createKafkaSource, parseKafkaConfig } from './kafka.ts';
import { createMongoSource, parseMongoConfig } from './mongodb.ts';
import type { AnySource, SourceType } from './types.ts';

export interface SourceDriver {
  /** The normalized config; throws SourceConfigError naming the field (`config.port`). */
  parse(raw: unknown): object;
  /** The source with its pool; connections open in the background, never throwing here. */
  create(id: string, config: object, log: Logger): AnySource;
}

export type SourceDrivers = Partial<Record<SourceType, SourceDriver>>;

export const DRIVERS: SourceDrivers = {
  mysql: { parse: parseMysqlConfig, create: createMysqlSource },
  postgresql: { parse: parsePostgresqlConfig, create: createPostgresqlSource },
  redis: { parse: parseRedisConfig, create: createRedisSource as SourceDriver['create'] },
  kafka: { parse: parseKafkaConfig, create: createKafkaSource as SourceDriver['create'] },
  mongodb: { parse: parseMongoConfig, create: createMongoSource as SourceDriver['create'] },
  http: { parse: parseHttpConfig, create: createHttpSource },
};
