// Owns the rules that involve more than one key: TLS turning itself on when a certificate and key
// (or a PSK source) are given, what TLS and certificate usernames need, the PSK file read and
// parsed, PROXY protocol's trusted balancers, listeners not sharing a port, the admin API's HTTPS
// keys, and a database URL for the SQL stores.
import { readFileSync } from 'node:fs';

import { parsePskFile } from '../auth/mosquitto/psk-file.ts';
import { ConfigError } from './errors.ts';
import type { BrokerConfig } from './types.ts';

/** Where each key's value came from: "default", "file ./x.yaml", "environment variable ...". */
export type Sources = ReadonlyMap<string, string>;

/** The error for `key`, citing the source of `culprit`: the key whose setting broke the rule. */
function invalid(key: string, message: string, sources: Sources, culprit = key): ConfigError {
  const source = sources.get(culprit) ?? 'default';
  return new ConfigError('CONFIG_INVALID', `${key}: ${message} (from ${source})`, key, source);
}

/** Applies the TLS auto-enable rule to `config` (mutated) and checks every cross-key rule. */
export function applyCrossChecks(config: BrokerConfig, sources: Sources): void {
  const tls = config.mqtt.tls;
  const psk = tls.psk.file !== '' || tls.psk.fromClientDb;
  if (sources.get('mqtt.tls.enabled') === 'default' && ((tls.cert !== '' && tls.key !== '') || psk)) tls.enabled = true;
  if (tls.cert !== '' && tls.key === '') throw invalid('mqtt.tls.key', 'is required when mqtt.tls.cert is set', sources, 'mqtt.tls.cert');
  if (tls.key !== '' && tls.cert === '') throw invalid('mqtt.tls.cert', 'is required when mqtt.tls.key is set', sources, 'mqtt.tls.key');
  if (tls.enabled && tls.cert === '' && !psk) throw invalid('mqtt.tls.enabled', 'TLS needs mqtt.tls.cert and mqtt.tls.key (or TLS-PSK: mqtt.tls.psk.file or mqtt.tls.psk.fromClientDb)', sources);
  if (tls.enabled && tls.psk.file !== '') checkPskFile(tls.psk.file, sources);
  if (tls.enabled && tls.requestCert && tls.cert === '') throw invalid('mqtt.tls.requestCert', 'needs a server certificate (mqtt.tls.cert and key): a PSK-only listener asks for no client certificate', sources);
  if (tls.enabled && tls.cnAsUsername && !tls.requestCert) {
    throw invalid('mqtt.tls.cnAsUsername', 'needs mqtt.tls.requestCert: true (no client certificate, no CN)', sources);
  }
  if (tls.enabled && tls.cnAsUsername && tls.ca === '') {
    throw invalid('mqtt.tls.cnAsUsername', 'needs mqtt.tls.ca: with the system roots any public certificate could claim a username', sources);
  }
  for (const name of ['tcp', 'tls', 'ws'] as const) {
    const l: { proxyProtocol: string; proxyProtocolTrusted: string[]; proxyProtocolCnAsUsername?: boolean } = config.mqtt[name];
    if (l.proxyProtocol !== 'off' && l.proxyProtocolTrusted.length === 0) {
      throw invalid(`mqtt.${name}.proxyProtocolTrusted`, `is required with mqtt.${name}.proxyProtocol '${l.proxyProtocol}': the addresses or CIDR blocks of the balancers whose headers are taken`, sources, `mqtt.${name}.proxyProtocol`);
    }
    if (l.proxyProtocolCnAsUsername === true && l.proxyProtocol === 'off') {
      throw invalid(`mqtt.${name}.proxyProtocolCnAsUsername`, `needs mqtt.${name}.proxyProtocol 'optional' or 'required'`, sources);
    }
  }
  checkPortsDistinct(config, sources);
  checkAdminTls(config, sources);
  const store = config.store;
  if ((store.storeType === 'POSTGRESQL' || store.storeType === 'MYSQL') && store.datasource.url === '') {
    throw invalid('store.datasource.url', `is required for store.storeType ${store.storeType}`, sources, 'store.storeType');
  }
}

function checkPortsDistinct(config: BrokerConfig, sources: Sources): void {
  const used = new Map<number, string>();
  for (const name of ['tcp', 'ws', 'tls'] as const) {
    const listener = config.mqtt[name];
    if (!listener.enabled || listener.port === 0) continue;
    const key = `mqtt.${name}.port`;
    const other = used.get(listener.port);
    if (other !== undefined) throw invalid(key, `port ${listener.port} is already used by ${other}`, sources);
    used.set(listener.port, key);
  }
}

/** mqtt.tls.psk.file: readable, and every line `identity:hexkey` (the error names the line). */
function checkPskFile(file: string, sources: Sources): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalid('mqtt.tls.psk.file', `cannot read ${file}: ${(err as Error).message}`, sources);
  }
  try {
    parsePskFile(text, file);
  } catch (err) {
    throw invalid('mqtt.tls.psk.file', (err as Error).message, sources);
  }
}

/** admin.tls.*: a certificate and its key, or an endpoint's, not both; plain HTTP beside HTTPS
 * only with HTTPS, on a port of its own. (fromEndpoint names an endpoint: checked at start, when
 * the endpoints are known.) */
function checkAdminTls(config: BrokerConfig, sources: Sources): void {
  const a = config.admin;
  const t = a.tls;
  if (t.cert !== '' && t.key === '') throw invalid('admin.tls.key', 'is required when admin.tls.cert is set', sources, 'admin.tls.cert');
  if (t.key !== '' && t.cert === '') throw invalid('admin.tls.cert', 'is required when admin.tls.key is set', sources, 'admin.tls.key');
  if (t.cert !== '' && t.fromEndpoint !== '') throw invalid('admin.tls.fromEndpoint', 'give admin.tls.cert and key, or admin.tls.fromEndpoint, not both', sources);
  const https = t.cert !== '' || t.fromEndpoint !== '';
  if (t.plain !== 'off' && !https) throw invalid('admin.tls.plain', `'${t.plain}' needs HTTPS: admin.tls.cert and key, or admin.tls.fromEndpoint`, sources);
  if (t.plain !== 'off' && t.plainPort !== 0 && t.plainPort === a.port && (t.plainHost === '' || t.plainHost === a.host)) {
    throw invalid('admin.tls.plainPort', `port ${t.plainPort} is admin.port, where HTTPS is served`, sources);
  }
}
