// Owns a source while its driver's module loads (main thread). The registry creates sources
// synchronously (their connections open in the background), but a driver's file imports its
// library (mysql2, postgres, ioredis, kafkajs, mongodb), which costs tens to hundreds of ms and
// MB: so drivers.ts loads that file on the first source of its type (lazy-import.ts), and this
// source stands in meanwhile. Until the driver is loaded the source is 'connecting' and its
// operations wait for it; once loaded, every call is the driver's own source's (health, check,
// operations, close). A driver that cannot be loaded leaves the source down, with the load error
// as its lastError: check() answers it and operations fail with it, not transient (a module that
// did not load will not load later in this process).
import type { Logger } from '../log/index.ts';
import {
  SourceError,
  type AnySource,
  type CheckResult,
  type KafkaMessage,
  type KafkaSource,
  type MongoSource,
  type RedisSource,
  type Row,
  type SourceHealth,
  type SqlResult,
  type SqlSource,
} from './types.ts';

/** A driver's create function, as its module exports it. */
export type CreateSource<S extends AnySource> = (id: string, config: never, log: Logger) => S;

/** Loads a driver's module (once per module: lazyImport) and answers its create function. */
export type LoadDriver<S extends AnySource> = () => Promise<CreateSource<S>>;

abstract class DeferredSource<S extends AnySource> {
  abstract readonly type: S['type'];
  private source: S | null = null;
  private failure: SourceError | null = null;
  private failedAt = '';
  private closed = false;
  /** Operations waiting for the driver (shown as in flight, as the driver's limiter would). */
  private waiting = 0;
  private readonly since = new Date().toISOString();
  private readonly started: Promise<S>;

  constructor(
    readonly id: string,
    config: object,
    log: Logger,
    load: LoadDriver<S>,
  ) {
    this.started = load().then(
      (create) => {
        if (this.closed) throw closedError();
        try {
          this.source = create(this.id, config as never, log);
        } catch (err) {
          // Not expected (parse checked the config): reported like a driver that did not load.
          throw this.fail(err, log, 'source cannot be started');
        }
        return this.source;
      },
      (err: unknown) => {
        throw this.fail(err, log, 'source driver cannot be loaded');
      },
    );
    // Every use awaits `started` and sees its failure; this branch only keeps it from being unhandled.
    this.started.catch(() => {});
  }

  health(): SourceHealth {
    if (this.source) return this.source.health();
    const state = this.closed ? 'closed' : this.failure ? 'down' : 'connecting';
    if (this.failure) return { state, since: this.failedAt, lastError: this.failure.message, lastErrorAt: this.failedAt, reconnects: 0, inFlight: 0 };
    return { state, since: this.since, lastError: null, lastErrorAt: null, reconnects: 0, inFlight: this.waiting };
  }

  async check(timeoutMs?: number): Promise<CheckResult> {
    const begun = performance.now();
    let source: S;
    try {
      source = await this.started;
    } catch (err) {
      const error = err as SourceError;
      return { ok: false, latencyMs: Math.round(performance.now() - begun), failure: error.kind, message: error.message };
    }
    return source.check(timeoutMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    // Not loaded yet: the driver's source is then never made.
    const source = await this.started.catch(() => null);
    await source?.close();
  }

  private fail(err: unknown, log: Logger, what: string): SourceError {
    this.failure = new SourceError(err instanceof Error ? err.message : String(err), 'other', false, { cause: err });
    this.failedAt = new Date().toISOString();
    log.error(what, { source: this.id, type: this.type, error: err });
    return this.failure;
  }

  /** Runs `op` on the driver's source once it is loaded. */
  protected async call<T>(op: (source: S) => Promise<T>): Promise<T> {
    let source = this.source;
    if (source === null) {
      this.waiting++;
      try {
        source = await this.started;
      } finally {
        this.waiting--;
      }
    }
    return op(source);
  }
}

function closedError(): SourceError {
  return new SourceError('the source was closed before its driver loaded', 'other', false);
}

export class DeferredSqlSource extends DeferredSource<SqlSource> implements SqlSource {
  constructor(
    readonly type: 'mysql' | 'postgresql',
    id: string,
    config: object,
    log: Logger,
    load: LoadDriver<SqlSource>,
  ) {
    super(id, config, log, load);
  }

  insert(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void> {
    return this.call((s) => s.insert(table, columns, rows));
  }

  query(sql: string, params: readonly unknown[]): Promise<Row[]> {
    return this.call((s) => s.query(sql, params));
  }

  queryWithColumns(sql: string, params: readonly unknown[]): Promise<SqlResult> {
    return this.call((s) => s.queryWithColumns(sql, params));
  }
}

export class DeferredRedisSource extends DeferredSource<RedisSource> implements RedisSource {
  readonly type = 'redis' as const;

  pipeline(commands: readonly (readonly (string | Buffer)[])[]): Promise<void> {
    return this.call((s) => s.pipeline(commands));
  }

  command(args: readonly (string | Buffer)[]): Promise<unknown> {
    return this.call((s) => s.command(args));
  }
}

export class DeferredKafkaSource extends DeferredSource<KafkaSource> implements KafkaSource {
  readonly type = 'kafka' as const;

  send(batch: readonly { topic: string; messages: readonly KafkaMessage[] }[]): Promise<void> {
    return this.call((s) => s.send(batch));
  }
}

export class DeferredMongoSource extends DeferredSource<MongoSource> implements MongoSource {
  readonly type = 'mongodb' as const;

  insertMany(collection: string, docs: readonly Record<string, unknown>[]): Promise<void> {
    return this.call((s) => s.insertMany(collection, docs));
  }

  findOne(collection: string, filter: Record<string, unknown>): Promise<Row | null> {
    return this.call((s) => s.findOne(collection, filter));
  }

  find(collection: string, filter: Record<string, unknown>, limit: number): Promise<Row[]> {
    return this.call((s) => s.find(collection, filter, limit));
  }
}
