// Owns the config of a kafka source: validated and normalized from what the admin API received.
// The brokers come from `url` (kafka://host:9092,host2:9092, kafka+ssl:// for TLS; user:password@
// means SASL), `bootstrapServers` (a comma list or an array) or host/port fields. SASL is
// {mechanism: plain|scram-sha-256|scram-sha-512, username, password}; top-level username/password
// are its short form. Mistakes name their field.
import { intField, optionalString, portField, tlsField, type Raw, type TlsConfig } from './config-fields.ts';
import { SourceConfigError } from './types.ts';

export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export interface KafkaSaslConfig {
  mechanism: SaslMechanism;
  username: string;
  password: string;
}

export interface KafkaConfig {
  /** host:port of each bootstrap broker. */
  brokers: string[];
  clientId: string;
  /** -1: all in-sync replicas, 1: the leader, 0: none. */
  acks: -1 | 0 | 1;
  compression: 'none' | 'gzip';
  tls: TlsConfig | null;
  sasl: KafkaSaslConfig | null;
  /** Produce requests in flight at most. */
  poolSize: number;
  connectTimeout: number;
  requestTimeout: number;
}

export function parseKafkaConfig(raw: Raw): KafkaConfig {
  const url = optionalString(raw, 'url');
  const host = optionalString(raw, 'host');
  const given = [url !== undefined, raw.bootstrapServers !== undefined, host !== undefined].filter(Boolean).length;
  if (given > 1) throw new SourceConfigError('config.url', 'give one of url, bootstrapServers or host/port');
  let brokers: string[];
  let tls = tlsField(raw);
  let urlUser: string | undefined;
  let urlPassword: string | undefined;
  if (url !== undefined) {
    const m = /^(kafka|kafka\+ssl):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/?$/.exec(url);
    if (m === null) throw new SourceConfigError('config.url', 'must look like kafka://host:9092[,host2:9092]');
    if (m[1] === 'kafka+ssl' && tls === null) tls = { rejectUnauthorized: true };
    if (m[2]) urlUser = decodeURIComponent(m[2]);
    if (m[3]) urlPassword = decodeURIComponent(m[3]);
    brokers = brokerList(m[4].split(','), 'config.url');
  } else if (raw.bootstrapServers !== undefined) {
    const v = raw.bootstrapServers;
    const list = typeof v === 'string' ? v.split(',') : Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
    if (list === null) throw new SourceConfigError('config.bootstrapServers', 'must be "host:port,host:port" or an array of them');
    brokers = brokerList(list, 'config.bootstrapServers');
  } else {
    if (host === undefined || host === '') throw new SourceConfigError('config.host', 'is required (or give url or bootstrapServers)');
    brokers = [`${host}:${portField(raw, 'port', 9092)}`];
  }
  return {
    brokers,
    clientId: optionalString(raw, 'clientId') || 'spindle',
    acks: acksField(raw.acks),
    compression: compressionField(raw.compression),
    tls,
    sasl: saslField(raw, urlUser, urlPassword),
    poolSize: intField(raw, 'poolSize', 8, 1, 1024),
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
    requestTimeout: intField(raw, 'requestTimeout', 5000, 100, 600_000),
  };
}

function brokerList(items: string[], field: string): string[] {
  const brokers = items.map((s) => s.trim()).filter((s) => s !== '');
  if (brokers.length === 0) throw new SourceConfigError(field, 'names no broker');
  for (const b of brokers) {
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(b);
    if (m === null || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new SourceConfigError(field, `"${b}" is not host:port`);
  }
  return brokers;
}

function acksField(v: unknown): -1 | 0 | 1 {
  if (v === undefined || v === null || v === 'all') return -1;
  if (v === -1 || v === 0 || v === 1) return v;
  throw new SourceConfigError('config.acks', 'must be -1 (all), 0 or 1');
}

function compressionField(v: unknown): 'none' | 'gzip' {
  if (v === undefined || v === null) return 'none';
  if (v === 'none' || v === 'gzip') return v;
  throw new SourceConfigError('config.compression', 'must be "none" or "gzip"');
}

function saslField(raw: Raw, urlUser: string | undefined, urlPassword: string | undefined): KafkaSaslConfig | null {
  const v = raw.sasl;
  const username = optionalString(raw, 'username') ?? urlUser;
  const password = optionalString(raw, 'password') ?? urlPassword;
  if (v === undefined || v === null) {
    if (username === undefined) return null;
    return { mechanism: 'plain', username, password: password ?? '' };
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw new SourceConfigError('config.sasl', 'must be {mechanism, username, password}');
  const sasl = v as Raw;
  const mechanism = sasl.mechanism ?? 'plain';
  if (typeof mechanism !== 'string' || !(SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new SourceConfigError('config.sasl.mechanism', `must be one of ${SASL_MECHANISMS.join(', ')}`);
  }
  const user = sasl.username ?? username;
  if (typeof user !== 'string' || user === '') throw new SourceConfigError('config.sasl.username', 'is required');
  const pass = sasl.password ?? password ?? '';
  if (typeof pass !== 'string') throw new SourceConfigError('config.sasl.password', 'must be a string');
  return { mechanism: mechanism as SaslMechanism, username: user, password: pass };
}
