// The config of each command type as a schema: the fields kafka-config.ts, rabbitmq-config.ts,
// rocketmq-config.ts, pulsar-config.ts, nacos-config.ts and mapping.ts read, with their ranges and
// defaults. The /command/add body is discriminated by type with these (OpenAPI, and the console's
// forms); those modules still check what a schema cannot (topic templates, one field or another).
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';

import { configOf, int, optionalText, secret, stringMap, TLS } from '../../schema/form-fields.ts';
import type { CommandType } from './types.ts';

const choose = (values: readonly string[], fallback?: string) =>
  Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...values], ...(fallback ? { 'x-default': fallback } : {}) }));

/** Every bridge into MQTT: where a record goes (mapping.ts). */
const MAPPING: TProperties = {
  mqttTopic: Type.String({ minLength: 1, description: 'the MQTT topic template, e.g. kafka/${topic}/${key}' }),
  payload: optionalText('a template; empty: the record as it is'),
  qos: Type.Optional(Type.Unsafe<0 | 1 | 2>({ type: 'integer', enum: [0, 1, 2], 'x-default': 1 })),
  retain: Type.Optional(Type.Boolean({ 'x-default': false })),
};

export const COMMAND_CONFIG_SCHEMAS: Record<CommandType, TSchema> = {
  KAFKA: configOf({
    bootstrapServers: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'host:port,host:port (or url, or host/port)' })),
    url: optionalText('kafka://host:9092, kafka+ssl:// for TLS'),
    topic: optionalText('a Kafka topic (or topics)'),
    topics: Type.Optional(Type.Array(Type.String(), { description: 'several Kafka topics' })),
    groupId: optionalText('the consumer group (default spindle-<command id>)', { minLength: 1, maxLength: 255 }),
    fromBeginning: Type.Optional(Type.Boolean({ 'x-default': false })),
    username: optionalText('SASL (plain)'),
    password: secret('SASL'),
    tls: TLS,
    ...MAPPING,
  }, 'consumes Kafka topics'),
  RABBITMQ: configOf({
    url: optionalText('amqp://user:password@host:5672/vhost (or host/port)'),
    host: optionalText(),
    port: int(1, 65535, 5672),
    username: optionalText(),
    password: secret(),
    vhost: optionalText(),
    tls: TLS,
    queue: optionalText('the queue to consume'),
    exchange: optionalText('bind the queue to it'),
    exchangeType: choose(['direct', 'topic', 'fanout', 'headers']),
    routingKey: optionalText(),
    declare: Type.Optional(Type.Boolean({ description: 'declare the queue (and exchange) when absent' })),
    prefetch: int(1, 10_000, 100, 'messages unacknowledged at most'),
    heartbeat: int(0, 3600, 30, 's'),
    connectTimeout: int(100, 600_000, 5000, 'ms'),
    ...MAPPING,
  }, 'consumes a RabbitMQ queue'),
  ROCKETMQ: configOf({
    endpoints: Type.String({ minLength: 1, description: 'host:port of the proxy (several separated by ;)' }),
    namespace: optionalText(),
    tls: Type.Optional(Type.Boolean({ 'x-default': false })),
    accessKey: optionalText(),
    secretKey: secret(),
    consumerGroup: Type.String({ minLength: 1 }),
    topic: Type.String({ minLength: 1 }),
    tag: optionalText('a tag expression, default *'),
    batchSize: int(1, 32, 32),
    awaitDuration: int(5000, 20_000, 10_000, 'ms'),
    invisibleDuration: int(10_000, 43_200_000, 60_000, 'ms'),
    requestTimeout: int(1000, 60_000, 3000, 'ms'),
    startupTimeout: int(1000, 600_000, 30_000, 'ms'),
    ...MAPPING,
  }, 'consumes a RocketMQ 5 topic'),
  PULSAR: configOf({
    serviceUrl: Type.String({ minLength: 1, description: 'pulsar://host:6650 or http://host:8080' }),
    topic: Type.String({ minLength: 1 }),
    subscription: Type.String({ minLength: 1 }),
    subscriptionType: choose(['Exclusive', 'Shared', 'Failover', 'Key_Shared'], 'Shared'),
    receiverQueueSize: int(1, 10_000, 100),
    token: secret('a JWT'),
    connectTimeout: int(100, 600_000, 5000, 'ms'),
    ...MAPPING,
  }, 'consumes a Pulsar topic'),
  NACOS: configOf({
    serverAddr: Type.String({ minLength: 1, description: 'host[:port] of the Nacos server' }),
    tls: Type.Optional(Type.Boolean({ 'x-default': false })),
    namespace: optionalText('default public'),
    group: optionalText('default DEFAULT_GROUP'),
    serviceName: Type.String({ minLength: 1 }),
    clusterName: optionalText('default DEFAULT'),
    weight: Type.Optional(Type.Number({ minimum: 0.01, maximum: 10_000, 'x-default': 1 })),
    ip: optionalText('the address to advertise'),
    username: optionalText(),
    password: secret(),
    metadata: stringMap('key -> value'),
    endpoints: Type.Optional(Type.Array(Type.String(), { description: 'endpoint ids (empty: every enabled MQTT endpoint)' })),
  }, 'registers the broker\'s endpoints in Nacos'),
};
