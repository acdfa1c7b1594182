// Data sources (spec 4.6): the databases, streams and web hooks that rule actions write to and
// that auth policies read from. Each source is one pool owned by the main thread (never one per
// worker), with bounded concurrency, reconnect with backoff, and a health state. This file is
// the contract every driver (one file per type) implements; registry.ts owns the set.

import { DomainError } from '../errors/domain-error.ts';

export const SOURCE_TYPES = ['mysql', 'postgresql', 'redis', 'kafka', 'mongodb', 'http'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** A data source as stored. `config` is the normalized config of its type (see config.ts);
 * shown through the API without its password (redact). */
export interface SourceRecord {
  id: string;
  name: string;
  type: SourceType;
  config: Record<string, unknown>;
  createTime: string;
}

/** Why a check (or a connection) failed, for `/source/check`. */
export type FailureKind = 'dns' | 'refused' | 'auth' | 'timeout' | 'tls' | 'database' | 'protocol' | 'http' | 'other';

export interface CheckResult {
  ok: boolean;
  /** Round trip of the check, ms. */
  latencyMs: number;
  failure?: FailureKind;
  /** The driver's message, without credentials. */
  message?: string;
}

export type HealthState = 'connecting' | 'up' | 'down' | 'closed';

export interface SourceHealth {
  state: HealthState;
  /** ISO time of the last state change. */
  since: string;
  lastError: string | null;
  lastErrorAt: string | null;
  reconnects: number;
  /** Operations in flight now (at most the pool size). */
  inFlight: number;
}

/** One row of a query (auth policies read with `query`). */
export type Row = Record<string, unknown>;

/** The rows of a query and the names of its result's columns (known even with no row). */
export interface SqlResult {
  rows: Row[];
  columns: string[];
}

export interface Source {
  readonly id: string;
  readonly type: SourceType;
  health(): SourceHealth;
  /** Opens a separate connection, does one round trip, closes it; never throws. */
  check(timeoutMs?: number): Promise<CheckResult>;
  /** Ends the pool; operations in flight finish or fail. */
  close(): Promise<void>;
}

/** mysql and postgresql. Identifiers are quoted by the driver's rules; values are parameters. */
export interface SqlSource extends Source {
  readonly type: 'mysql' | 'postgresql';
  /** One multi-row INSERT (`table` may be `schema.table`). */
  insert(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void>;
  /** A parameterised query (`?` placeholders for mysql, `$1..` for postgresql). */
  query(sql: string, params: readonly unknown[]): Promise<Row[]>;
  /** `query` with the result's column names (a policy's dry run checks them). */
  queryWithColumns(sql: string, params: readonly unknown[]): Promise<SqlResult>;
}

export interface RedisSource extends Source {
  readonly type: 'redis';
  /** Commands in one pipeline, e.g. [['HSET', 'k', 'f', 'v'], ['LPUSH', 'l', 'x']]. */
  pipeline(commands: readonly (readonly (string | Buffer)[])[]): Promise<void>;
  /** One command with its reply (auth policies). */
  command(args: readonly (string | Buffer)[]): Promise<unknown>;
}

export interface KafkaMessage {
  key: string | Buffer | null;
  value: string | Buffer;
  headers?: Record<string, string>;
}

export interface KafkaSource extends Source {
  readonly type: 'kafka';
  /** One produce request per call (kafkajs sendBatch), acks per the source config. */
  send(batch: readonly { topic: string; messages: readonly KafkaMessage[] }[]): Promise<void>;
}

export interface MongoSource extends Source {
  readonly type: 'mongodb';
  insertMany(collection: string, docs: readonly Record<string, unknown>[]): Promise<void>;
  findOne(collection: string, filter: Record<string, unknown>): Promise<Row | null>;
  /** At most `limit` documents matching `filter`, in the server's natural order (ACL policies). */
  find(collection: string, filter: Record<string, unknown>, limit: number): Promise<Row[]>;
}

export interface HttpRequest {
  method?: string;
  /** Appended to the source's URL (may be empty). */
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface HttpSource extends Source {
  readonly type: 'http';
  /** A status of 400 and above rejects with a SourceError (`transient` for 5xx and 429). */
  request(req: HttpRequest): Promise<HttpResponse>;
}

export type AnySource = SqlSource | RedisSource | KafkaSource | MongoSource | HttpSource;

/** An operation of a source failed. `transient`: a retry may succeed (connection lost, timeout,
 * server busy); otherwise the data was refused (bad column, bad command) and a retry cannot help. */
export class SourceError extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly transient: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'SourceError';
  }
}

/** A source config field is wrong: a domain error, 400 INVALID_PARAMETER naming `field` (e.g. `config.port`). */
export class SourceConfigError extends DomainError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_PARAMETER', `${field}: ${message}`, { field });
    this.name = 'SourceConfigError';
  }
}
