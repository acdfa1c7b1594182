// Owns reading the configuration file: JSON when the name ends in .json, YAML otherwise. Parse
// errors and YAML warnings are errors naming the file; an empty file is an empty mapping.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { lazyRequire } from '../lazy/lazy-require.ts';
import { ConfigError } from './errors.ts';

// The YAML parser loads only for a YAML file (~50 ms of a start from JSON or the environment).
const yaml = lazyRequire<typeof import('yaml')>('yaml');

export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError('CONFIG_FILE', `cannot read config file ${file}: ${(err as Error).message}`, undefined, `file ${file}`, { cause: err });
  }
  const data = path.extname(file).toLowerCase() === '.json' ? parseJson(file, text) : parseYaml(file, text);
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError('CONFIG_FILE', `config file ${file} must hold a mapping of keys at the top level`, undefined, `file ${file}`);
  }
  return data as Record<string, unknown>;
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError('CONFIG_FILE', `config file ${file} is not valid JSON: ${(err as Error).message}`, undefined, `file ${file}`, { cause: err });
  }
}

function parseYaml(file: string, text: string): unknown {
  const doc = yaml().parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0] ?? doc.warnings[0];
  if (first !== undefined) {
    throw new ConfigError('CONFIG_FILE', `config file ${file} is not valid YAML: ${first.message}`, undefined, `file ${file}`, { cause: first });
  }
  return doc.toJS();
}
