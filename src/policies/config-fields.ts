// Owns the field checks the policy configs share (a wrong value is a PolicyConfigError naming the
// field; each type's config file keeps the checks only it needs).
import { PolicyConfigError } from './types.ts';

/** An integer in min..max at `field`; `fallback` when absent or null (no fallback: required). */
export function integerField(value: unknown, field: string, min: number, max: number, fallback?: number): number {
  if ((value === undefined || value === null) && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new PolicyConfigError(field, `must be an integer from ${min} to ${max}`);
  }
  return value;
}
