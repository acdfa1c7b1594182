// Owns the table of source drivers the registry builds sources with: per type, how to parse and
// normalize a raw config and how to create the source from it. Every driver but http wraps a
// library that is slow to import, so its file is loaded with the first source of its type, never
// at start (issue 26): until then the source is a DeferredSource (deferred-source.ts).
import { lazyImport } from '../lazy/lazy-import.ts';
import type { Logger } from '../log/index.ts';
import { DeferredKafkaSource, DeferredMongoSource, DeferredRedisSource, DeferredSqlSource } from './deferred-source.ts';
import { createHttpSource, parseHttpConfig } from './http.ts';
import { parseKafkaConfig } from './kafka-config.ts';
import { parseMongoConfig } from './mongodb-config.ts';
import { parseRedisConfig } from './redis-config.ts';
import { parseMysqlConfig, parsePostgresqlConfig } from './sql-config.ts';
import type { AnySource, SourceType } from './types.ts';

export interface SourceDriver {
  /** The normalized config; throws SourceConfigError naming the field (`config.port`). */
  parse(raw: unknown): object;
  /** The source with its pool; connections open in the background, never throwing here. */
  create(id: string, config: object, log: Logger): AnySource;
}

export type SourceDrivers = Partial<Record<SourceType, SourceDriver>>;

// One loader per driver file: the first source of a type loads it, the others share the promise.
const mysqlDriver = lazyImport('mysql2', async () => (await import('./mysql.ts')).createMysqlSource);
const postgresqlDriver = lazyImport('postgres', async () => (await import('./postgresql.ts')).createPostgresqlSource);
const redisDriver = lazyImport('ioredis', async () => (await import('./redis.ts')).createRedisSource);
const kafkaDriver = lazyImport('kafkajs', async () => (await import('./kafka.ts')).createKafkaSource);
const mongodbDriver = lazyImport('mongodb', async () => (await import('./mongodb.ts')).createMongoSource);

export const DRIVERS: SourceDrivers = {
  mysql: { parse: parseMysqlConfig, create: (id, config, log) => new DeferredSqlSource('mysql', id, config, log, mysqlDriver) },
  postgresql: { parse: parsePostgresqlConfig, create: (id, config, log) => new DeferredSqlSource('postgresql', id, config, log, postgresqlDriver) },
  redis: { parse: parseRedisConfig, create: (id, config, log) => new DeferredRedisSource(id, config, log, redisDriver) },
  kafka: { parse: parseKafkaConfig, create: (id, config, log) => new DeferredKafkaSource(id, config, log, kafkaDriver) },
  mongodb: { parse: parseMongoConfig, create: (id, config, log) => new DeferredMongoSource(id, config, log, mongodbDriver) },
  http: { parse: parseHttpConfig, create: createHttpSource },
};
