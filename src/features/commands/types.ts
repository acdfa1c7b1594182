// Commands (spec 4.9): inbound bridges that consume a queue or a stream of another system and
// publish each record into this broker, and registrations (NACOS) that announce this broker's
// endpoints to another system while they run. This file is the contract: the types the spec
// names, a command as stored, the record a consumer hands to delivery, what a command learns of
// the broker, and what one type implements (one file per type, registered in registry.ts). Main
// thread.
import type { NodeEndpoint } from '../feature.ts';
import type { Logger } from '../../log/index.ts';

/** Every command type spec 4.9 names; registry.ts says which this build implements. */
export const SPEC_COMMAND_TYPES = ['KAFKA', 'ROCKETMQ', 'RABBITMQ', 'PULSAR', 'NACOS'] as const;
export type CommandType = (typeof SPEC_COMMAND_TYPES)[number];

/** A command as stored (admin documents of kind 'command'), with its passwords; shown through
 * the API without them (redact). `config` is what the client sent, validated by its type. */
export interface CommandDoc {
  id: string;
  name: string;
  type: CommandType;
  config: Record<string, unknown>;
  enabled: boolean;
  createTime: string;
}

/** starting: first connect; running: consuming; reconnecting: the server is down or the
 * connection broke, tried again with backoff; failed: refused for good (bad credentials are
 * retried, a missing queue or an invalid topic is not) until the command is started again;
 * stopped: disabled or stopping. */
export type CommandState = 'starting' | 'running' | 'reconnecting' | 'failed' | 'stopped';
export const COMMAND_STATES: readonly CommandState[] = ['starting', 'running', 'reconnecting', 'failed', 'stopped'];

/** One record of the source: `fields` are what the MQTT mapping's templates read (`${key}`,
 * `${value.x}`, `${headers.h}`, ...), `value` the default payload. */
export interface InboundRecord {
  fields: Record<string, unknown>;
  value: Buffer;
  /** The source message's headers (Kafka headers, AMQP headers, Pulsar and RocketMQ properties)
   * as text: where a W3C `traceparent` and `tracestate` come from (mapping.ts). */
  headers: Record<string, string>;
}

/** A message for the broker, as Supervisor.publishBatch takes it (worker/messages.ts BatchMessage). */
export interface InboundMessage {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  expiresAt: number;
  props: Uint8Array | null;
  /** Who the message is traced as (OpenTelemetry traces): `command:<id>`. */
  tracedAs?: string;
  /** The source record's W3C trace context headers (BatchMessage.traceparent, .tracestate). */
  traceparent?: string;
  tracestate?: string;
}

/** Publishes records into the broker: resolves true once every one of them is routed and stored
 * (or counted as failed: a topic no template can fix), false when the command is stopping
 * first. Never rejects: a broker that is down is retried with backoff. */
export type Deliver = (records: InboundRecord[]) => Promise<boolean>;

/** A connection to the source that consumes until closed. One per connection attempt. */
export interface Consumer {
  /** Connects and starts consuming; rejects when it cannot. */
  open(): Promise<void>;
  /** Rejects when the connection fails after open() (never resolves otherwise). */
  readonly failed: Promise<never>;
  /** Stops consuming (what is being delivered is abandoned unacknowledged) and disconnects. */
  close(): Promise<void>;
  /** Records waiting in the source for this command (Kafka: high watermark - committed offset,
   * summed over partitions; RabbitMQ: the queue's ready messages; Pulsar: the subscription's
   * msgBacklog); null when unknown (RocketMQ: always). */
  lag(): Promise<number | null>;
  /** What /command/runtime shows beside the counters (a registration: its instances and when the
   * server last confirmed them); absent for an inbound bridge. */
  details?(): Record<string, unknown>;
}

/** Why a connection failed, and whether trying again can help. */
export class ConsumerError extends Error {
  constructor(
    message: string,
    readonly retriable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ConsumerError';
  }
}

/** An MQTT endpoint (listener) of this broker as a registration announces it. */
/** An enabled listener of this node, as a registration announces it. */
export type ListenerInfo = NodeEndpoint;

/** What a command may know of the broker (the admin module gives it: the supervisor's endpoint
 * registry and the configuration's nodeName). */
export interface BrokerInfo {
  nodeName: string;
  /** The enabled endpoints now, read again whenever asked (they change at run time). */
  endpoints(): ListenerInfo[];
}

export interface ConsumerContext {
  id: string;
  deliver: Deliver;
  log: Logger;
  broker: BrokerInfo;
}

/** What one command type implements. */
export interface CommandTypeSpec<C = unknown> {
  type: CommandType;
  /** The config fields it reads (beside the MQTT mapping's): any other is refused, so a typo
   * is not silently ignored. */
  fields: readonly string[];
  /** false: a registration (NACOS), which publishes nothing: no MQTT mapping (mqttTopic,
   * payload, qos, retain are refused as unknown fields). Absent: an inbound bridge. */
  publishes?: false;
  /** Validates a config (throws SourceConfigError naming `config.<field>`); answers its
   * normalized form for create(). */
  parse(raw: Record<string, unknown>): C;
  /** The secrets in a parsed config, kept out of error messages. */
  secrets(config: C): string[];
  /** A consumer for one connection attempt. Loads the type's consumer module (and its library)
   * on first use; rejects (a ModuleLoadError) when it cannot be loaded. */
  create(config: C, ctx: ConsumerContext): Promise<Consumer>;
}
