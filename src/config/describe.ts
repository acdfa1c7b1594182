// Owns the documentation of the configuration: the key list and the Markdown table in docs/operating/configuration.md.
import { envName } from './env.ts';
import { KEYS } from './keys.ts';

export interface ConfigKeyDoc {
  key: string;
  env: string;
  /** The default as written in the documentation. */
  default: string;
  description: string;
}

export function configKeys(): ConfigKeyDoc[] {
  return KEYS.map((spec) => ({ key: spec.key, env: envName(spec.key), default: spec.defaultText, description: spec.description }));
}

/** The configuration table in Markdown: key, environment variable, default, meaning. */
export function describeConfig(): string {
  const rows = configKeys().map((k) => `| \`${k.key}\` | \`${k.env}\` | ${defaultCell(k.default)} | ${escapeCell(k.description)} |`);
  return ['| key | environment variable | default | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n') + '\n';
}

function defaultCell(text: string): string {
  const literal = /^(".*"|-?\d+|true|false|\[\])$/.test(text) && !text.includes('" +');
  return literal ? `\`${text}\`` : escapeCell(text);
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|');
}
