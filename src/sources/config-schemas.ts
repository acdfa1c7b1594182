// The config of each data source type as a schema: the fields the drivers' parse*Config read
// (sql-config.ts, redis-config.ts, kafka-config.ts, mongodb-config.ts, http.ts), with their ranges
// and defaults. The /source/add route's body is discriminated by type with these (OpenAPI, and the
// console's forms); the drivers still check what a schema cannot (a URL's scheme, url or host).
import { Type, type TSchema } from '@sinclair/typebox';

import { configOf, int, optionalText, secret, stringMap, TLS } from '../schema/form-fields.ts';
import type { SourceType } from './types.ts';

const POOL = (max: number) => int(1, max, 8, 'operations in flight at most');
const CONNECT_TIMEOUT = int(100, 600_000, 5000, 'ms');

function sql(scheme: string, port: number): TSchema {
  return configOf({
    url: optionalText(`${scheme}://user:password@host:${port}/database (or the fields below)`),
    host: optionalText('instead of url'),
    port: int(1, 65535, port),
    database: optionalText(),
    username: optionalText(),
    password: secret(),
    tls: TLS,
    poolSize: POOL(100),
    connectTimeout: CONNECT_TIMEOUT,
    requestTimeout: int(100, 3_600_000, 10_000, 'ms'),
  }, `a ${scheme} database: url, or host and database`);
}

export const SOURCE_CONFIG_SCHEMAS: Record<SourceType, TSchema> = {
  mysql: sql('mysql', 3306),
  postgresql: sql('postgres', 5432),
  redis: configOf({
    url: optionalText('redis://[user:password@]host[:port][/db], rediss:// for TLS (or host/port)'),
    host: optionalText('instead of url'),
    port: int(1, 65535, 6379),
    database: int(0, 1_000_000, 0, 'the database index'),
    username: optionalText(),
    password: secret(),
    tls: TLS,
    poolSize: POOL(1024),
    connectTimeout: CONNECT_TIMEOUT,
    requestTimeout: int(100, 600_000, 5000, 'ms'),
  }, 'a Redis server: url, or host and port'),
  kafka: configOf({
    bootstrapServers: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'host:port,host:port (or url, or host/port)' })),
    url: optionalText('kafka://host:9092[,host2:9092], kafka+ssl:// for TLS'),
    host: optionalText(),
    port: int(1, 65535, 9092),
    clientId: optionalText('default spindle'),
    acks: Type.Optional(Type.Unsafe<-1 | 0 | 1 | 'all'>({ enum: [-1, 0, 1, 'all'], 'x-default': -1, description: '-1: all in-sync replicas, 1: the leader, 0: none' })),
    compression: Type.Optional(Type.Unsafe<'none' | 'gzip'>({ type: 'string', enum: ['none', 'gzip'], 'x-default': 'none' })),
    username: optionalText('SASL (plain)'),
    password: secret('SASL'),
    sasl: Type.Optional(Type.Object({
      mechanism: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['plain', 'scram-sha-256', 'scram-sha-512'], 'x-default': 'plain' })),
      username: optionalText(),
      password: secret(),
    }, { description: 'SASL authentication' })),
    tls: TLS,
    poolSize: POOL(1024),
    connectTimeout: CONNECT_TIMEOUT,
    requestTimeout: int(100, 600_000, 5000, 'ms'),
  }, 'a Kafka cluster: bootstrapServers, url, or host/port'),
  mongodb: configOf({
    url: optionalText('mongodb://[user:password@]host[:port][,host2]/database (or host/port)'),
    host: optionalText('instead of url'),
    port: int(1, 65535, 27017),
    database: optionalText('required here or in the url'),
    username: optionalText(),
    password: secret(),
    authSource: optionalText(),
    tls: TLS,
    poolSize: POOL(1024),
    connectTimeout: CONNECT_TIMEOUT,
    requestTimeout: int(100, 600_000, 5000, 'ms'),
  }, 'a MongoDB server or replica set'),
  http: Type.Object({
    url: Type.String({ minLength: 1, description: 'http:// or https://' }),
    method: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'], 'x-default': 'POST' })),
    headers: stringMap('header name -> value'),
    timeout: int(100, 600_000, 5000, 'ms'),
    poolSize: POOL(1000),
    tls: TLS,
  }, { description: 'a web hook' }),
};
