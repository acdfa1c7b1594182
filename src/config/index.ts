// Owns the public surface of the configuration.
export { loadConfig, type LoadConfigOptions } from './load.ts';
export { getPath, setPath } from './paths.ts';
export { configKeys, describeConfig, type ConfigKeyDoc } from './describe.ts';
export { envName, unknownEnvVars } from './env.ts';
export { ConfigError, type ConfigErrorCode } from './errors.ts';
export type { BrokerConfig } from './types.ts';
export type { AclEntry, UserEntry } from './validators.ts';
