// The NACOS command type (main thread): a registration of this broker's endpoints in Nacos
// (nacos-registration.ts). This file is what the registry and the API need (fields, parse,
// secrets); the consumer's file, with nacos-naming, is loaded when the first command of this type
// starts, never at the broker's start (issue 26).
import { lazyImport } from '../../lazy/lazy-import.ts';
import { NACOS_FIELDS, nacosSecrets, parseNacosCommandConfig, type NacosCommandConfig } from './nacos-config.ts';
import type { CommandTypeSpec } from './types.ts';

const consumerModule = lazyImport('nacos-naming', () => import('./nacos-registration.ts'));

export const NACOS_COMMAND: CommandTypeSpec<NacosCommandConfig> = {
  type: 'NACOS',
  publishes: false,
  fields: NACOS_FIELDS,
  parse: parseNacosCommandConfig,
  secrets: nacosSecrets,
  create: async (config, ctx) => new (await consumerModule()).NacosRegistration(config, ctx),
};
