// The ROCKETMQ command type (main thread): a RocketMQ 5 SimpleConsumer (rocketmq-client-nodejs, the
// proxy's gRPC API) in its consumer group that publishes each message into the broker. At least
// once: a batch received is acknowledged (each message) only after publishBatch resolved; what is
// not acknowledged becomes visible again after `invisibleDuration` and is received again. One
// receive at a time, and the next only after the batch was published: the backpressure. The
// topic and the group must exist (the gRPC client cannot create them): a missing topic fails the
// command; so does a missing group, which the client shows only as a startup that never ends,
// hence the startupTimeout. Anything else (the proxy down, the connection lost) is reconnected.
// Lag: null (the gRPC API does not expose a group's backlog).
import { PassThrough } from 'node:stream';
import { format } from 'node:util';

import { BadRequestException, NotFoundException, SimpleConsumer, type ILogger, type MessageView, type SimpleConsumerOptions } from 'rocketmq-client-nodejs';

import type { Logger } from '../../log/index.ts';
import { networkKindIn, safeMessage } from '../../sources/driver-error.ts';
import { FailureSignal } from './failure-signal.ts';
import { rocketMqSecrets, type RocketMqConfig } from './rocketmq-config.ts';
import { headerText } from './record-headers.ts';
import { ConsumerError, type Consumer, type ConsumerContext, type InboundRecord } from './types.ts';

/** The client's protected route cache tells whether startup got past fetching the topic's route.
 * And a workaround: a telemetry session whose stream fails (a group the broker does not know)
 * renews it a second later, also after shutdown(), forever: once shut down it gets an inert
 * stream, so a closed consumer really stops. */
class CommandSimpleConsumer extends SimpleConsumer {
  private down = false;

  hasRoute(): boolean {
    return this.topicRouteCache.size > 0;
  }

  override async shutdown(): Promise<void> {
    this.down = true;
    await super.shutdown();
  }

  override createTelemetryStream(endpoints: Parameters<SimpleConsumer['createTelemetryStream']>[0]): ReturnType<SimpleConsumer['createTelemetryStream']> {
    if (this.down) return new PassThrough({ objectMode: true }) as unknown as ReturnType<SimpleConsumer['createTelemetryStream']>;
    return super.createTelemetryStream(endpoints);
  }
}

export class RocketMqCommandConsumer implements Consumer {
  private readonly failure = new FailureSignal();
  private readonly clientLog: ClientLogger;
  private consumer: CommandSimpleConsumer | null = null;
  private closing = false;

  constructor(
    private readonly config: RocketMqConfig,
    private readonly ctx: ConsumerContext,
  ) {
    this.clientLog = new ClientLogger(ctx.log, rocketMqSecrets(config));
  }

  get failed(): Promise<never> {
    return this.failure.promise;
  }

