// Owns loading the configuration: defaults, then the --config file, then SPINDLE_* environment
// variables, each key checked and the whole checked across keys, returned deeply frozen.
import os from 'node:os';

import { configPathFromArgv } from './argv.ts';
import { applyCrossChecks } from './cross-checks.ts';
import { envOverrides } from './env.ts';
import { ConfigError } from './errors.ts';
import { fileValues } from './file-values.ts';
import { readConfigFile } from './file.ts';
import { deepFreeze } from './freeze.ts';
import { KEYS } from './keys.ts';
import { setPath } from './paths.ts';
import type { BrokerConfig } from './types.ts';

export interface LoadConfigOptions {
  /** Command-line arguments searched for --config PATH; process.argv.slice(2) by default. */
  argv?: readonly string[];
  /** Environment searched for SPINDLE_* overrides; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** CPU count behind the `workers` default; os.availableParallelism() by default. */
  cpus?: number;
  /** Host name behind the `nodeName` default; os.hostname() by default. */
  hostname?: string;
}

export function loadConfig(options: LoadConfigOptions = {}): BrokerConfig {
  const argv = options.argv ?? process.argv.slice(2);
  const env = options.env ?? process.env;
  const ctx = { cpus: options.cpus ?? os.availableParallelism(), hostname: options.hostname ?? os.hostname() };

  const values = new Map<string, unknown>();
  const sources = new Map<string, string>();
  for (const spec of KEYS) {
    values.set(spec.key, spec.defaultValue(ctx));
    sources.set(spec.key, 'default');
  }
  const file = configPathFromArgv(argv);
  if (file !== undefined) {
    for (const [key, value] of fileValues(readConfigFile(file), file)) {
      values.set(key, value);
      sources.set(key, `file ${file}`);
    }
  }
  for (const { spec, variable, value } of envOverrides(env)) {
    values.set(spec.key, value);
    sources.set(spec.key, `environment variable ${variable}`);
  }

  const config: Record<string, unknown> = {};
  for (const spec of KEYS) {
    const result = spec.checker.check(values.get(spec.key));
    const source = sources.get(spec.key) as string;
    if (!result.ok) {
      const at = spec.key + result.problem.at;
      throw new ConfigError('CONFIG_INVALID', `${at}: ${result.problem.message} (from ${source})`, at, source);
    }
    setPath(config, spec.key, result.value);
  }
  applyCrossChecks(config as unknown as BrokerConfig, sources);
  return deepFreeze(config as unknown as BrokerConfig);
}
