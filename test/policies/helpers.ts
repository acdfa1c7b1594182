// What the policy tests share: a real node:http endpoint that records what it received and answers
// with the test's handler, a logger that keeps its lines, a PolicyContext without data sources,
// a PolicyRecord of a type and config, and a self-signed certificate.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';

import { createLogger, type Logger } from '../../src/log/index.ts';
import type { PolicyContext, PolicyRecord } from '../../src/policies/types.ts';

export { closedPort } from '../sources/helpers.ts';

// A self-signed P-256 certificate and its key, made for this test only (openssl req -x509):
// an https endpoint in the http tests, a public key given as a certificate in the jwt tests.
export const CERT_PEM = `-----BEGIN CERTIFICATE-----
MIIBjTCCATOgAwIBAgIURYE5ORpzcpSu/7SjWe69R374q/kwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQc3BpbmRsZS1qd3QtdGVzdDAgFw0yNjExMjUwMTM3NTVaGA8y
MTI2MTEwMTAxMzc1NVowGzEZMBcGA1UEAwwQc3BpbmRsZS1qd3QtdGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABO6rdbCOTuFDBf2HSapmRgV8XQBUJjRkaqyE
CJiVd4/x5Nqf37JKqH+pbCAueTu7huGSeHBMGay5OprX+S3WIGqjUzBRMB0GA1Ud
DgQWBBRpeZULGgTL24NpuGX0IcoT5mq8JjAfBgNVHSMEGDAWgBRpeZULGgTL24Np
uGX0IcoT5mq8JjAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQDk
qF9+bkfE4FJoESaNATL/Cts3nmjmjVqSzHPjm5HxDwIgVr7sGbA4Lj+TlLGpHCo3
dsdBpjk+5peMu5BZEjU9eS8=
-----END CERTIFICATE-----`;
export const CERT_KEY_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgVlbyx3VscTdUj1K3
VAORTwM2hz5CnK+W6XFsFt4TvmahRANCAATuq3Wwjk7hQwX9h0mqZkYFfF0AVCY0
ZGqshAiYlXeP8eTan9+ySqh/qWwgLnk7u4bhknhwTBmsuTqa1/kt1iBq
-----END PRIVATE KEY-----`;

export interface Received {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Handler = (req: Received, res: http.ServerResponse) => void;

export interface Endpoint {
  /** http://127.0.0.1:<port> */
  url: string;
  received: Received[];
  /** TCP connections accepted so far. */
  connections: () => number;
  handle: (h: Handler) => void;
  close: () => Promise<void>;
}

export async function endpoint(handler: Handler): Promise<Endpoint> {
  let current = handler;
  let connections = 0;
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', url: new URL(req.url ?? '/', 'http://endpoint'), headers: req.headers, body: Buffer.concat(chunks).toString() };
      received.push(r);
      current(r, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    connections: () => connections,
    handle: (h) => {
      current = h;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A logger at warn whose lines are kept, parsed. */
export function keptLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ level: 'warn', stream }), lines };
}

export function context(log: Logger = keptLog().log): PolicyContext {
  return { source: () => undefined, typeOf: () => undefined, log };
}

export function record<T extends string>(type: T, config: Record<string, unknown>, name = `test-${type}`): PolicyRecord<T> {
  return { id: `id-${name}`, name, type, config, enabled: true, order: 0, createTime: new Date(0).toISOString() };
}
