// Field checks the notification channels still make by hand (their config is checked per type by
// notify/); the tenants' and licences' inputs are schemas (inputs.ts). Each throws a 400 naming
// the field.
import { invalid } from './errors.ts';

export type Input = Record<string, unknown>;

export function only(b: Input, allowed: readonly string[]): void {
  for (const k of Object.keys(b)) if (!allowed.includes(k)) throw invalid(k, 'unknown field');
}

export function flag(b: Input, field: string, fallback: boolean): boolean {
  const v = b[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw invalid(field, 'expected true or false');
  return v;
}
