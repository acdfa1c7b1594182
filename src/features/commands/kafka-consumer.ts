// The KAFKA command type (main thread): a kafkajs consumer in its own group that publishes each
// record into the broker. At least once: offsets are resolved and committed only after
// publishBatch resolved for the records before them (autoCommit off, eachBatchAutoResolve off); a
// batch is published at most `batchSize` records at a time, and the partition is not fetched
// further meanwhile (kafkajs awaits eachBatch): the backpressure. kafkajs does not restart a
// crashed consumer itself: the runner reconnects with its backoff. Lag: per partition, high
// watermark minus committed offset, summed, from an admin connection.
import { Kafka, type Admin, type Consumer as KafkaJsConsumer, type EachBatchPayload, type KafkaMessage } from 'kafkajs';

import { kafkaClientOptions, kafkaSourceError, KafkaSockets } from '../../sources/kafka.ts';
import { FailureSignal } from './failure-signal.ts';
import { headerText } from './record-headers.ts';
import { kafkaSecrets, type KafkaCommandConfig } from './kafka-config.ts';
import { ConsumerError, type Consumer, type ConsumerContext, type InboundRecord } from './types.ts';

/** kafkajs retries a request a few times before it gives up; the runner's backoff does the rest. */
const RETRY = { initialRetryTime: 300, maxRetryTime: 5000, retries: 3 };
/** kafkajs's default heartbeatInterval: it sends at most one per interval anyway. */
const HEARTBEAT_MS = 3000;

export class KafkaCommandConsumer implements Consumer {
  private readonly kafka: Kafka;
  private readonly consumer: KafkaJsConsumer;
  private readonly groupId: string;
  private readonly failure = new FailureSignal();
  private admin: Promise<Admin> | null = null;
  /** Closed: no admin connection is made any more (a lag sample still running would leave one
   * open, and with it the process). */
  private closed = false;
  /** The client's sockets: those kafkajs leaves open are ended at close. */
  private readonly sockets = new KafkaSockets();

  constructor(
    private readonly config: KafkaCommandConfig,
    private readonly ctx: ConsumerContext,
  ) {
    const c = config.connection;
    this.kafka = new Kafka({ ...kafkaClientOptions(c, c.connectTimeout, c.requestTimeout, ctx.log, this.sockets), retry: RETRY });
    this.groupId = config.groupId ?? `spindle-command-${ctx.id}`;
    this.consumer = this.kafka.consumer({ groupId: this.groupId, retry: { ...RETRY, restartOnFailure: async () => false } });
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => this.failure.fail(this.error(payload.error)));
  }

  get failed(): Promise<never> {
    return this.failure.promise;
  }

  async open(): Promise<void> {
    try {
      await this.consumer.connect();
      await this.consumer.subscribe({ topics: this.config.topics, fromBeginning: this.config.fromBeginning });
      await this.consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: (payload) => this.eachBatch(payload) });
    } catch (err) {
      throw this.error(err);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const admin = this.admin;
    this.admin = null;
    await Promise.allSettled([this.consumer.disconnect(), admin?.then((a) => a.disconnect())]);
    this.sockets.destroyAll();
  }

  async lag(): Promise<number | null> {
    if (this.closed) return null;
    this.admin ??= this.connectAdmin();
    const admin = await this.admin;
    const committed = new Map<string, number>();
    for (const t of await admin.fetchOffsets({ groupId: this.groupId, topics: this.config.topics })) {
      for (const p of t.partitions) committed.set(`${t.topic}/${p.partition}`, Number(p.offset));
    }
    let lag = 0;
    for (const topic of this.config.topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        const done = committed.get(`${topic}/${p.partition}`) ?? -1;
        // No committed offset yet: the group starts at the low (fromBeginning) or high watermark.
        const from = done >= 0 ? done : Number(this.config.fromBeginning ? p.low : p.high);
        lag += Math.max(0, Number(p.high) - from);
      }
    }
    return lag;
  }

  private connectAdmin(): Promise<Admin> {
    const admin = this.kafka.admin();
    return admin.connect().then(
      async () => {
        if (!this.closed) return admin;
        // Closed while it connected: let go of it at once.
        await admin.disconnect();
        throw new Error('the command stopped');
      },
      (err: unknown) => {
        this.admin = null;
        throw this.error(err);
      },
    );
  }

  /** Publishes the batch `batchSize` records at a time, committing after each. */
  private async eachBatch({ batch, resolveOffset, commitOffsetsIfNecessary, uncommittedOffsets, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition, messages } = batch;
    for (let i = 0; i < messages.length; i += this.config.batchSize) {
      if (!isRunning() || isStale()) return;
      const chunk = messages.slice(i, i + this.config.batchSize);
      // While the broker is down the batch waits: heartbeats keep this member in its group.
      const beat = setInterval(() => heartbeat().catch((err: unknown) => this.ctx.log.debug('kafka heartbeat failed while publishing', { error: (err as Error).message })), HEARTBEAT_MS);
      let delivered: boolean;
      try {
        delivered = await this.ctx.deliver(chunk.map((m) => kafkaRecord(topic, partition, m)));
      } finally {
        clearInterval(beat);
      }
      if (!delivered) return;
      resolveOffset(chunk[chunk.length - 1].offset);
      await commitOffsetsIfNecessary(uncommittedOffsets());
      await heartbeat();
    }
  }

  private error(err: unknown): ConsumerError {
    const e = kafkaSourceError(err, kafkaSecrets(this.config));
    return new ConsumerError(`kafka (${e.kind}): ${e.message}`, e.transient, { cause: err });
  }
}

/** The fields a KAFKA command's templates read: topic, partition, offset, key, value, headers, timestamp. */
function kafkaRecord(topic: string, partition: number, m: KafkaMessage): InboundRecord {
  const value = m.value ?? Buffer.alloc(0);
  const headers = headerText(m.headers);
  return { value, headers, fields: { topic, partition, offset: m.offset, key: m.key, value, headers, timestamp: m.timestamp } };
}
