// The admin API's HTTPS (admin.tls.*): where its certificate comes from (files of its own, or an
// MQTT endpoint's), those files checked before uWebSockets.js is given them (it only says "App
// construction failed"), and where a plain-HTTP request is redirected to. No sockets here:
// server.ts owns them. Main thread.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';

import type { BrokerConfig } from '../config/index.ts';
import { ConfigError } from '../config/index.ts';
import type { EndpointConfig } from '../broker/endpoint-config.ts';

/** The certificate chain and key files to serve, and the key that named them (for errors). */
export interface HttpsFiles {
  cert: string;
  key: string;
  from: 'admin.tls.cert' | 'admin.tls.fromEndpoint';
}

/**
 * Where the admin API's certificate comes from, asked at start and at every reload (an
 * endpoint's files are the ones it has then); null: plain HTTP. Throws a ConfigError naming the
 * key when admin.tls.fromEndpoint names no endpoint, or one without a certificate.
 */
export function httpsSource(config: BrokerConfig, endpoint: (id: string) => EndpointConfig | undefined): (() => HttpsFiles) | null {
  const t = config.admin.tls;
  if (t.cert !== '') return () => ({ cert: t.cert, key: t.key, from: 'admin.tls.cert' });
  if (t.fromEndpoint === '') return null;
  const source = (): HttpsFiles => {
    const e = endpoint(t.fromEndpoint);
    if (e === undefined) throw new ConfigError('CONFIG_INVALID', `admin.tls.fromEndpoint: no endpoint ${t.fromEndpoint}`, 'admin.tls.fromEndpoint');
    const ssl = e.sslConfig;
    if (ssl?.cert === undefined || ssl.key === undefined) throw new ConfigError('CONFIG_INVALID', `admin.tls.fromEndpoint: endpoint ${t.fromEndpoint} has no certificate (${ssl ? 'PSK only' : 'no TLS'})`, 'admin.tls.fromEndpoint');
    return { cert: ssl.cert, key: ssl.key, from: 'admin.tls.fromEndpoint' };
  };
  source();
  return source;
}

/** The files of `source`, read and checked: a PEM certificate, a PEM private key, and the key
 * the certificate's. Throws a ConfigError naming the key and what is wrong. */
export function checkedHttpsFiles(source: () => HttpsFiles): HttpsFiles {
  const files = source();
  const fail = (message: string) => new ConfigError('CONFIG_INVALID', `${files.from}: ${message}`, files.from);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(files.cert));
  } catch (err) {
    throw fail(`${files.cert} is not a readable PEM certificate: ${(err as Error).message}`);
  }
  let key;
  try {
    key = createPrivateKey(readFileSync(files.key));
  } catch (err) {
    throw fail(`${files.key} is not a readable PEM private key: ${(err as Error).message}`);
  }
  if (!cert.checkPrivateKey(key)) throw fail(`${files.key} is not the private key of ${files.cert}`);
  return files;
}

/**
 * Where a plain-HTTP request goes (admin.tls.plain redirect): the same host the client asked
 * for (its Host header without the port; `fallback` when it sent none), the HTTPS port, the same
 * path and query.
 */
export function httpsLocation(hostHeader: string, fallback: string, port: number, path: string, query: string): string {
  let host = hostHeader.trim();
  if (host.startsWith('[')) host = host.slice(0, host.indexOf(']') + 1);
  else if (host.includes(':')) host = host.slice(0, host.indexOf(':'));
  // Only a host name or an address: a Host header is the client's to write.
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/.test(host)) host = fallback;
  return `https://${host}:${port}${path}${query ? `?${query}` : ''}`;
}
