// Owns the config of a NACOS command: the Nacos servers (serverAddr "h:p,h:p" or an array; port
// 8848 when absent; tls for https), namespace (default public), group (default DEFAULT_GROUP),
// serviceName (required), clusterName (default DEFAULT), weight, the address to advertise (ip;
// absent: the first non-internal IPv4 of this machine when the command starts), Nacos auth
// (username/password, the password redacted everywhere), metadata added to every instance (string
// values; the keys the command sets itself are refused), and which endpoints to register
// (endpoints: ids; absent: every enabled MQTT endpoint).
import net from 'node:net';

import { optionalString, requiredString, type Raw } from '../../sources/config-fields.ts';
import { SourceConfigError } from '../../sources/types.ts';

export const NACOS_FIELDS = ['serverAddr', 'tls', 'namespace', 'group', 'serviceName', 'clusterName', 'weight', 'ip', 'username', 'password', 'metadata', 'endpoints'] as const;

/** The metadata keys the command sets on each instance itself. */
export const NACOS_OWN_METADATA = ['protocol', 'nodeName', 'endpoint', 'path'] as const;

const NACOS_DEFAULT_PORT = 8848;
const MAX_SERVERS = 16;
const MAX_METADATA_KEYS = 32;
const MAX_METADATA_KEY = 128;
const MAX_METADATA_VALUE = 1024;
const MAX_ENDPOINTS = 64;
/** The characters Nacos accepts in a namespace, group, service or cluster name. */
const NACOS_NAME = /^[A-Za-z0-9._:-]+$/;

export interface NacosServer {
  host: string;
  port: number;
}

export interface NacosCommandConfig {
  servers: NacosServer[];
  tls: boolean;
  namespace: string;
  group: string;
  serviceName: string;
  clusterName: string;
  weight: number;
  /** null: the first non-internal IPv4 when the command starts. */
  ip: string | null;
  auth: { username: string; password: string } | null;
  metadata: Record<string, string>;
  /** null: every enabled endpoint. */
  endpoints: string[] | null;
}

export function parseNacosCommandConfig(raw: Raw): NacosCommandConfig {
  if (raw.tls !== undefined && typeof raw.tls !== 'boolean') throw new SourceConfigError('config.tls', 'must be true or false');
  const username = optionalString(raw, 'username');
  const password = optionalString(raw, 'password');
  if ((username === undefined) !== (password === undefined)) throw new SourceConfigError(username === undefined ? 'config.username' : 'config.password', 'give username and password together (Nacos auth), or neither');
  let weight = 1;
  if (raw.weight !== undefined) {
    if (typeof raw.weight !== 'number' || !Number.isFinite(raw.weight) || raw.weight < 0.01 || raw.weight > 10_000) throw new SourceConfigError('config.weight', 'must be a number from 0.01 to 10000');
    weight = raw.weight;
  }
  const ip = optionalString(raw, 'ip');
  if (ip !== undefined && net.isIP(ip) === 0) throw new SourceConfigError('config.ip', `${JSON.stringify(ip)} is not an IPv4 or IPv6 address (the address clients should connect to)`);
  return {
    servers: serverList(raw.serverAddr),
    tls: raw.tls === true,
    namespace: nacosName(raw, 'namespace', 'public'),
    group: nacosName(raw, 'group', 'DEFAULT_GROUP'),
    serviceName: nacosName(raw, 'serviceName', undefined),
    clusterName: nacosName(raw, 'clusterName', 'DEFAULT'),
    weight,
    ip: ip ?? null,
    auth: username !== undefined && password !== undefined ? { username, password } : null,
    metadata: metadataField(raw.metadata),
    endpoints: endpointList(raw.endpoints),
  };
}

function nacosName(raw: Raw, key: string, fallback: string | undefined): string {
  const value = fallback === undefined ? requiredString(raw, key) : (optionalString(raw, key) ?? fallback);
  if (value.length === 0 || value.length > 128 || !NACOS_NAME.test(value)) throw new SourceConfigError(`config.${key}`, `must be 1 to 128 of A-Z a-z 0-9 . _ : - (got ${JSON.stringify(value.slice(0, 140))})`);
  return value;
}

function serverList(value: unknown): NacosServer[] {
  const field = 'config.serverAddr';
  if (value === undefined || value === null) throw new SourceConfigError(field, 'is required ("host:port,host:port" or an array of "host:port"; port 8848 when absent)');
  let list: unknown[];
  if (typeof value === 'string') list = value.split(',').map((s) => s.trim());
  else if (Array.isArray(value)) list = value;
  else throw new SourceConfigError(field, 'must be "host:port,host:port" or an array of "host:port"');
  if (list.length === 0 || list.length > MAX_SERVERS) throw new SourceConfigError(field, `must name 1 to ${MAX_SERVERS} servers`);
  return list.map((s) => {
    if (typeof s !== 'string' || s === '') throw new SourceConfigError(field, `${JSON.stringify(s)} is not "host:port"`);
    const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(s);
    const port = m?.[2] === undefined ? NACOS_DEFAULT_PORT : Number(m[2]);
    if (!m || port < 1 || port > 65535) throw new SourceConfigError(field, `${JSON.stringify(s)} is not "host:port" (port 1 to 65535)`);
    return { host: m[1], port };
  });
}

function metadataField(value: unknown): Record<string, string> {
  const field = 'config.metadata';
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new SourceConfigError(field, 'must be an object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_METADATA_KEYS) throw new SourceConfigError(field, `at most ${MAX_METADATA_KEYS} keys`);
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > MAX_METADATA_KEY) throw new SourceConfigError(field, `keys must be 1 to ${MAX_METADATA_KEY} characters`);
    if ((NACOS_OWN_METADATA as readonly string[]).includes(k)) throw new SourceConfigError(`${field}.${k}`, `is set by the command itself (${NACOS_OWN_METADATA.join(', ')})`);
    if (typeof v !== 'string' || v.length > MAX_METADATA_VALUE) throw new SourceConfigError(`${field}.${k}`, `must be a string of at most ${MAX_METADATA_VALUE} characters`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

function endpointList(value: unknown): string[] | null {
  const field = 'config.endpoints';
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ENDPOINTS) throw new SourceConfigError(field, `must be an array of 1 to ${MAX_ENDPOINTS} endpoint ids (absent: every enabled endpoint)`);
  for (const id of value) if (typeof id !== 'string' || id === '') throw new SourceConfigError(field, `${JSON.stringify(id)} is not an endpoint id`);
  return [...new Set(value as string[])];
}

/** The secrets of a parsed config, kept out of error messages and logs. */
export function nacosSecrets(config: NacosCommandConfig): string[] {
  return config.auth ? [config.auth.password, encodeURIComponent(config.auth.password)] : [];
}
