// Owns the kafka source (main thread): one kafkajs producer per source (connected on the first
// send and reconnected by kafkajs itself; at most poolSize produce requests in flight, the rest
// wait in order), its health kept from the outcomes of its sends and probed with backoff while
// down, and check() on a separate short-lived admin connection. Broker errors kafkajs marks
// non-retriable (invalid topic, message too large) are non-transient; connection loss, timeouts
// and retriable broker errors (leader not available) are transient.
import net from 'node:net';
import tls from 'node:tls';

import { CompressionTypes, Kafka, logLevel, Partitioners, type ISocketFactory, type KafkaConfig as KafkaJsConfig, type LogEntry, type Producer, type SASLOptions } from 'kafkajs';
import type { Logger } from '../log/index.ts';
import { networkKindIn, safeMessage } from './driver-error.ts';
import { HealthTracker } from './health.ts';
import type { KafkaConfig } from './kafka-config.ts';
import { Limiter } from './limiter.ts';
import { OperationRunner } from './operation-runner.ts';
import { withTimeout } from './timeout.ts';
import { SourceError, type CheckResult, type KafkaMessage, type KafkaSource, type SourceHealth } from './types.ts';

export { parseKafkaConfig, type KafkaConfig } from './kafka-config.ts';

export function createKafkaSource(id: string, config: KafkaConfig, log: Logger): KafkaSource {
  return new KafkaJsSource(id, config, log.child({ source: id, type: 'kafka' }));
}

class KafkaJsSource implements KafkaSource {
  readonly type = 'kafka' as const;
  private readonly producer: Producer;
  private readonly healthTracker: HealthTracker;
  private readonly runner: OperationRunner;
  private connecting: Promise<void> | null = null;
  /** The producer's sockets: those left open are ended at close. */
  private readonly sockets = new KafkaSockets();

  constructor(
    readonly id: string,
    private readonly config: KafkaConfig,
    private readonly log: Logger,
  ) {
    const kafka = new Kafka({
      ...kafkaClientOptions(config, config.connectTimeout, config.requestTimeout, log, this.sockets),
      // kafkajs retries inside one send; our deadline (requestTimeout) bounds the whole of it.
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 3 },
    });
    this.producer = kafka.producer({
      allowAutoTopicCreation: true,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 3 },
    });
    this.producer.on(this.producer.events.DISCONNECT, () => {
      this.connecting = null;
    });
    const limiter = new Limiter(config.poolSize);
    this.healthTracker = new HealthTracker({ log, inFlight: () => limiter.active, probe: () => this.connect() });
    this.runner = new OperationRunner({
      health: this.healthTracker,
      limiter,
      timeoutMs: config.requestTimeout,
      toSourceError: (err) => this.toSourceError(err),
    });
  }

  health(): SourceHealth {
    return this.healthTracker.snapshot();
  }

  send(batch: readonly { topic: string; messages: readonly KafkaMessage[] }[]): Promise<void> {
    return this.runner.run('kafka send', async () => {
      if (batch.length === 0) return;
      await this.connect();
      await this.producer.sendBatch({
        topicMessages: batch.map(({ topic, messages }) => ({
          topic,
          messages: messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
        })),
        acks: this.config.acks,
        timeout: this.config.requestTimeout,
        compression: this.config.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      });
    });
  }

  async check(timeoutMs = 5000): Promise<CheckResult> {
    const started = performance.now();
    const admin = new Kafka({ ...kafkaClientOptions(this.config, timeoutMs, timeoutMs, this.log), retry: { retries: 0 } }).admin();
    try {
      // connect() fetches the cluster's metadata from a bootstrap broker: the one round trip.
      await withTimeout(admin.connect(), timeoutMs, 'kafka check');
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const error = this.toSourceError(err);
      return { ok: false, latencyMs: Math.round(performance.now() - started), failure: error.kind, message: error.message };
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.healthTracker.close();
    try {
      await withTimeout(this.producer.disconnect(), this.config.requestTimeout, 'kafka disconnect');
    } catch (err) {
      this.log.warn('kafka producer did not disconnect cleanly', { error: this.toSourceError(err).message });
    }
    this.sockets.destroyAll();
  }

  /** The producer's connection (metadata from a bootstrap broker), shared by concurrent sends. */
  private connect(): Promise<void> {
    this.connecting ??= this.producer.connect().catch((err: unknown) => {
      this.connecting = null;
      throw err;
    });
    return this.connecting;
  }

  private toSourceError(err: unknown): SourceError {
    return kafkaSourceError(err, [this.config.sasl?.password]);
  }
}

