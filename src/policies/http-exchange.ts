// Owns the transport of one `http` policy (main thread): its own keep-alive agent (ended by
// close()), at most MAX_IN_FLIGHT requests at once with the others waiting in arrival order
// (sources/limiter.ts), at most MAX_WAITING waiting (beyond that a request fails at once as
// 'busy': a CONNECT storm against a slow endpoint is answered "ignore", not queued without end),
// one deadline for waiting plus the exchange, and a response body read up to MAX_RESPONSE_BYTES.
// Built on node:http/https rather than fetch for the same reason as the http source: fetch takes
// TLS options (rejectUnauthorized, ca) only through an undici Agent, which is not a dependency.
import http from 'node:http';
import https from 'node:https';

import { tlsOptions, type TlsConfig } from '../sources/config-fields.ts';
import { classifyNetworkError } from '../sources/classify.ts';
import { Limiter, type Ticket } from '../sources/limiter.ts';
import { withTimeout } from '../sources/timeout.ts';
import { SourceError } from '../sources/types.ts';
import type { PolicyRequest } from './http-request.ts';

export const MAX_IN_FLIGHT = 32;
export const MAX_WAITING = 1024;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface PolicyResponse {
  status: number;
  contentType: string | undefined;
  body: string;
}

/** Why no response could be read. 'too-large' still carries the status that was answered. */
export type ExchangeFailureKind = 'dns' | 'refused' | 'timeout' | 'tls' | 'protocol' | 'busy' | 'too-large' | 'closed';

export class ExchangeError extends Error {
  constructor(
    message: string,
    readonly kind: ExchangeFailureKind,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ExchangeError';
  }
}

export class HttpExchanger {
  private readonly agent: http.Agent;
  private readonly limiter = new Limiter(MAX_IN_FLIGHT);
  private closed = false;

  constructor(
    secure: boolean,
    tls: TlsConfig | null,
    private readonly timeoutMs: number,
  ) {
    const options = { keepAlive: true, maxSockets: MAX_IN_FLIGHT, maxFreeSockets: MAX_IN_FLIGHT };
    this.agent = secure ? new https.Agent({ ...options, ...tlsOptions(tls ?? { rejectUnauthorized: true }) }) : new http.Agent(options);
  }

  /** Rejects with an ExchangeError only. */
  async send(req: PolicyRequest): Promise<PolicyResponse> {
    if (this.closed) throw new ExchangeError('the policy is closed', 'closed');
    if (this.limiter.queued >= MAX_WAITING) throw new ExchangeError(`${MAX_WAITING} requests are already waiting for one of ${MAX_IN_FLIGHT} connections`, 'busy');
    const ticket: Ticket = { expired: false };
    let outgoing: http.ClientRequest | undefined;
    const exchange = this.limiter.run(() => this.exchange(req, (r) => (outgoing = r)), ticket);
    exchange.catch(() => {}); // after the deadline answered, nobody awaits the exchange
    try {
      return await withTimeout(exchange, this.timeoutMs, `request to ${req.url.host}`, function cancel() {
        ticket.expired = true;
        outgoing?.destroy();
      });
    } catch (err) {
      throw exchangeErrorOf(err);
    }
  }

  close(): void {
    this.closed = true;
    this.agent.destroy();
  }

  private exchange(req: PolicyRequest, started: (r: http.ClientRequest) => void): Promise<PolicyResponse> {
    return new Promise<PolicyResponse>((resolve, reject) => {
      const headers = { ...req.headers };
      if (req.body !== undefined) headers['content-length'] = String(req.body.length);
      const transport = req.url.protocol === 'https:' ? https : http;
      const outgoing = transport.request(req.url, { method: req.method, headers, agent: this.agent }, (res) => {
        readBounded(res).then(resolve, reject);
      });
      started(outgoing);
      outgoing.on('error', reject);
      outgoing.end(req.body);
    });
  }
}

/** The response with its body, or an ExchangeError('too-large') once the body passes the bound. */
function readBounded(res: http.IncomingMessage): Promise<PolicyResponse> {
  const status = res.statusCode ?? 0;
  return new Promise<PolicyResponse>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    res.on('data', function collect(chunk: Buffer) {
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) {
        reject(new ExchangeError(`HTTP ${status} with a body larger than ${MAX_RESPONSE_BYTES} bytes`, 'too-large', status));
        res.destroy();
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', function complete() {
      ended = true;
      resolve({ status, contentType: res.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
    });
    res.on('error', reject);
    res.on('close', function closedEarly() {
      if (!ended) reject(new ExchangeError(`HTTP ${status}: the connection closed before the body ended`, 'protocol', status));
    });
  });
}

function exchangeErrorOf(err: unknown): ExchangeError {
  if (err instanceof ExchangeError) return err;
  if (err instanceof SourceError && err.kind === 'timeout') return new ExchangeError(`no answer: ${err.message}`, 'timeout', undefined, { cause: err });
  const detail = err instanceof Error ? err.message : String(err);
  const kind = classifyNetworkError(err);
  switch (kind) {
    case 'dns':
      return new ExchangeError(`host name not found (${detail})`, 'dns', undefined, { cause: err });
    case 'refused':
      return new ExchangeError(`connection refused (${detail})`, 'refused', undefined, { cause: err });
    case 'timeout':
      return new ExchangeError(`connection timed out (${detail})`, 'timeout', undefined, { cause: err });
    case 'tls':
      return new ExchangeError(`TLS failed (${detail})`, 'tls', undefined, { cause: err });
    default:
      // A reset, a socket closed mid-answer, or something that does not speak HTTP.
      return new ExchangeError(`the exchange failed (${detail})`, 'protocol', undefined, { cause: err });
  }
}
