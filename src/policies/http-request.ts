// Owns turning one query into the request an `http` policy sends: the url with its query-string
// templates filled (each value URL-encoded), the body fields filled and encoded as JSON or as a
// form (POST), or appended to the query string (GET), and the fixed headers. A value is always
// data: a username holding '&', '=' or '"' stays inside its own field.
import { isFormType, type HttpPolicyConfig } from './http-config.ts';
import { PARAM, allowedParams, fill, paramValue, paramsOf } from './params.ts';
import type { AclQuery, AuthQuery, PolicyKind, PolicyParam } from './types.ts';

export interface PolicyRequest {
  url: URL;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: Buffer | undefined;
}

type Query = AuthQuery | AclQuery;

export class HttpRequestTemplate {
  /** Every parameter the url and the body read. */
  readonly params: ReadonlySet<PolicyParam>;
  private readonly base: string;
  private readonly query: string;
  private readonly form: boolean;

  constructor(
    private readonly config: HttpPolicyConfig,
    kind: PolicyKind,
  ) {
    const q = config.url.indexOf('?');
    this.base = q < 0 ? config.url : config.url.slice(0, q);
    this.query = q < 0 ? '' : config.url.slice(q + 1);
    this.form = isFormType(config.headers['content-type'] ?? '');
    this.params = templateParams(config, kind);
  }

  build(q: Query): PolicyRequest {
    const fields = this.fields(q);
    const query = [fillEncoded(this.query, q)];
    if (this.config.method === 'GET') query.push(new URLSearchParams(fields).toString());
    const search = query.filter((part) => part !== '').join('&');
    const url = new URL(search === '' ? this.base : `${this.base}?${search}`);
    const body = this.config.method === 'POST' ? this.encode(fields) : undefined;
    return { url, method: this.config.method, headers: this.config.headers, body };
  }

  private fields(q: Query): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [field, template] of Object.entries(this.config.body)) out[field] = fill(template, q);
    return out;
  }

  private encode(fields: Record<string, string>): Buffer {
    return Buffer.from(this.form ? new URLSearchParams(fields).toString() : JSON.stringify(fields));
  }
}

/** `text` with every `${name}` replaced by its URL-encoded value ('' when absent). */
function fillEncoded(text: string, q: Query): string {
  return text.replace(PARAM, (_, name: string) => encodeURIComponent(paramValue(name as PolicyParam, q) ?? ''));
}

function templateParams(config: HttpPolicyConfig, kind: PolicyKind): Set<PolicyParam> {
  const allowed = allowedParams(kind);
  const used = paramsOf(config.url, allowed, 'config.url');
  for (const [field, template] of Object.entries(config.body)) {
    for (const p of paramsOf(template, allowed, `config.body.${field}`)) used.add(p);
  }
  return used;
}
