// Owns environment overrides: the variable name of each key (SPINDLE_ + the path in
// SCREAMING_SNAKE, camelCase split) and the coercion of its text to the key's kind.
import { ConfigError } from './errors.ts';
import { KEYS, type KeySpec } from './keys.ts';
import type { EnvKind } from './validators.ts';

export const ENV_PREFIX = 'SPINDLE_';

/** "mqtt.ws.port" -> "SPINDLE_MQTT_WS_PORT", "auth.allowAnonymous" -> "SPINDLE_AUTH_ALLOW_ANONYMOUS". */
export function envName(key: string): string {
  return ENV_PREFIX + key.split('.').map(screamingSnake).join('_');
}

function screamingSnake(word: string): string {
  return word.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The value of an environment variable's text for a key of `kind`; throws ConfigError naming the variable. */
export function coerceEnv(spec: KeySpec, variable: string, text: string): unknown {
  const kind: EnvKind = spec.checker.kind;
  const fail = (expected: string): never => {
    throw new ConfigError('CONFIG_INVALID', `${spec.key}: ${expected}, got ${JSON.stringify(text)} (from environment variable ${variable})`, spec.key, `environment variable ${variable}`);
  };
  switch (kind) {
    case 'string':
      return text;
    case 'number':
      if (!NUMBER.test(text.trim())) fail('expected a number');
      return Number(text.trim());
    case 'boolean': {
      const word = text.trim().toLowerCase();
      if (word === 'true' || word === '1') return true;
      if (word === 'false' || word === '0') return false;
      return fail('expected true, false, 1 or 0');
    }
    case 'json':
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new ConfigError('CONFIG_INVALID', `${spec.key}: expected JSON, ${(err as Error).message} (from environment variable ${variable})`, spec.key, `environment variable ${variable}`, { cause: err });
      }
  }
}

/** Every key's variable that is set in `env`, with its coerced value. */
export function envOverrides(env: NodeJS.ProcessEnv): { spec: KeySpec; variable: string; value: unknown }[] {
  const out: { spec: KeySpec; variable: string; value: unknown }[] = [];
  for (const spec of KEYS) {
    const variable = envName(spec.key);
    const text = env[variable];
    if (text !== undefined) out.push({ spec, variable, value: coerceEnv(spec, variable, text) });
  }
  return out;
}

/** SPINDLE_* variables in `env` that name no key (typos), for the caller to warn about. */
export function unknownEnvVars(env: NodeJS.ProcessEnv): string[] {
  const known = new Set(KEYS.map((spec) => envName(spec.key)));
  return Object.keys(env).filter((name) => name.startsWith(ENV_PREFIX) && !known.has(name)).sort();
}
