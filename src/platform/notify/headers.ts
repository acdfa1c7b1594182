// Owns checking the extra headers of a webhook channel (main thread): names are HTTP tokens
// (RFC 9110 5.1), values visible ASCII and spaces/tabs without line breaks, at most 32 of them,
// none Spindle or fetch sets itself, no name given twice (case-insensitively).
import { ChannelConfigError } from './errors.ts';
import { field, typeName, type Raw } from './config-fields.ts';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// RFC 9110 5.5 field-value: visible characters, obs-text, spaces and tabs inside.
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const MAX_HEADERS = 32;
const MAX_VALUE = 4096;
/** Set by Spindle (content-type) or by fetch from the request (the rest). */
const RESERVED = new Set(['content-type', 'content-length', 'host', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer']);

export function headersField(raw: Raw): Record<string, string> {
  const v = raw.headers;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new ChannelConfigError(field('headers'), `expected an object of name: value, got ${typeName(v)}`);
  const entries = Object.entries(v as Raw);
  if (entries.length > MAX_HEADERS) throw new ChannelConfigError(field('headers'), `has more than ${MAX_HEADERS} headers`);
  const seen = new Set<string>();
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    const at = field(`headers.${name}`);
    if (!TOKEN.test(name) || name.length > 256) throw new ChannelConfigError(at, 'is not a valid header name (letters, digits and !#$%&\'*+.^_`|~-)');
    const lower = name.toLowerCase();
    if (RESERVED.has(lower)) throw new ChannelConfigError(at, 'is set by Spindle, it cannot be given');
    if (seen.has(lower)) throw new ChannelConfigError(at, 'is given twice (header names are case-insensitive)');
    seen.add(lower);
    if (typeof value !== 'string') throw new ChannelConfigError(at, `expected a string, got ${typeName(value)}`);
    if (value.length > MAX_VALUE) throw new ChannelConfigError(at, `is longer than ${MAX_VALUE} characters`);
    if (!VALUE.test(value)) throw new ChannelConfigError(at, 'must hold visible characters, spaces and tabs only (no line breaks)');
    out[name] = value.trim();
  }
  return out;
}
