// The ROCKETMQ command type (main thread): a RocketMQ 5 SimpleConsumer (rocketmq-consumer.ts). This
// file is what the registry and the API need (fields, parse, secrets); the consumer's file, with
// rocketmq-client-nodejs, is loaded when the first command of this type starts, never at the
// broker's start (issue 26).
import { lazyImport } from '../../lazy/lazy-import.ts';
import { parseRocketMqConfig, ROCKETMQ_FIELDS, rocketMqSecrets, type RocketMqConfig } from './rocketmq-config.ts';
import type { CommandTypeSpec } from './types.ts';

const consumerModule = lazyImport('rocketmq-client-nodejs', () => import('./rocketmq-consumer.ts'));

export const ROCKETMQ_COMMAND: CommandTypeSpec<RocketMqConfig> = {
  type: 'ROCKETMQ',
  fields: ROCKETMQ_FIELDS,
  parse: parseRocketMqConfig,
  secrets: rocketMqSecrets,
  create: async (config, ctx) => new (await consumerModule()).RocketMqCommandConsumer(config, ctx),
};
