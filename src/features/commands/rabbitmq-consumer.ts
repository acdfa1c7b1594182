// The RABBITMQ command type (main thread): an amqplib consumer of one queue (optionally bound to an
// exchange, optionally declared) that publishes each delivery into the broker. At least once:
// deliveries are acknowledged (all up to the last of a batch) only after publishBatch resolved;
// what is unacknowledged when the connection ends goes back to the queue. `prefetch` bounds the
// deliveries the command holds: while a batch is being published the rest wait in RabbitMQ, the
// backpressure. Lag: the queue's ready messages. A missing queue or exchange (404) or a declare
// that contradicts what exists (406) fails the command; anything else is reconnected.
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';

import { networkKindIn, safeMessage } from '../../sources/driver-error.ts';
import { tlsOptions } from '../../sources/config-fields.ts';
import { FailureSignal } from './failure-signal.ts';
import { rabbitMqSecrets, type RabbitMqConfig } from './rabbitmq-config.ts';
import { headerText } from './record-headers.ts';
import { ConsumerError, type Consumer, type ConsumerContext, type InboundRecord } from './types.ts';

/** AMQP reply codes after which connecting again cannot help: NOT_FOUND, PRECONDITION_FAILED. */
const FATAL_CODES = new Set([404, 406]);

export class RabbitMqCommandConsumer implements Consumer {
  private readonly failure = new FailureSignal();
  private connection: ChannelModel | null = null;
  private channel: Channel | null = null;
  private consumerTag: string | null = null;
  private channelError: Error | undefined;
  private readonly pending: ConsumeMessage[] = [];
  private flushing = false;
  private closing = false;

  constructor(
    private readonly config: RabbitMqConfig,
    private readonly ctx: ConsumerContext,
  ) {}

  get failed(): Promise<never> {
    return this.failure.promise;
  }

  async open(): Promise<void> {
    const c = this.config;
    try {
      const connection = await amqp.connect(
        { protocol: c.protocol, hostname: c.hostname, port: c.port, username: c.username, password: c.password, vhost: c.vhost, heartbeat: c.heartbeat },
        { timeout: c.connectTimeout, ...(c.tls ? tlsOptions(c.tls) : {}) },
      );
      this.connection = connection;
      // 'error' is followed by 'close', which carries it: the failure is reported there.
      connection.on('error', () => {});
      connection.on('close', (err?: Error) => this.lost('connection closed', err));
      const channel = await connection.createChannel();
      this.channel = channel;
      channel.on('error', (err: Error) => {
        this.channelError = err;
      });
      // A closing connection closes its channels first: a tick later the connection's reason
      // (the server shutting down, a missed heartbeat) is reported instead, if there is one.
      channel.on('close', () => setImmediate(() => this.lost('channel closed', this.channelError)));
      await this.prepare(channel);
      await channel.prefetch(c.prefetch);
      const { consumerTag } = await channel.consume(c.queue, (m) => this.received(m), { noAck: false });
      this.consumerTag = consumerTag;
    } catch (err) {
      throw this.error(err);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const { channel, connection, consumerTag } = this;
    // On a connection that already broke these fail: there is nothing left to end then.
    if (channel && consumerTag) await channel.cancel(consumerTag).catch(() => {});
    // Closing the connection closes the channel: what it has not acknowledged is requeued.
    await connection?.close().catch(() => {});
  }

  async lag(): Promise<number | null> {
    if (!this.channel || this.closing) return null;
    return (await this.channel.checkQueue(this.config.queue)).messageCount;
  }

  /** The queue (and its binding) as the config asks: declared, or required to exist. */
  private async prepare(channel: Channel): Promise<void> {
    const c = this.config;
    if (c.declare) {
      await channel.assertQueue(c.queue, { durable: true });
      if (c.exchange !== null) await channel.assertExchange(c.exchange, c.exchangeType, { durable: true });
    } else {
      await channel.checkQueue(c.queue);
      if (c.exchange !== null) await channel.checkExchange(c.exchange);
    }
    if (c.exchange !== null) await channel.bindQueue(c.queue, c.exchange, c.routingKey);
  }

  private received(m: ConsumeMessage | null): void {
    // null: the server cancelled the consumer (the queue was deleted).
    if (m === null) return this.lost('consumer cancelled by the server (queue deleted?)');
    this.pending.push(m);
    if (!this.flushing) void this.flush();
  }

  /** Publishes what has arrived, a batch at a time, and acknowledges each batch once published. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0 && !this.closing) {
        const batch = this.pending.splice(0, this.config.prefetch);
        const published = await this.ctx.deliver(batch.map((m) => rabbitRecord(this.config.queue, m)));
        if (!published || this.closing) return;
        this.channel!.ack(batch[batch.length - 1], true);
      }
    } catch (err) {
      this.lost('acknowledgement failed', err);
    } finally {
      this.flushing = false;
    }
  }

  private lost(what: string, err?: unknown): void {
    if (this.closing) return;
    this.failure.fail(err === undefined ? new ConsumerError(`rabbitmq: ${what}`, true) : this.error(err, `${what}: `));
  }

  private error(err: unknown, prefix = ''): ConsumerError {
    if (err instanceof ConsumerError) return err;
    const code = (err as { code?: unknown }).code;
    const network = networkKindIn(err);
    const message = `rabbitmq${network ? ` (${network})` : ''}: ${prefix}${safeMessage(err, rabbitMqSecrets(this.config))}`;
    return new ConsumerError(message, !(typeof code === 'number' && FATAL_CODES.has(code)), { cause: err });
  }
}

/** The fields a RABBITMQ command's templates read: queue, exchange, routingKey, redelivered,
 * value, headers and properties (contentType, messageId, correlationId, type, appId, timestamp). */
function rabbitRecord(queue: string, m: ConsumeMessage): InboundRecord {
  const p = m.properties;
  return {
    value: m.content,
    headers: headerText(p.headers),
    fields: {
      queue,
      exchange: m.fields.exchange,
      routingKey: m.fields.routingKey,
      redelivered: m.fields.redelivered,
      value: m.content,
      headers: p.headers ?? {},
      properties: { contentType: p.contentType, messageId: p.messageId, correlationId: p.correlationId, type: p.type, appId: p.appId, timestamp: p.timestamp },
    },
  };
}
