// Value semantics shared by operators and functions: how rule values convert to strings and
// numbers, compare, and walk as JSON paths. Comparisons involving null or undefined are false
// (SQL-like); a number compares numerically with a numeric string; buffers read as UTF-8 text.

import { SqlRuntimeError } from './errors.ts';

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

export function isNumericString(s: string): boolean {
  return NUMERIC.test(s);
}

/** A buffer as UTF-8 text; anything else unchanged. */
export function textOf(v: unknown): unknown {
  if (!(v instanceof Uint8Array)) return v;
  return Buffer.isBuffer(v) ? v.toString('utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
}

/** The value as text: strings as they are, buffers as UTF-8, objects as JSON, null as "". */
export function toStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (v instanceof Uint8Array) return textOf(v) as string;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** The value as a number (numbers, numeric strings, booleans), or undefined. */
export function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return NUMERIC.test(v) ? Number(v) : undefined;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return undefined;
}

/** The value as a number, or a SqlRuntimeError naming `what` needed it. */
export function needNumber(v: unknown, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && NUMERIC.test(v) ? Number(v) : undefined;
  if (n === undefined) throw new SqlRuntimeError(`${what} needs a number, got ${describe(v)}`);
  return n;
}

/** A short description of a value for error messages. */
export function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v);
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  return String(v);
}

/**
 * Orders two values: negative, zero or positive, or undefined when they do not compare (either is
 * null or undefined, or the types differ and no numeric reading joins them).
 */
export function compare(a: unknown, b: unknown): number | undefined {
  if (a === null || a === undefined || b === null || b === undefined) return undefined;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  a = textOf(a);
  b = textOf(b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumberStrict(a);
    const y = asNumberStrict(b);
    return x === undefined || y === undefined ? undefined : x - y;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (typeof a === 'object' && typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b) ? 0 : undefined;
  return undefined;
}

// Numbers and numeric strings, not booleans: true = 1 is false.
function asNumberStrict(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && NUMERIC.test(v)) return Number(v);
  return undefined;
}

/** `a = b`: false when either is null or undefined. */
export function equals(a: unknown, b: unknown): boolean {
  if (a === b) return a !== null && a !== undefined;
  return compare(a, b) === 0;
}

/** Parses text that looks like a JSON object or array; undefined otherwise. */
export function parseJsonObject(v: string | Uint8Array): unknown {
  const text = typeof v === 'string' ? v : (textOf(v) as string);
  let i = 0;
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\t' || text[i] === '\r')) i++;
  if (text[i] !== '{' && text[i] !== '[') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON: the path reads as missing
  }
}

/** Walks `path` from `v`; a string or buffer holding a JSON object or array is walked into. */
export function walk(v: unknown, path: readonly (string | number)[]): unknown {
  for (let i = 0; i < path.length; i++) {
    if (typeof v === 'string' || v instanceof Uint8Array) v = parseJsonObject(v);
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, path[i])) return undefined;
    v = (v as Record<string | number, unknown>)[path[i]];
  }
  return v;
}
