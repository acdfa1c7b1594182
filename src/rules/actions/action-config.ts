// Owns reading the fields of an action's config: each reader checks one field and throws
// ActionConfigError naming it; templates are compiled here so a template error names its field.
// Shared by every action spec.
import { TemplateError, compileTemplate, compileValue, isConstant, type Template, type ValueTemplate } from '../template.ts';
import { SourceError, type AnySource, type SourceType } from '../../sources/types.ts';
import { ActionConfigError } from './types.ts';

export type Config = Record<string, unknown>;

export function sourceId(config: Config): string {
  const v = config.source;
  if (typeof v !== 'string' || v === '') throw new ActionConfigError('source', 'is required (the id of a source)');
  return v;
}

export function optionalString(config: Config, key: string): string | undefined {
  const v = config[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ActionConfigError(key, 'must be a string');
  return v;
}

export function requiredString(config: Config, key: string): string {
  const v = optionalString(config, key);
  if (v === undefined || v === '') throw new ActionConfigError(key, 'is required');
  return v;
}

export function intField(config: Config, key: string, fallback: number, min: number, max: number): number {
  const v = config[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ActionConfigError(key, `must be an integer between ${min} and ${max}`);
  return v;
}

export function boolField(config: Config, key: string, fallback: boolean): boolean {
  const v = config[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new ActionConfigError(key, 'must be a boolean');
  return v;
}

/** `batchSize` (1..max, default `fallback`): the most outputs one write takes. */
export function batchSize(config: Config, fallback: number, max = 10_000): number {
  return intField(config, 'batchSize', fallback, 1, max);
}

export function template(text: string, field: string): Template {
  try {
    return compileTemplate(text);
  } catch (err) {
    throw templateError(err, field);
  }
}

export function valueTemplate(text: string, field: string): ValueTemplate {
  try {
    return compileValue(text);
  } catch (err) {
    throw templateError(err, field);
  }
}

export function constant(text: string, field: string): boolean {
  try {
    return isConstant(text);
  } catch (err) {
    throw templateError(err, field);
  }
}

/** An object of `{name: template}`; `valid(name)` checks each name. */
export function templateMap(config: Config, key: string, valid: (name: string) => boolean, what: string): [string, Template][] | undefined {
  const v = config[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ActionConfigError(key, 'must be an object of templates');
  const out: [string, Template][] = [];
  for (const [name, text] of Object.entries(v)) {
    if (!valid(name)) throw new ActionConfigError(`${key}.${name}`, `is not a valid ${what}`);
    if (typeof text !== 'string') throw new ActionConfigError(`${key}.${name}`, 'must be a template string');
    out.push([name, template(text, `${key}.${name}`)]);
  }
  return out;
}

function templateError(err: unknown, field: string): Error {
  if (err instanceof TemplateError) return new ActionConfigError(field, err.message);
  return err as Error;
}

/** The source as the type the action writes to; another type is a non-transient SourceError. */
export function expectSource<T extends SourceType>(source: AnySource, type: T): Extract<AnySource, { type: T }> {
  if (source.type !== type) throw new SourceError(`source ${source.id} is ${source.type}, the action needs ${type}`, 'other', false);
  return source as Extract<AnySource, { type: T }>;
}

/** An output as JSON text (the default payload, value and body). */
export function outputJson(output: Record<string, unknown>): string {
  return JSON.stringify(output, function jsonValue(this: Record<string, unknown>, key: string, v: unknown) {
    const raw = this[key]; // before Buffer's toJSON turned it into {type, data}
    if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
    return typeof v === 'bigint' ? v.toString() : v;
  });
}