  async open(): Promise<void> {
    const c = this.config;
    const options: SimpleConsumerOptions = {
      endpoints: c.endpoints,
      namespace: c.namespace,
      sslEnabled: c.tls,
      requestTimeout: c.requestTimeout,
      consumerGroup: c.consumerGroup,
      subscriptions: new Map([[c.topic, c.tag]]),
      awaitDuration: c.awaitDuration,
      logger: this.clientLog,
    };
    if (c.credentials) options.sessionCredentials = { accessKey: c.credentials.accessKey, accessSecret: c.credentials.secretKey };
    let consumer: CommandSimpleConsumer;
    try {
      consumer = new CommandSimpleConsumer(options);
    } catch (err) {
      throw this.error(err);
    }
    this.consumer = consumer;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.startupTimedOut(consumer)), c.startupTimeout);
    });
    try {
      await Promise.race([consumer.startup(), deadline]);
    } catch (err) {
      throw this.error(err);
    } finally {
      clearTimeout(timer);
    }
    void this.receiveLoop(consumer);
  }

  async close(): Promise<void> {
    this.closing = true;
    // A receive in flight ends with the connection; what it held is not acknowledged.
    await this.consumer?.shutdown().catch(() => {});
  }

  lag(): Promise<number | null> {
    return Promise.resolve(null);
  }

  /** The client never finishes a startup whose group the broker does not know (the telemetry
   * stream is refused, the client only logs it): with a route fetched the broker is up, so that
   * is the cause; without, the server is slow or unreachable and it is tried again. */
  private startupTimedOut(consumer: CommandSimpleConsumer): ConsumerError {
    const c = this.config;
    const said = this.clientLog.lastProblem ? `; the client said: ${this.clientLog.lastProblem}` : '';
    if (consumer.hasRoute()) {
      return new ConsumerError(
        `rocketmq: the consumer did not start within ${c.startupTimeout} ms: the consumer group ${JSON.stringify(c.consumerGroup)} must exist on the broker (create it: mqadmin updateSubGroup -g ${c.consumerGroup})${said}`,
        false,
      );
    }
    return new ConsumerError(`rocketmq: no route for topic ${JSON.stringify(c.topic)} within ${c.startupTimeout} ms${said}`, true);
  }

  /** Receives a batch, publishes it, acknowledges it; again until closed or the connection fails. */
  private async receiveLoop(consumer: CommandSimpleConsumer): Promise<void> {
    const c = this.config;
    try {
      while (!this.closing) {
        const messages = await consumer.receive(c.batchSize, c.invisibleDuration);
        if (this.closing) return;
        if (messages.length === 0) continue;
        const published = await this.ctx.deliver(messages.map(rocketRecord));
        if (!published || this.closing) return;
        await Promise.all(messages.map((m) => consumer.ack(m)));
      }
    } catch (err) {
      if (!this.closing) this.failure.fail(this.error(err));
    }
  }

  private error(err: unknown): ConsumerError {
    if (err instanceof ConsumerError) return err;
    const cause = rootCause(err);
    const message = safeMessage(cause, rocketMqSecrets(this.config));
    if (cause instanceof NotFoundException) {
      const what = cause.code === 40403 ? `the consumer group ${JSON.stringify(this.config.consumerGroup)} does not exist (create it: mqadmin updateSubGroup)` : `the topic ${JSON.stringify(this.config.topic)} does not exist (create it: mqadmin updateTopic)`;
      return new ConsumerError(`rocketmq (not found): ${what}: ${message}`, false, { cause: err });
    }
    if (cause instanceof BadRequestException) return new ConsumerError(`rocketmq (bad request): ${message}`, false, { cause: err });
    const network = networkKindIn(cause);
    return new ConsumerError(`rocketmq${network ? ` (${network})` : ''}: ${message}`, true, { cause: err });
  }
}

/** The client wraps a startup failure (twice): the innermost error says what happened. */
function rootCause(err: unknown): unknown {
  let e = err;
  for (let i = 0; i < 5 && e instanceof Error && e.cause !== undefined; i++) e = e.cause;
  return e;
}

/** The client's log (printf-style) into ours at debug; keeps its last warning or error, which is
 * all it tells of a group the broker refuses. Replaces its default egg-logger, which writes files
 * under ~/logs and throws once the client has shut down. */
class ClientLogger implements ILogger {
  lastProblem: string | null = null;

  constructor(
    private readonly log: Logger,
    private readonly secrets: string[],
  ) {}

  info(...args: unknown[]): void {
    this.write(args, false);
  }
  debug(...args: unknown[]): void {
    this.write(args, false);
  }
  warn(...args: unknown[]): void {
    this.write(args, true);
  }
  error(...args: unknown[]): void {
    this.write(args, true);
  }

  private write(args: unknown[], problem: boolean): void {
    if (this.log.level !== 'debug' && !problem) return;
    let text = format(...args);
    for (const s of this.secrets) if (s) text = text.split(s).join('******');
    // An error's stack follows its message: only the message.
    text = text.replace(/\n\s+at [\s\S]*$/, '').slice(0, 500);
    if (problem) this.lastProblem = text;
    this.log.debug('rocketmq client', { message: text });
  }
}

/** The fields a ROCKETMQ command's templates read: topic, tag, keys (joined by ","), messageId,
 * value, properties, bornTimestamp (ms), bornHost, deliveryAttempt, messageGroup. */
function rocketRecord(m: MessageView): InboundRecord {
  const properties = Object.fromEntries(m.properties);
  return {
    value: m.body,
    headers: headerText(properties),
    fields: {
      topic: m.topic,
      tag: m.tag ?? '',
      keys: m.keys.join(','),
      messageId: m.messageId,
      value: m.body,
      properties,
      bornTimestamp: m.bornTimestamp?.getTime() ?? null,
      bornHost: m.bornHost,
      deliveryAttempt: m.deliveryAttempt ?? null,
      messageGroup: m.messageGroup ?? '',
    },
  };
}
