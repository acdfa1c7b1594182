// Field checks for admin request bodies and query strings. Each throws a 400 that names the field,
// before a route changes anything (a rejected request changes nothing).
import { invalid } from '../errors/domain-error.ts';

export type Body = Record<string, unknown>;

/** The body as an object (400 when it is an array, a scalar, or missing where one is needed). */
export function object(body: unknown, field = 'body'): Body {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid(field, 'expected a JSON object');
  return body as Body;
}

export function str(b: Body, field: string, options: { required?: boolean; nonEmpty?: boolean; max?: number } = {}): string | undefined {
  const v = b[field];
  if (v === undefined || v === null) {
    if (options.required) throw invalid(field, 'is required');
    return undefined;
  }
  if (typeof v !== 'string') throw invalid(field, `expected a string, got ${typeName(v)}`);
  if ((options.nonEmpty || options.required) && v.length === 0) throw invalid(field, 'must not be empty');
  if (options.max !== undefined && v.length > options.max) throw invalid(field, `longer than ${options.max} characters`);
  return v;
}

export function reqStr(b: Body, field: string, options: { max?: number } = {}): string {
  return str(b, field, { ...options, required: true })!;
}

export function int(b: Body, field: string, min: number, max: number, options: { required?: boolean } = {}): number | undefined {
  const v = b[field];
  if (v === undefined || v === null) {
    if (options.required) throw invalid(field, 'is required');
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalid(field, `expected an integer, got ${typeName(v)}`);
  if (v < min || v > max) throw invalid(field, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

export function bool(b: Body, field: string, options: { required?: boolean } = {}): boolean | undefined {
  const v = b[field];
  if (v === undefined || v === null) {
    if (options.required) throw invalid(field, 'is required');
    return undefined;
  }
  if (typeof v !== 'boolean') throw invalid(field, `expected true or false, got ${typeName(v)}`);
  return v;
}

export function oneOf<T extends string>(b: Body, field: string, choices: readonly T[], options: { required?: boolean } = {}): T | undefined {
  const v = str(b, field, options);
  if (v === undefined) return undefined;
  if (!choices.includes(v as T)) throw invalid(field, `must be one of ${choices.join(', ')}, got ${JSON.stringify(v)}`);
  return v as T;
}

export function qos(b: Body, field = 'qos'): 0 | 1 | 2 {
  return (int(b, field, 0, 2) ?? 0) as 0 | 1 | 2;
}

/** `page` (1-based, default 1) and `size` (default 20, at most 1000) from a body or query. */
export function paging(b: Body): { page: number; size: number } {
  return { page: int(b, 'page', 1, 1_000_000) ?? 1, size: int(b, 'size', 1, 1000) ?? 20 };
}

/** Query parameters as a body: integers where the text is one (so the same checks apply). */
export function queryBody(q: URLSearchParams, integers: readonly string[] = []): Body {
  const out: Body = {};
  for (const [k, v] of q) {
    if (integers.includes(k)) {
      if (!/^-?\d+$/.test(v)) throw invalid(k, `expected an integer, got ${JSON.stringify(v)}`);
      out[k] = Number(v);
    } else out[k] = v;
  }
  return out;
}

/** 400 for fields the route does not know (a typo must not be silently ignored). */
export function onlyFields(b: Body, allowed: readonly string[]): void {
  for (const k of Object.keys(b)) if (!allowed.includes(k)) throw invalid(k, 'unknown field');
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'string' ? `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)})` : `${typeof v} ${JSON.stringify(v)}`;
}
