// Owns hiding a policy's credentials from what leaves the broker (the admin API's answers): the
// store keeps them (a policy must reconnect after a restart); nothing that answers a client shows
// them. Removed at any depth: `password` (an own datasource's), `secret` (a JWT HMAC key), the
// password of any `url`; Authorization headers show as '******'. A public key is not a secret.
import type { PolicyRecord } from './types.ts';

const SECRET_KEYS = new Set(['password', 'secret']);
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization']);

export function redactPolicy<T extends string>(record: PolicyRecord<T>): PolicyRecord<T> {
  return { ...record, config: redactValue(record.config) as Record<string, unknown> };
}

function redactValue(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => redactValue(v));
  if (value === null || typeof value !== 'object') {
    if (key === 'url' && typeof value === 'string') return withoutPassword(value);
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (SECRET_KEYS.has(k)) continue;
    if (k === 'headers' && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([h, hv]) => [h, SECRET_HEADERS.has(h.toLowerCase()) ? '******' : hv]));
      continue;
    }
    out[k] = redactValue(v, k);
  }
  return out;
}

function withoutPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:(?:[a-z0-9+.-]*:)?\/\/[^:/@]*):[^@/]*@/i, '$1@');
}
