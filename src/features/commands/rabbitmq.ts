// The RABBITMQ command type (main thread): an amqplib consumer of one queue (rabbitmq-consumer.ts).
// This file is what the registry and the API need (fields, parse, secrets); the consumer's file,
// with amqplib, is loaded when the first command of this type starts, never at the broker's start
// (issue 26).
import { lazyImport } from '../../lazy/lazy-import.ts';
import { parseRabbitMqConfig, RABBITMQ_FIELDS, rabbitMqSecrets, type RabbitMqConfig } from './rabbitmq-config.ts';
import type { CommandTypeSpec } from './types.ts';

const consumerModule = lazyImport('amqplib', () => import('./rabbitmq-consumer.ts'));

export const RABBITMQ_COMMAND: CommandTypeSpec<RabbitMqConfig> = {
  type: 'RABBITMQ',
  fields: RABBITMQ_FIELDS,
  parse: parseRabbitMqConfig,
  secrets: rabbitMqSecrets,
  create: async (config, ctx) => new (await consumerModule()).RabbitMqCommandConsumer(config, ctx),
};
