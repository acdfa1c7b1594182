// The KAFKA command type (main thread): a kafkajs consumer in its own group (kafka-consumer.ts).
// This file is what the registry and the API need (fields, parse, secrets); the consumer's file,
// with kafkajs, is loaded when the first command of this type starts, never at the broker's start
// (issue 26).
import { lazyImport } from '../../lazy/lazy-import.ts';
import { KAFKA_FIELDS, kafkaSecrets, parseKafkaCommandConfig, type KafkaCommandConfig } from './kafka-config.ts';
import type { CommandTypeSpec } from './types.ts';

const consumerModule = lazyImport('kafkajs', () => import('./kafka-consumer.ts'));

export const KAFKA_COMMAND: CommandTypeSpec<KafkaCommandConfig> = {
  type: 'KAFKA',
  fields: KAFKA_FIELDS,
  parse: parseKafkaCommandConfig,
  secrets: kafkaSecrets,
  create: async (config, ctx) => new (await consumerModule()).KafkaCommandConsumer(config, ctx),
};
