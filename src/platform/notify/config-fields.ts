// Owns the field checks of channel configs (main thread): each reads one field of a raw config
// object and throws a ChannelConfigError naming it (`config.<name>`), so a config is checked once,
// here, and everything after trusts it.
import { ChannelConfigError } from './errors.ts';
import { RETRIES, TIMEOUT_MS } from './types.ts';

export type Raw = Record<string, unknown>;

export const field = (name: string): string => `config.${name}`;

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Refuses fields the type does not know (a typo would otherwise be ignored silently). */
export function onlyFields(raw: Raw, known: readonly string[]): void {
  for (const key of Object.keys(raw)) {
    if (!known.includes(key)) throw new ChannelConfigError(field(key), `is not a field of this channel type (known: ${known.join(', ')})`);
  }
}

export function requiredString(raw: Raw, name: string, max: number): string {
  const v = raw[name];
  if (v === undefined || v === null) throw new ChannelConfigError(field(name), 'is required');
  return checkString(v, field(name), max, false);
}

export function optionalString(raw: Raw, name: string, max: number): string | undefined {
  const v = raw[name];
  if (v === undefined || v === null) return undefined;
  return checkString(v, field(name), max, true);
}

function checkString(v: unknown, at: string, max: number, emptyOk: boolean): string {
  if (typeof v !== 'string') throw new ChannelConfigError(at, `expected a string, got ${typeName(v)}`);
  if (!emptyOk && v.length === 0) throw new ChannelConfigError(at, 'must not be empty');
  if (v.length > max) throw new ChannelConfigError(at, `is longer than ${max} characters`);
  // CR, LF and NUL would let a value end a header or an SMTP line early.
  if (/[\0\r\n]/.test(v)) throw new ChannelConfigError(at, 'must not contain line breaks or NUL');
  return v;
}

export function intField(raw: Raw, name: string, bounds: { default?: number; min: number; max: number }): number {
  const v = raw[name];
  if (v === undefined || v === null) {
    if (bounds.default === undefined) throw new ChannelConfigError(field(name), 'is required');
    return bounds.default;
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new ChannelConfigError(field(name), `expected an integer, got ${typeName(v)}`);
  if (v < bounds.min || v > bounds.max) throw new ChannelConfigError(field(name), `must be between ${bounds.min} and ${bounds.max}, got ${v}`);
  return v;
}

export function boolField(raw: Raw, name: string, fallback: boolean): boolean {
  const v = raw[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new ChannelConfigError(field(name), `expected true or false, got ${typeName(v)}`);
  return v;
}

/** `timeoutMs` (per attempt) and `retries` (after the first attempt), with their defaults. */
export function deliveryFields(raw: Raw): { timeoutMs: number; retries: number } {
  return { timeoutMs: intField(raw, 'timeoutMs', TIMEOUT_MS), retries: intField(raw, 'retries', RETRIES) };
}

/** An http(s) URL with a host and no user:password (fetch refuses credentials in a URL). */
export function httpUrl(raw: Raw, name: string): string {
  const text = requiredString(raw, name, 2048);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ChannelConfigError(field(name), 'is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ChannelConfigError(field(name), 'must start with http:// or https://');
  if (url.hostname === '') throw new ChannelConfigError(field(name), 'names no host');
  if (url.username !== '' || url.password !== '') throw new ChannelConfigError(field(name), 'must not carry user:password (give an Authorization header instead)');
  return text;
}
