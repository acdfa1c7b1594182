// Owns the redis source (main thread): one ioredis client per source (commands are pipelined on
// its one connection; at most poolSize operations in flight, the rest wait in order), its health
// kept from the client's connection events and the operations' outcomes, and check() on a separate
// short-lived connection. The offline queue is off, so while the connection is lost operations
// fail at once (transient) instead of piling up; ioredis reconnects by itself with our backoff
// (1 s doubling to 5 s). Server replies about the data (WRONGTYPE, unknown command) are
// non-transient; connection loss, timeouts and a server busy loading are transient.
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../log/index.ts';
import { Backoff } from './backoff.ts';
import { networkKindIn, safeMessage } from './driver-error.ts';
import { HealthTracker } from './health.ts';
import { Limiter } from './limiter.ts';
import { OperationRunner } from './operation-runner.ts';
import type { RedisConfig } from './redis-config.ts';
import { withTimeout } from './timeout.ts';
import { SourceError, type CheckResult, type FailureKind, type RedisSource, type SourceHealth } from './types.ts';

export { parseRedisConfig, type RedisConfig } from './redis-config.ts';

/** Reply error prefixes after which a retry can succeed: the server is busy, not refusing the data. */
const BUSY_REPLIES = new Set(['LOADING', 'BUSY', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN', 'READONLY', 'OOM']);
const AUTH_REPLIES = new Set(['NOAUTH', 'WRONGPASS']);

export function createRedisSource(id: string, config: RedisConfig, log: Logger): RedisSource {
  return new IoRedisSource(id, config, log.child({ source: id, type: 'redis' }));
}

class IoRedisSource implements RedisSource {
  readonly type = 'redis' as const;
  private readonly client: Redis;
  private readonly healthTracker: HealthTracker;
  private readonly runner: OperationRunner;
  /** Kind of the last connection error the client reported (what "the stream isn't writeable" means). */
  private connectionKind: FailureKind = 'other';

  constructor(
    readonly id: string,
    private readonly config: RedisConfig,
    log: Logger,
  ) {
    const backoff = new Backoff(1000, 5000);
    this.client = new Redis({
      ...clientOptions(config, config.connectTimeout),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.requestTimeout,
      retryStrategy: function redisRetryDelay(times: number): number {
        if (times === 1) backoff.reset();
        return backoff.next();
      },
    });
    const limiter = new Limiter(config.poolSize);
    this.healthTracker = new HealthTracker({ log, inFlight: () => limiter.active, probe: () => this.client.ping().then(() => undefined) });
    this.runner = new OperationRunner({
      health: this.healthTracker,
      limiter,
      timeoutMs: config.requestTimeout,
      toSourceError: (err) => this.toSourceError(err),
    });
    this.client.on('ready', () => this.healthTracker.succeeded());
    this.client.on('error', (err: unknown) => {
      const error = this.toSourceError(err);
      if (error.transient) this.connectionKind = error.kind;
      if (error.transient) this.healthTracker.wentDown(error);
    });
    this.client.on('close', () => {
      if (this.healthTracker.current === 'up') this.healthTracker.wentDown(new SourceError('connection closed', this.connectionKind, true));
    });
  }

  health(): SourceHealth {
    return this.healthTracker.snapshot();
  }

  pipeline(commands: readonly (readonly (string | Buffer)[])[]): Promise<void> {
    return this.runner.run('redis pipeline', async () => {
      if (commands.length === 0) return;
      await this.ready();
      const pipeline = this.client.pipeline();
      for (const [name, ...args] of commands) pipeline.call(String(name), ...args);
      const results = await pipeline.exec();
      if (results === null) throw new SourceError('redis pipeline: no reply (connection lost)', this.connectionKind, true);
      const failed = results.findIndex(([err]) => err !== null);
      if (failed >= 0) {
        const err = results[failed][0] as Error;
        throw this.toSourceError(err, `command ${failed + 1} of ${commands.length} (${String(commands[failed][0])})`);
      }
    });
  }

  command(args: readonly (string | Buffer)[]): Promise<unknown> {
    if (args.length === 0) return Promise.reject(new SourceError('redis command: no command given', 'other', false));
    const [name, ...rest] = args;
    return this.runner.run('redis command', async () => {
      await this.ready();
      return this.client.call(String(name), ...rest);
    });
  }

  /** Resolves once the client is connected; rejects with the connection's error. Operations
   * wait for it only while the source is first connecting (down, the runner refuses them). */
  private ready(): Promise<void> {
    const client = this.client;
    if (client.status === 'ready') return Promise.resolve();
    if (client.status === 'end') return Promise.reject(new SourceError('the connection has ended', this.connectionKind, true));
    return new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        client.off('error', onError);
        resolve();
      };
      const onError = (err: unknown): void => {
        client.off('ready', onReady);
        reject(err);
      };
      client.once('ready', onReady);
      client.once('error', onError);
    });
  }

  async check(timeoutMs = 5000): Promise<CheckResult> {
    const started = performance.now();
    const probe = new Redis({
      ...clientOptions(this.config, timeoutMs),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    // connect() rejects with a bare "Connection is closed." after a DNS or socket error: the
    // error event carries the cause.
    let connectionError: unknown = null;
    probe.on('error', (err: unknown) => {
      connectionError ??= err;
    });
    try {
      await withTimeout(
        probe.connect().then(() => probe.ping()),
        timeoutMs,
        'redis check',
      );
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const error = this.toSourceError(connectionError !== null && !(err instanceof SourceError) ? connectionError : err);
      return { ok: false, latencyMs: Math.round(performance.now() - started), failure: error.kind, message: error.message };
    } finally {
      probe.disconnect();
    }
  }

  async close(): Promise<void> {
    this.healthTracker.close();
    try {
      await withTimeout(this.client.quit(), this.config.requestTimeout, 'redis quit');
    } catch {
      // Not connected or the server is gone: nothing left to end gracefully.
    } finally {
      this.client.disconnect();
    }
  }

  private toSourceError(err: unknown, context?: string): SourceError {
    if (err instanceof SourceError) return err;
    const message = (context ? `${context}: ` : '') + safeMessage(err, [this.config.password]);
    const options = { cause: err };
    if (err instanceof Error && err.name === 'ReplyError') {
      const prefix = err.message.split(' ', 1)[0];
      if (AUTH_REPLIES.has(prefix)) return new SourceError(message, 'auth', true, options);
      return new SourceError(message, 'database', BUSY_REPLIES.has(prefix), options);
    }
    const network = networkKindIn(err);
    if (network !== null) return new SourceError(message, network, true, options);
    if (err instanceof Error && /timed out/i.test(err.message)) return new SourceError(message, 'timeout', true, options);
    if (err instanceof Error && /ERR_TLS|SSL|certificate/i.test(err.message)) return new SourceError(message, 'tls', true, options);
    // "Stream isn't writeable", "Connection is closed", MaxRetriesPerRequestError: the connection is lost.
    return new SourceError(message, this.connectionKind, true, options);
  }
}

function clientOptions(config: RedisConfig, connectTimeout: number): RedisOptions {
  const options: RedisOptions = {
    host: config.host,
    port: config.port,
    db: config.database,
    connectTimeout,
    autoResubscribe: false,
  };
  if (config.username !== undefined) options.username = config.username;
  if (config.password !== undefined) options.password = config.password;
  if (config.tls !== null) options.tls = { servername: config.host, ...config.tls };
  return options;
}
