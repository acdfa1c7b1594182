// Owns the http source (web hooks): its config {url, method, headers, timeout, poolSize, tls}, one
// keep-alive agent per source with poolSize sockets and a limiter of poolSize requests in flight
// (further requests wait, under their deadline: limiter.ts), and the mapping of statuses and socket errors
// to SourceError. Built on node:http/https rather than the global fetch because fetch takes TLS
// options (rejectUnauthorized, ca) only through an undici Agent, which is not a dependency here.
// `check` connects (TCP, and TLS for https) without sending a request: see tcp-connect.ts.
import http from 'node:http';
import https from 'node:https';

import type { Logger } from '../log/index.ts';
import { classifyNetworkError } from './classify.ts';
import { configObject, intField, optionalString, requiredString, tlsField, tlsOptions, type TlsConfig } from './config-fields.ts';
import { HealthTracker, isUnreachable } from './health.ts';
import { Limiter, type Ticket } from './limiter.ts';
import { connectOnce, type ConnectTarget } from './tcp-connect.ts';
import { withTimeout } from './timeout.ts';
import { SourceConfigError, SourceError, type CheckResult, type HttpRequest, type HttpResponse, type HttpSource, type SourceHealth } from './types.ts';

export interface HttpConfig {
  url: string;
  method: string;
  headers: Record<string, string>;
  timeout: number;
  poolSize: number;
  tls: TlsConfig | null;
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** A response body beyond this is cut: a web hook's answer is read for its status, not its bulk. */
const MAX_RESPONSE_BYTES = 1 << 20;

export function parseHttpConfig(input: unknown): HttpConfig {
  const raw = configObject(input);
  const url = requiredString(raw, 'url');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SourceConfigError('config.url', 'is not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new SourceConfigError('config.url', 'scheme must be http or https');
  const method = (optionalString(raw, 'method') ?? 'POST').toUpperCase();
  if (!METHODS.has(method)) throw new SourceConfigError('config.method', `must be one of ${[...METHODS].join(', ')}`);
  return {
    url,
    method,
    headers: headersField(raw.headers),
    timeout: intField(raw, 'timeout', 5000, 100, 600_000),
    poolSize: intField(raw, 'poolSize', 8, 1, 1000),
    tls: tlsField(raw),
  };
}

function headersField(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new SourceConfigError('config.headers', 'must be an object of strings');
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(v)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new SourceConfigError(`config.headers.${name}`, 'is not a valid header name');
    if (typeof value !== 'string') throw new SourceConfigError(`config.headers.${name}`, 'must be a string');
    out[name] = value;
  }
  return out;
}

export function createHttpSource(id: string, config: HttpConfig, log: Logger): HttpSource {
  return new PooledHttpSource(id, config, log);
}

class PooledHttpSource implements HttpSource {
  readonly type = 'http' as const;
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly tracker: HealthTracker;
  private readonly limiter: Limiter;
  private readonly target: ConnectTarget;
  private readonly headers: Record<string, string>;
  private closed = false;

  constructor(
    readonly id: string,
    private readonly config: HttpConfig,
    log: Logger,
  ) {
    this.base = new URL(config.url);
    const secure = this.base.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: config.poolSize, maxFreeSockets: config.poolSize };
    const tlsOpts = config.tls ? tlsOptions(config.tls) : { rejectUnauthorized: true };
    this.agent = secure ? new https.Agent({ ...agentOptions, ...tlsOpts }) : new http.Agent(agentOptions);
    this.target = {
      host: this.base.hostname.replace(/^\[|\]$/g, ''),
      port: this.base.port ? Number(this.base.port) : secure ? 443 : 80,
      ...(secure ? { tls: tlsOpts } : {}),
    };
    this.headers = lowerCaseKeys(config.headers);
    this.limiter = new Limiter(config.poolSize);
    this.tracker = new HealthTracker({ log: log.child({ source: id, type: 'http' }), probe: () => this.connect(config.timeout), inFlight: () => this.limiter.active });
    // Reach the endpoint once in the background: one that is down at start shows in the health.
    void this.connect(config.timeout).then(
      () => this.tracker.succeeded(),
      (err: unknown) => this.tracker.wentDown(err),
    );
  }

  health(): SourceHealth {
    return this.tracker.snapshot();
  }

  async check(timeoutMs = this.config.timeout): Promise<CheckResult> {
    const started = performance.now();
    try {
      await this.connect(timeoutMs);
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const e = classifyHttpError(err);
      return { ok: false, latencyMs: Math.round(performance.now() - started), failure: e.kind, message: e.message };
    }
  }

  request(req: HttpRequest): Promise<HttpResponse> {
    if (this.closed) return Promise.reject(new SourceError(`source ${this.id} is closed`, 'other', false));
    return this.tracker.track(this.send(req), isUnreachable);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tracker.close();
    this.agent.destroy();
  }

  private async connect(timeoutMs: number): Promise<void> {
    try {
      await connectOnce(this.target, timeoutMs);
    } catch (err) {
      throw classifyHttpError(err);
    }
  }

  private async send(req: HttpRequest): Promise<HttpResponse> {
    const url = joinUrl(this.base, req.path ?? '');
    const headers = { ...this.headers, ...lowerCaseKeys(req.headers ?? {}) };
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
    if (body !== undefined) headers['content-length'] = String(body.length);
    const transport = url.protocol === 'https:' ? https : http;
    let outgoing: http.ClientRequest | undefined;
    const ticket: Ticket = { expired: false };
    const exchange = this.limiter.run(() => new Promise<HttpResponse>((resolve, reject) => {
      outgoing = transport.request(url, { method: req.method ?? this.config.method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: text });
        });
      });
      outgoing.on('error', reject);
      outgoing.end(body);
    }), ticket);
    exchange.catch(() => {}); // after the deadline answered, nobody awaits the exchange
    let response: HttpResponse;
    try {
      response = await withTimeout(exchange, this.config.timeout, `${url.host} request`, () => {
        ticket.expired = true;
        outgoing?.destroy();
      });
    } catch (err) {
      throw classifyHttpError(err);
    }
    if (response.status >= 400) {
      const transient = response.status >= 500 || response.status === 429;
      throw new SourceError(`http ${response.status} from ${url.host}${url.pathname}: ${response.body.slice(0, 200)}`, 'http', transient);
    }
    return response;
  }
}

export function classifyHttpError(err: unknown): SourceError {
  if (err instanceof SourceError) return err;
  const text = `http: ${err instanceof Error ? err.message : String(err)}`;
  const network = classifyNetworkError(err);
  if (network) return new SourceError(text, network, network !== 'tls', { cause: err });
  // Reset, broken pipe, a parse error of the response: the link failed, a retry may work.
  return new SourceError(text, 'protocol', true, { cause: err });
}

/** The source's URL with `path` appended to its path (one slash between) and its query merged. */
export function joinUrl(base: URL, path: string): URL {
  const url = new URL(base);
  if (path === '') return url;
  const q = path.indexOf('?');
  const segment = q >= 0 ? path.slice(0, q) : path;
  const query = q >= 0 ? path.slice(q + 1) : '';
  if (segment !== '') url.pathname = base.pathname.replace(/\/$/, '') + (segment.startsWith('/') ? segment : `/${segment}`);
  if (query !== '') url.search = url.search ? `${url.search}&${query}` : `?${query}`;
  return url;
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k.toLowerCase()] = v;
  return out;
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
