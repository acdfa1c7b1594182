// Owns checking a value against a TypeBox schema with Ajv, and the refusal when it fails: 400
// INVALID_PARAMETER naming the first bad field as the API names fields (`endpoints[1].port`), with
// a message a person can act on. A leaf beside errors/: the admin routes check their requests with
// it, and a module whose input also comes from elsewhere (the configuration file) checks it with the
// same schema.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

import { DomainError, invalid } from '../errors/domain-error.ts';

/** A keyword of ours: the message a failed `pattern` answers with ("letters, digits, . _ - only"),
 * instead of the pattern itself. */
export const PATTERN_MESSAGE = 'x-message';

/** A keyword of ours, an annotation only: a string field the console shows as a text area. */
export const MULTILINE = 'x-multiline';

/** A keyword of ours, an annotation only: the default a module applies to an absent field, shown
 * by the console's forms. Not `default`, which Ajv would write into the value (useDefaults). */
export const DEFAULT_NOTE = 'x-default';

function newAjv(coerceTypes: boolean): Ajv {
  // strict: an unknown keyword in a schema is a mistake at startup, not a check silently skipped.
  // useDefaults: a schema's `default` fills an absent field (page, size, ...).
  // discriminator: a body of several shapes told apart by a field (byType) is checked against the
  // one shape its field names, so a refusal names that shape's field.
  const ajv = new Ajv({ strict: true, strictTypes: false, allErrors: false, verbose: true, useDefaults: true, coerceTypes, discriminator: true });
  ajv.addKeyword({ keyword: PATTERN_MESSAGE, schemaType: 'string' });
  // Annotations for the console's forms: a secret (a password input) and a text of several lines.
  ajv.addFormat('password', true);
  ajv.addKeyword({ keyword: MULTILINE, schemaType: 'boolean' });
  ajv.addKeyword({ keyword: DEFAULT_NOTE });
  return ajv;
}

// Bodies are JSON and keep their types; query strings are text, so "5" may be the integer 5.
const exact = newAjv(false);
const coercing = newAjv(true);

/** One of a few strings: a JSON-schema enum (a refusal lists them; the document shows them). */
export function choice<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/** A value or null (null clears a setting, or means absent, as the field says). */
export function orNull<S extends TSchema>(schema: S) {
  return Type.Union([schema, Type.Null()]);
}

export interface Checker<T> {
  /** Throws the refusal naming the first bad field; `value` may gain its schema's defaults. */
  (value: unknown): asserts value is T;
  /** The compiled validator (for the fields a caller reads afterwards; compiled on first use). */
  readonly validate: ValidateFunction;
}

/**
 * Compiles `schema` once. `coerce`: the values are text (a query string), so "5" may be the
 * integer 5 and "true" the boolean. `refuse`: the error a refusal is (400 INVALID_PARAMETER
 * naming the field; a module gives its own subclass).
 */
export function compileSchema<S extends TSchema>(schema: S, options: { coerce?: boolean; refuse?: Refuse } = {}): Checker<Static<S>> {
  // Compiled on first use, not at import: a broker starts with hundreds of route and config
  // schemas and checks few of them before it serves (compiling them all cost ~200 ms of its
  // start). A schema Ajv refuses (strict mode) still fails its first check, and
  // test/schema/compile-all.test.ts compiles every one.
  let validate: ValidateFunction | null = null;
  const compiled = (): ValidateFunction => (validate ??= (options.coerce ? coercing : exact).compile(schema));
  const refuse = options.refuse ?? invalid;
  const check = ((value: unknown) => {
    const v = compiled();
    if (!v(value)) throw refusalOf(v.errors ?? [], value, refuse);
  }) as Checker<Static<S>>;
  Object.defineProperty(check, 'validate', { get: compiled, enumerable: true });
  compiledCheckers.push(compiled);
  return check;
}

const compiledCheckers: (() => ValidateFunction)[] = [];

/** Compiles every schema made so far by compileSchema (the test that no schema is refused by Ajv). */
export function compileAllSchemas(): number {
  for (const c of compiledCheckers) c();
  return compiledCheckers.length;
}

/** `/endpoints/0/port` as the API names fields: `endpoints[0].port`. */
export function fieldOf(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out;
}

/** Makes the refusal of a field (a module passes its own thin subclass of DomainError). */
export type Refuse = (field: string, reason: string) => DomainError;

function refusalOf(errors: ErrorObject[], data: unknown, refuse: Refuse): DomainError {
  // Inside anyOf (a value or null) the branch errors come first; the first one says most.
  const e = errors.find((x) => x.keyword !== 'anyOf' && x.keyword !== 'oneOf') ?? errors[0];
  if (!e) return refuse('body', 'is not valid');
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return refuse(fieldOf(e.instancePath, String(p.missingProperty)), 'is required');
  if (e.keyword === 'additionalProperties') return refuse(fieldOf(e.instancePath, String(p.additionalProperty)), 'unknown field');
  if (e.keyword === 'discriminator') return refuse(fieldOf(e.instancePath, String(p.tag)), discriminatorProblem(e));
  const field = fieldOf(e.instancePath);
  if (field === '' && e.keyword === 'type') return refuse('body', `expected a JSON object, got ${typeName(data)}`);
  return refuse(field === '' ? 'body' : field, explain(e));
}

/** A discriminated value (byType) whose tag is absent or names no shape: the values it may take. */
function discriminatorProblem(e: ErrorObject): string {
  const p = e.params as { error?: string; tag?: string; tagValue?: unknown };
  if (p.error === 'tag' && p.tagValue === undefined) return 'is required';
  const shapes = ((e.parentSchema ?? {}) as { oneOf?: { properties?: Record<string, { const?: unknown }> }[] }).oneOf ?? [];
  const values = shapes.map((s) => s.properties?.[String(p.tag)]?.const).filter((v) => v !== undefined);
  return `must be one of ${values.map(String).join(', ')}, got ${JSON.stringify(p.tagValue)}`;
}

function explain(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
  switch (e.keyword) {
    case 'type':
      return `expected ${[String(p.type)].flatMap((t) => t.split(',')).map(typeWord).join(' or ')}, got ${typeName(e.data)}`;
    case 'minimum':
    case 'maximum':
      if (typeof parent.minimum === 'number' && typeof parent.maximum === 'number') return `must be between ${parent.minimum} and ${parent.maximum}, got ${String(e.data)}`;
      return `must be ${e.keyword === 'minimum' ? 'at least' : 'at most'} ${String(p.limit)}, got ${String(e.data)}`;
    case 'exclusiveMinimum':
      return `must be more than ${String(p.limit)}, got ${String(e.data)}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `longer than ${String(p.limit)} characters`;
    case 'pattern':
      return typeof parent[PATTERN_MESSAGE] === 'string' ? String(parent[PATTERN_MESSAGE]) : `must match ${String(p.pattern)}`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}, got ${JSON.stringify(e.data)}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}, got ${JSON.stringify(e.data)}`;
    case 'minItems':
      return `must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`;
    case 'minProperties':
      return `must have at least ${String(p.limit)} field${p.limit === 1 ? '' : 's'}`;
    default:
      return e.message ?? 'is not valid';
  }
}

function typeWord(t: string): string {
  return { integer: 'an integer', number: 'a number', string: 'a string', boolean: 'true or false', object: 'an object', array: 'an array', null: 'null' }[t] ?? t;
}

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'string' ? `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)})` : `${typeof v} ${JSON.stringify(v)}`;
}

