// Owns hiding credentials from what leaves the broker: every API answer and export shows a source
// through redact(). The store keeps the password (a pool must reconnect after a restart); nothing
// that answers a client does. Removed: `password`, `secretKey` and `token` (the ROCKETMQ and PULSAR
// commands' credentials), `sasl.password`, the password of any `url`'s
// userinfo, and the values of Authorization headers (an http source's bearer token).
import type { SourceRecord } from './types.ts';

const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization']);

export function redact(record: SourceRecord): SourceRecord {
  return { ...record, config: redactConfig(record.config) };
}

export function redactConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  delete out.password;
  delete out.secretKey;
  delete out.token;
  if (isObject(out.sasl)) {
    const sasl = { ...out.sasl };
    delete sasl.password;
    out.sasl = sasl;
  }
  if (typeof out.url === 'string') out.url = withoutPassword(out.url);
  if (isObject(out.headers)) {
    const headers: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(out.headers)) headers[k] = SECRET_HEADERS.has(k.toLowerCase()) ? '******' : v;
    out.headers = headers;
  }
  return out;
}

function withoutPassword(text: string): string {
  try {
    const url = new URL(text);
    if (!url.password) return text;
    url.password = '';
    return url.toString();
  } catch {
    // Not a URL a driver could use either; still never echo what may be userinfo.
    return text.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1@');
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
