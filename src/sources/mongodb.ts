// Owns the mongodb source (main thread): one MongoClient per source whose own pool is the
// source's (maxPoolSize = poolSize; our limiter keeps the same bound and the arrival order), its
// health kept from the driver's heartbeats and the operations' outcomes, and check() on a
// separate short-lived client. Server selection is bounded by connectTimeout, so operations fail
// fast while no server answers. Server errors about the data (duplicate key, validation, bad
// value) are non-transient; network errors, timeouts and a primary stepping down are transient.
import { MongoClient, type MongoClientOptions } from 'mongodb';
import type { Logger } from '../log/index.ts';
import { networkKindIn, safeMessage } from './driver-error.ts';
import { HealthTracker } from './health.ts';
import { Limiter } from './limiter.ts';
import { mongoConnectionString, type MongoConfig } from './mongodb-config.ts';
import { OperationRunner } from './operation-runner.ts';
import { withTimeout } from './timeout.ts';
import { SourceError, type CheckResult, type MongoSource, type Row, type SourceHealth } from './types.ts';

export { parseMongoConfig, type MongoConfig } from './mongodb-config.ts';

/** Server error codes after which a retry can succeed (shutdown, step down, network, time limit). */
const TRANSIENT_CODES = new Set([6, 7, 50, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
const AUTH_FAILED = 18;
const UNAUTHORIZED = 13;

export function createMongoSource(id: string, config: MongoConfig, log: Logger): MongoSource {
  return new MongoDriverSource(id, config, log.child({ source: id, type: 'mongodb' }));
}

class MongoDriverSource implements MongoSource {
  readonly type = 'mongodb' as const;
  private readonly client: MongoClient;
  private readonly healthTracker: HealthTracker;
  private readonly runner: OperationRunner;

  constructor(
    readonly id: string,
    private readonly config: MongoConfig,
    log: Logger,
  ) {
    this.client = new MongoClient(mongoConnectionString(config), {
      ...clientOptions(config, config.connectTimeout),
      maxPoolSize: config.poolSize,
      // A stuck socket is given up on after the deadline and a connect's worth more.
      socketTimeoutMS: config.requestTimeout + config.connectTimeout,
    });
    const limiter = new Limiter(config.poolSize);
    this.healthTracker = new HealthTracker({
      log,
      inFlight: () => limiter.active,
      probe: () => this.client.db(config.database).command({ ping: 1 }).then(() => undefined),
    });
    this.runner = new OperationRunner({
      health: this.healthTracker,
      limiter,
      timeoutMs: config.requestTimeout,
      toSourceError: (err) => this.toSourceError(err),
    });
    this.client.on('serverHeartbeatSucceeded', () => this.healthTracker.succeeded());
    this.client.on('serverHeartbeatFailed', (event) => this.healthTracker.wentDown(this.toSourceError(event.failure)));
    // No eager connect(): a failed connect() closes the client's topology for good, while an
    // operation (or the probe's ping) connects it on demand, again after every failure.
  }

  health(): SourceHealth {
    return this.healthTracker.snapshot();
  }

  insertMany(collection: string, docs: readonly Record<string, unknown>[]): Promise<void> {
    return this.runner.run('mongodb insertMany', async () => {
      if (docs.length === 0) return;
      // Copies: the driver adds an _id to the documents it is given.
      await this.client
        .db(this.config.database)
        .collection(collection)
        .insertMany(docs.map((d) => ({ ...d })));
    });
  }

  findOne(collection: string, filter: Record<string, unknown>): Promise<Row | null> {
    return this.runner.run('mongodb findOne', () => this.client.db(this.config.database).collection(collection).findOne(filter));
  }

  find(collection: string, filter: Record<string, unknown>, limit: number): Promise<Row[]> {
    return this.runner.run('mongodb find', () => this.client.db(this.config.database).collection(collection).find(filter).limit(Math.max(1, limit)).toArray());
  }

  async check(timeoutMs = 5000): Promise<CheckResult> {
    const started = performance.now();
    const probe = new MongoClient(mongoConnectionString(this.config), { ...clientOptions(this.config, timeoutMs), maxPoolSize: 1 });
    try {
      await withTimeout(
        probe.connect().then(() => probe.db(this.config.database).command({ ping: 1 })),
        timeoutMs,
        'mongodb check',
      );
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const error = this.toSourceError(err);
      return { ok: false, latencyMs: Math.round(performance.now() - started), failure: error.kind, message: error.message };
    } finally {
      await probe.close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.healthTracker.close();
    await this.client.close();
  }

  private toSourceError(err: unknown): SourceError {
    if (err instanceof SourceError) return err;
    const message = safeMessage(err, [this.config.password]);
    const options = { cause: err };
    const name = err instanceof Error ? err.name : '';
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code === 'number' && (name === 'MongoServerError' || name === 'MongoBulkWriteError' || name === 'MongoWriteConcernError')) {
      if (code === AUTH_FAILED) return new SourceError(message, 'auth', true, options);
      if (code === UNAUTHORIZED) return new SourceError(message, 'auth', false, options);
      if (code === 50 || code === 262) return new SourceError(message, 'timeout', true, options);
      const retryable = (err as { hasErrorLabel?: (l: string) => boolean }).hasErrorLabel?.('RetryableWriteError') === true;
      return new SourceError(message, 'database', retryable || TRANSIENT_CODES.has(code), options);
    }
    const network = networkKindIn(err);
    if (network !== null) return new SourceError(message, network, true, options);
    if (/Timeout/.test(name) || name === 'MongoServerSelectionError') return new SourceError(message, 'timeout', true, options);
    if (/^Mongo(Network|Topology|PoolCleared|Server|NotConnected)/.test(name)) return new SourceError(message, 'other', true, options);
    // A bulk write that failed before any server answered wraps the connection error.
    const cause = (err as { cause?: unknown } | null)?.cause;
    if (name === 'MongoBulkWriteError' && cause instanceof Error) return this.toSourceError(cause);
    if (/Authentication|Credentials/i.test(name) || /auth/i.test(message)) return new SourceError(message, 'auth', true, options);
    return new SourceError(message, 'other', false, options);
  }
}

function clientOptions(config: MongoConfig, connectTimeout: number): MongoClientOptions {
  const options: MongoClientOptions = {
    connectTimeoutMS: connectTimeout,
    serverSelectionTimeoutMS: connectTimeout,
    appName: 'spindle',
  };
  if (config.username !== undefined) options.auth = { username: config.username, password: config.password ?? '' };
  if (config.authSource !== undefined) options.authSource = config.authSource;
  if (config.tls !== null) {
    options.tls = true;
    options.tlsAllowInvalidCertificates = !config.tls.rejectUnauthorized;
    if (config.tls.ca !== undefined) options.ca = config.tls.ca;
  }
  return options;
}
