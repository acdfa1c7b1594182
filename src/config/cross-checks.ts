// Owns the rules that involve more than one key: TLS turning itself on when a certificate and key
// are given, what TLS and certificate usernames need, PROXY protocol's trusted balancers,
// listeners not sharing a port, and a database
// URL for the SQL stores.
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
  if (sources.get('mqtt.tls.enabled') === 'default' && tls.cert !== '' && tls.key !== '') tls.enabled = true;
  if (tls.cert !== '' && tls.key === '') throw invalid('mqtt.tls.key', 'is required when mqtt.tls.cert is set', sources, 'mqtt.tls.cert');
  if (tls.key !== '' && tls.cert === '') throw invalid('mqtt.tls.cert', 'is required when mqtt.tls.key is set', sources, 'mqtt.tls.key');
  if (tls.enabled && tls.cert === '') throw invalid('mqtt.tls.enabled', 'TLS needs mqtt.tls.cert and mqtt.tls.key', sources);
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
