// Field checks for the control platform's records: each throws a 400 naming the field.
import { invalid } from './errors.ts';

export type Input = Record<string, unknown>;

export function asInput(v: unknown): Input {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid('body', 'expected a JSON object');
  return v as Input;
}

export function only(b: Input, allowed: readonly string[]): void {
  for (const k of Object.keys(b)) if (!allowed.includes(k)) throw invalid(k, 'unknown field');
}

export function text(b: Input, field: string, fallback: string, max = 1024): string {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'string') throw invalid(field, 'expected a string');
  if (v.length > max) throw invalid(field, `longer than ${max} characters`);
  return v;
}

export function flag(b: Input, field: string, fallback: boolean): boolean {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw invalid(field, 'expected true or false');
  return v;
}

/** An integer in range, null (no limit) when null is allowed and given, `fallback` when absent. */
export function limit(b: Input, field: string, min: number, max: number, fallback: number | null): number | null {
  if (!(field in b)) return fallback;
  const v = b[field];
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalid(field, 'expected an integer or null (no limit)');
  if (v < min || v > max) throw invalid(field, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

export function isoTime(b: Input, field: string, fallback: string | null): string | null {
  if (!(field in b)) return fallback;
  const v = b[field];
  if (v === null) return null;
  if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) throw invalid(field, 'expected an ISO 8601 time or null');
  return new Date(v).toISOString();
}

export function strings(b: Input, field: string, fallback: string[], maxItems = 64): string[] {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.length === 0 || x.length > 64)) throw invalid(field, 'expected an array of non-empty strings (at most 64 characters each)');
  if (v.length > maxItems) throw invalid(field, `at most ${maxItems} items`);
  return [...new Set(v as string[])];
}

export function id(b: Input, field: string): string {
  const v = b[field];
  if (typeof v !== 'string' || v.length === 0) throw invalid(field, 'is required (an id)');
  return v;
}
