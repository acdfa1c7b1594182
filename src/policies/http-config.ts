// Owns the config of an `http` policy (auth or ACL) as the admin API receives it: reading and
// checking each field (a mistake is a PolicyConfigError naming it, e.g. `config.url`) and the
// normalized form that is stored, with every default written out. Parsing a normalized config
// again gives the same config. Templates (`${username}`...) may appear in the query string of the
// url and in the body values; the path, host and headers are fixed text.
import http from 'node:http';

import { tlsField, type TlsConfig } from '../sources/config-fields.ts';
import { SourceConfigError } from '../sources/types.ts';
import { integerField } from './config-fields.ts';
import { allowedParams, paramsOf } from './params.ts';
import { PolicyConfigError, type PolicyKind, type PolicyParam } from './types.ts';


export type HttpPolicyConfig = {
  url: string;
  method: 'POST' | 'GET';
  /** Lower-case names. POST always has a content-type (JSON or form); GET has none. */
  headers: Record<string, string>;
  /** Field -> template; sent as JSON or form fields (POST) or as query parameters (GET). */
  body: Record<string, string>;
  /** ms, for waiting for a free slot and the whole exchange. */
  timeout: number;
  /** How an https url's certificate is checked; null: verified against the system's CAs. */
  tls: TlsConfig | null;
};

type Raw = Record<string, unknown>;

export const JSON_TYPE = 'application/json';
export const FORM_TYPE = 'application/x-www-form-urlencoded';

const DEFAULT_BODY: Record<PolicyKind, Record<string, string>> = {
  auth: { username: '${username}', password: '${password}', clientid: '${clientid}', peerhost: '${peerhost}' },
  acl: { username: '${username}', clientid: '${clientid}', peerhost: '${peerhost}', topic: '${topic}', action: '${action}' },
};

/** Headers the request sets itself from the body. */
const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding']);

export function parseHttpPolicyConfig(raw: unknown, kind: PolicyKind): Record<string, unknown> {
  return readHttpPolicyConfig(raw, kind);
}

/** parseHttpPolicyConfig with its type: what compile works from. */
export function readHttpPolicyConfig(input: unknown, kind: PolicyKind): HttpPolicyConfig {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new PolicyConfigError('config', 'must be an object');
  const raw = input as Raw;
  const allowed = allowedParams(kind);
  const url = urlField(raw.url, allowed);
  const method = methodField(raw.method);
  return {
    url,
    method,
    headers: headersField(raw.headers, method),
    body: bodyField(raw.body, kind, allowed),
    timeout: integerField(raw.timeout, 'config.timeout', 100, 60_000, 5000),
    tls: tlsConfigField(raw, url),
  };
}

function urlField(v: unknown, allowed: readonly PolicyParam[]): string {
  if (typeof v !== 'string' || v === '') throw new PolicyConfigError('config.url', 'is required (an http or https url)');
  if (v.trim() !== v) throw new PolicyConfigError('config.url', 'must not start or end with spaces');
  const q = v.indexOf('?');
  const beforeQuery = q < 0 ? v : v.slice(0, q);
  if (beforeQuery.includes('${')) throw new PolicyConfigError('config.url', 'templates (${...}) are allowed in the query string only');
  if (q >= 0) paramsOf(v.slice(q + 1), allowed, 'config.url');
  let parsed: URL;
  try {
    parsed = new URL(v.replaceAll(/\$\{[^}]*\}/g, 'x'));
  } catch {
    throw new PolicyConfigError('config.url', 'is not a valid url');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new PolicyConfigError('config.url', 'scheme must be http or https');
  return v;
}

function methodField(v: unknown): 'POST' | 'GET' {
  if (v === undefined || v === null) return 'POST';
  const method = typeof v === 'string' ? v.toUpperCase() : v;
  if (method !== 'POST' && method !== 'GET') throw new PolicyConfigError('config.method', 'must be POST or GET');
  return method;
}

function headersField(v: unknown, method: 'POST' | 'GET'): Record<string, string> {
  if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v))) {
    throw new PolicyConfigError('config.headers', 'must be an object of strings');
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries((v ?? {}) as Raw)) {
    const key = name.toLowerCase();
    checkHeader(name, value);
    if (key in out) throw new PolicyConfigError(`config.headers.${name}`, 'is given twice (header names are case-insensitive)');
    out[key] = value as string;
  }
  const type = out['content-type'];
  if (method === 'GET') {
    if (type !== undefined) throw new PolicyConfigError('config.headers.content-type', 'a GET request has no body (the body fields go in the query string)');
    return out;
  }
  if (type === undefined) out['content-type'] = JSON_TYPE;
  else if (!isJsonType(type) && !isFormType(type)) {
    throw new PolicyConfigError('config.headers.content-type', `must be ${JSON_TYPE} or ${FORM_TYPE}`);
  }
  return out;
}

function checkHeader(name: string, value: unknown): void {
  const field = `config.headers.${name}`;
  try {
    http.validateHeaderName(name);
  } catch {
    throw new PolicyConfigError(field, 'is not a valid header name');
  }
  if (RESERVED_HEADERS.has(name.toLowerCase())) throw new PolicyConfigError(field, 'is set from the body');
  if (typeof value !== 'string') throw new PolicyConfigError(field, 'must be a string');
  if (value.includes('${')) throw new PolicyConfigError(field, 'templates (${...}) are not allowed in headers');
  try {
    http.validateHeaderValue(name, value);
  } catch {
    throw new PolicyConfigError(field, 'holds a character not allowed in a header');
  }
}

function bodyField(v: unknown, kind: PolicyKind, allowed: readonly PolicyParam[]): Record<string, string> {
  if (v === undefined || v === null) return { ...DEFAULT_BODY[kind] };
  if (typeof v !== 'object' || Array.isArray(v)) throw new PolicyConfigError('config.body', 'must be an object of field -> template string');
  const out: Record<string, string> = {};
  for (const [field, template] of Object.entries(v as Raw)) {
    if (field === '') throw new PolicyConfigError('config.body', 'a field name cannot be empty');
    if (typeof template !== 'string') throw new PolicyConfigError(`config.body.${field}`, 'must be a string (a template such as "${username}")');
    paramsOf(template, allowed, `config.body.${field}`);
    out[field] = template;
  }
  return out;
}

function tlsConfigField(raw: Raw, url: string): TlsConfig | null {
  let tls: TlsConfig | null;
  try {
    tls = tlsField(raw);
  } catch (err) {
    // The shared reader names the field the same way (config.tls...); only the error class differs.
    if (err instanceof SourceConfigError) throw new PolicyConfigError(err.field, err.message.slice(err.field.length + 2));
    throw err;
  }
  if (tls !== null && !isHttpsUrl(url)) throw new PolicyConfigError('config.tls', 'applies to an https url only');
  return tls;
}

/** Whether a checked url (templates allowed in its query) is https. */
export function isHttpsUrl(url: string): boolean {
  return /^https:/i.test(url);
}

export function isJsonType(contentType: string): boolean {
  return mediaType(contentType) === JSON_TYPE;
}

export function isFormType(contentType: string): boolean {
  return mediaType(contentType) === FORM_TYPE;
}

/** `type/subtype` of a content-type value, lower-case, without its parameters (charset...). */
function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}
