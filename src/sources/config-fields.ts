// Owns reading the fields of a raw source config (as the admin API received it): each reader
// checks one field's type and range and throws SourceConfigError naming it (`config.<field>`), so
// every driver's parse<Type>Config reports mistakes the same way.
import { SourceConfigError } from './types.ts';

export type Raw = Record<string, unknown>;

/** The TLS settings of a connection; null when TLS is off. */
export interface TlsConfig {
  rejectUnauthorized: boolean;
  /** PEM of the CA to trust instead of the system's; absent: the system's. */
  ca?: string;
}

export function configObject(raw: unknown): Raw {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new SourceConfigError('config', 'must be an object');
  return raw as Raw;
}

export function optionalString(raw: Raw, key: string): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new SourceConfigError(`config.${key}`, 'must be a string');
  return v;
}

export function requiredString(raw: Raw, key: string): string {
  const v = optionalString(raw, key);
  if (v === undefined || v === '') throw new SourceConfigError(`config.${key}`, 'is required');
  return v;
}

export function intField(raw: Raw, key: string, fallback: number, min: number, max: number): number {
  const v = raw[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new SourceConfigError(`config.${key}`, 'must be an integer');
  if (v < min || v > max) throw new SourceConfigError(`config.${key}`, `must be between ${min} and ${max}`);
  return v;
}

export function portField(raw: Raw, key: string, fallback: number): number {
  return intField(raw, key, fallback, 1, 65535);
}

/** `tls`: false/absent (off), true (on, verified), or {rejectUnauthorized?, ca?}. */
export function tlsField(raw: Raw, key = 'tls'): TlsConfig | null {
  const v = raw[key];
  if (v === undefined || v === null || v === false) return null;
  if (v === true) return { rejectUnauthorized: true };
  if (typeof v !== 'object' || Array.isArray(v)) throw new SourceConfigError(`config.${key}`, 'must be a boolean or {rejectUnauthorized, ca}');
  const o = v as Raw;
  if (o.rejectUnauthorized !== undefined && typeof o.rejectUnauthorized !== 'boolean') {
    throw new SourceConfigError(`config.${key}.rejectUnauthorized`, 'must be a boolean');
  }
  if (o.ca !== undefined && typeof o.ca !== 'string') throw new SourceConfigError(`config.${key}.ca`, 'must be a PEM string');
  const tls: TlsConfig = { rejectUnauthorized: o.rejectUnauthorized !== false };
  if (typeof o.ca === 'string') tls.ca = o.ca;
  return tls;
}

/** The options node:tls takes for a TlsConfig. */
export function tlsOptions(tls: TlsConfig): { rejectUnauthorized: boolean; ca?: string } {
  return tls.ca === undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : { rejectUnauthorized: tls.rejectUnauthorized, ca: tls.ca };
}
