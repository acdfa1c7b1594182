// The PULSAR command type (main thread): a consumer on Pulsar's WebSocket API (pulsar-consumer.ts).
// This file is what the registry and the API need (fields, parse, secrets); the consumer's file,
// with ws, is loaded when the first command of this type starts, never at the broker's start (issue
// 26).
import { lazyImport } from '../../lazy/lazy-import.ts';
import { parsePulsarConfig, PULSAR_FIELDS, pulsarSecrets, type PulsarConfig } from './pulsar-config.ts';
import type { CommandTypeSpec } from './types.ts';

const consumerModule = lazyImport('ws', () => import('./pulsar-consumer.ts'));

export const PULSAR_COMMAND: CommandTypeSpec<PulsarConfig> = {
  type: 'PULSAR',
  fields: PULSAR_FIELDS,
  parse: parsePulsarConfig,
  secrets: pulsarSecrets,
  create: async (config, ctx) => new (await consumerModule()).PulsarCommandConsumer(config, ctx),
};