/** A kafkajs error as a SourceError: its kind, whether it is transient, its message without
 * `secrets`. Also used by the KAFKA command (src/features/commands). */
export function kafkaSourceError(err: unknown, secrets: readonly (string | undefined)[]): SourceError {
  if (err instanceof SourceError) return err;
  const message = safeMessage(err, secrets);
  const options = { cause: err };
  for (const e of chain(err)) {
    if (e.name === 'KafkaJSSASLAuthenticationError') return new SourceError(message, 'auth', true, options);
    if (e.name === 'KafkaJSProtocolError' || e.name === 'KafkaJSCreateTopicError') {
      const type = String((e as { type?: unknown }).type ?? '');
      if (/AUTHORIZATION|SASL/.test(type)) return new SourceError(message, 'auth', false, options);
      return new SourceError(message, 'database', (e as { retriable?: boolean }).retriable === true, options);
    }
  }
  const network = networkKindIn(err);
  if (network !== null) return new SourceError(message, network, true, options);
  const names = chain(err).map((e) => e.name);
  if (names.includes('KafkaJSRequestTimeoutError') || names.includes('KafkaJSTimeout')) return new SourceError(message, 'timeout', true, options);
  if (names.some((n) => n.startsWith('KafkaJS'))) return new SourceError(message, 'other', true, options);
  return new SourceError(message, 'other', false, options);
}

/** `err` and the errors it wraps (kafkajs: `cause`, `originalError`). */
function chain(err: unknown): Error[] {
  const out: Error[] = [];
  let e: unknown = err;
  while (e instanceof Error && out.length < 8 && !out.includes(e)) {
    out.push(e);
    const o = e as { originalError?: unknown; cause?: unknown };
    e = o.originalError ?? o.cause;
  }
  return out;
}

/**
 * kafkajs's own socket factory (TLS when asked, keep-alive), with the sockets unref'd and kept:
 * a connection kafkajs leaves open after a consumer's disconnect (seen when one is stopped while
 * it fetches) must not keep a stopping process alive until Kafka closes it as idle (10 minutes).
 * Its request queue's timers would (they are not unref'd), so whoever closes the client ends the
 * sockets still open with `destroyAll` (kafkajs then drops the connection and its timers).
 */
export class KafkaSockets {
  private readonly open = new Set<net.Socket>();

  readonly factory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    const socket = ssl
      ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...(ssl as tls.ConnectionOptions) }, onConnect)
      : net.connect({ host, port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    socket.unref();
    // A connection made once the client is closed (a fetch still running reconnects) ends at once.
    if (this.closed) {
      socket.destroy();
      return socket;
    }
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    return socket;
  };

  private closed = false;

  /** Ends every socket still open (after the client's own disconnect), and any made later. */
  destroyAll(): void {
    this.closed = true;
    for (const socket of this.open) socket.destroy();
    this.open.clear();
  }
}

/** The kafkajs client options of a kafka config (brokers, timeouts, TLS, SASL, its log lines at
 * debug level); `sockets` keeps the client's sockets. Also used by the KAFKA command (src/features/commands). */
export function kafkaClientOptions(config: KafkaConfig, connectTimeout: number, requestTimeout: number, log: Logger, sockets = new KafkaSockets()): KafkaJsConfig {
  const options: KafkaJsConfig = {
    clientId: config.clientId,
    brokers: config.brokers,
    connectionTimeout: connectTimeout,
    requestTimeout,
    logLevel: logLevel.WARN,
    socketFactory: sockets.factory,
    // kafkajs's own lines (retries, leader elections) go to our logger at debug level.
    logCreator: () =>
      function kafkajsLog({ namespace, log: entry }: LogEntry): void {
        const { message, ...fields } = entry;
        log.debug(`kafkajs ${namespace}: ${message}`, { error: fields.error });
      },
  };
  if (config.tls !== null) options.ssl = { ...config.tls };
  if (config.sasl !== null) {
    const { mechanism, username, password } = config.sasl;
    options.sasl = { mechanism, username, password } as SASLOptions;
  }
  return options;
}
