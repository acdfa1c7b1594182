// The shape of an endpoint (an MQTT listener) as the admin API and the store know it, its
// validation, and the endpoints the configuration file defines. Pure data: no sockets here.
// Limits that are absent are unlimited (the spec's ranges apply to values that are given).
import { existsSync } from 'node:fs';

import type { BrokerConfig } from '../config/index.ts';
import { DomainError } from '../errors/domain-error.ts';

export interface SslConfig {
  /** PEM file paths. */
  cert: string;
  key: string;
  ca?: string;
  requestCert?: boolean;
  rejectUnauthorized?: boolean;
  cnAsUsername?: boolean;
}

export interface ServerOptions {
  /** Pending-connection queue length of the listening socket; DEFAULT_BACKLOG when absent. */
  backlog?: number;
}

/** Accept queue of a listening socket without serverOptions.backlog (the kernel caps it at net.core.somaxconn). */
export const DEFAULT_BACKLOG = 1024;

export interface ChildOptions {
  /** TCP_NODELAY on accepted sockets (default true). */
  tcpNoDelay?: boolean;
  /** SO_KEEPALIVE on accepted sockets (default false). */
  keepAlive?: boolean;
  /** Seconds of idle before the first keepalive probe. */
  keepAliveInitialDelay?: number;
}

export interface EndpointConfig {
  id: string;
  port: number;
  /** Bind address; the broker's mqtt.host when absent. */
  host?: string;
  useWebsocket: boolean;
  /** WebSocket path (with useWebsocket). */
  path: string;
  enableAuth: boolean;
  enableAcl: boolean;
  enableBridge: boolean;
  /** Largest MQTT packet, bytes: advertised in the v5 CONNACK; larger packets: DISCONNECT 0x95. */
  messageMaxSize: number;
  maxSessionSize?: number;
  maxConnectionSize?: number;
  maxConnectionPerSecond?: number;
  /** TLS (or WSS with useWebsocket) when present. */
  sslConfig?: SslConfig;
  serverOptions: ServerOptions;
  childOptions: ChildOptions;
  enabled: boolean;
  isDefault: boolean;
  createTime: string;
  /** Where it came from: the configuration file, or the admin API. */
  source: 'config' | 'api';
}

/** A field's problem: a domain error, 400 INVALID_PARAMETER naming it. */
export class EndpointFieldError extends DomainError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_PARAMETER', `${field}: ${message}`, { field });
    this.name = 'EndpointFieldError';
  }
}

export const LIMITS = {
  maxConnectionSize: [1, 65535],
  maxSessionSize: [1, 10000],
  messageMaxSize: [1024, 16777216],
  maxConnectionPerSecond: [1, 1_000_000],
  port: [1, 65535],
} as const;

const ID = /^[A-Za-z0-9._-]{1,64}$/;
const FIELDS = ['id', 'port', 'host', 'useWebsocket', 'path', 'enableAuth', 'enableAcl', 'enableBridge', 'messageMaxSize', 'maxSessionSize', 'maxConnectionSize', 'maxConnectionPerSecond', 'sslConfig', 'serverOptions', 'childOptions', 'enabled', 'isDefault'] as const;
const SSL_FIELDS = ['cert', 'key', 'ca', 'requestCert', 'rejectUnauthorized', 'cnAsUsername'];
const SERVER_FIELDS = ['backlog'];
const CHILD_FIELDS = ['tcpNoDelay', 'keepAlive', 'keepAliveInitialDelay'];

type Input = Record<string, unknown>;

function isObject(v: unknown): v is Input {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkInt(field: string, v: unknown, [min, max]: readonly [number, number]): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new EndpointFieldError(field, `expected an integer, got ${JSON.stringify(v)}`);
  if (v < min || v > max) throw new EndpointFieldError(field, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

function checkBool(field: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new EndpointFieldError(field, `expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

function checkString(field: string, v: unknown): string {
  if (typeof v !== 'string') throw new EndpointFieldError(field, `expected a string, got ${JSON.stringify(v)}`);
  return v;
}

function onlyKnown(field: string, v: Input, known: readonly string[]): void {
  for (const k of Object.keys(v)) if (!known.includes(k)) throw new EndpointFieldError(field ? `${field}.${k}` : k, 'unknown field');
}

/**
 * The fields of `input` checked and typed (only those present). Throws EndpointFieldError
 * naming the first bad field. Unknown fields are refused, so a typo is not silently ignored.
 */
export function checkEndpointFields(input: unknown): Partial<EndpointConfig> {
  if (!isObject(input)) throw new EndpointFieldError('body', 'expected a JSON object');
  onlyKnown('', input, FIELDS);
  const out: Partial<EndpointConfig> = {};
  const v = input;
  if (v.id !== undefined) {
    const id = checkString('id', v.id);
    if (!ID.test(id)) throw new EndpointFieldError('id', '1 to 64 of A-Z a-z 0-9 . _ -');
    out.id = id;
  }
  if (v.port !== undefined) out.port = checkInt('port', v.port, LIMITS.port);
  if (v.host !== undefined) {
    const host = checkString('host', v.host);
    if (host === '') throw new EndpointFieldError('host', 'must not be empty');
    out.host = host;
  }
  if (v.useWebsocket !== undefined) out.useWebsocket = checkBool('useWebsocket', v.useWebsocket);
  if (v.path !== undefined) {
    const path = checkString('path', v.path);
    if (!path.startsWith('/')) throw new EndpointFieldError('path', "must start with '/'");
    out.path = path;
  }
  for (const f of ['enableAuth', 'enableAcl', 'enabled', 'isDefault'] as const) if (v[f] !== undefined) out[f] = checkBool(f, v[f]);
  if (v.enableBridge !== undefined) {
    out.enableBridge = checkBool('enableBridge', v.enableBridge);
    // A bridge is a connection of the whole broker to a remote one (src/bridges), not a property
    // of a listener: an endpoint must not claim a setting that would do nothing.
    if (out.enableBridge) throw new EndpointFieldError('enableBridge', 'bridges belong to the broker, not to an endpoint: configure them with the `bridges` key or /bridge/add');
  }
  for (const f of ['messageMaxSize', 'maxSessionSize', 'maxConnectionSize', 'maxConnectionPerSecond'] as const) {
    if (v[f] !== undefined && v[f] !== null) out[f] = checkInt(f, v[f], LIMITS[f]);
  }
  if (v.sslConfig !== undefined && v.sslConfig !== null) {
    if (!isObject(v.sslConfig)) throw new EndpointFieldError('sslConfig', 'expected an object');
    const s = v.sslConfig;
    onlyKnown('sslConfig', s, SSL_FIELDS);
    const ssl: SslConfig = { cert: '', key: '' };
    for (const f of ['cert', 'key', 'ca'] as const) {
      if (s[f] === undefined) continue;
      const file = checkString(`sslConfig.${f}`, s[f]);
      if (!existsSync(file)) throw new EndpointFieldError(`sslConfig.${f}`, `no such file: ${file}`);
      ssl[f] = file;
    }
    if (!ssl.cert) throw new EndpointFieldError('sslConfig.cert', 'is required (a PEM file path)');
    if (!ssl.key) throw new EndpointFieldError('sslConfig.key', 'is required (a PEM file path)');
    for (const f of ['requestCert', 'rejectUnauthorized', 'cnAsUsername'] as const) if (s[f] !== undefined) ssl[f] = checkBool(`sslConfig.${f}`, s[f]);
    out.sslConfig = ssl;
  }
  if (v.serverOptions !== undefined) {
    if (!isObject(v.serverOptions)) throw new EndpointFieldError('serverOptions', 'expected an object');
    onlyKnown('serverOptions', v.serverOptions, SERVER_FIELDS);
    out.serverOptions = {};
    if (v.serverOptions.backlog !== undefined) out.serverOptions.backlog = checkInt('serverOptions.backlog', v.serverOptions.backlog, [1, 65535]);
  }
  if (v.childOptions !== undefined) {
    if (!isObject(v.childOptions)) throw new EndpointFieldError('childOptions', 'expected an object');
    const c = v.childOptions;
    onlyKnown('childOptions', c, CHILD_FIELDS);
    out.childOptions = {};
    if (c.tcpNoDelay !== undefined) out.childOptions.tcpNoDelay = checkBool('childOptions.tcpNoDelay', c.tcpNoDelay);
    if (c.keepAlive !== undefined) out.childOptions.keepAlive = checkBool('childOptions.keepAlive', c.keepAlive);
    if (c.keepAliveInitialDelay !== undefined) out.childOptions.keepAliveInitialDelay = checkInt('childOptions.keepAliveInitialDelay', c.keepAliveInitialDelay, [1, 86400]);
  }
  return out;
}

/** A complete endpoint from checked fields and defaults (the id from the port when absent). */
export function completeEndpoint(fields: Partial<EndpointConfig>, defaults: { messageMaxSize: number }, source: 'config' | 'api'): EndpointConfig {
  if (fields.port === undefined) throw new EndpointFieldError('port', 'is required');
  return {
    id: fields.id ?? `endpoint-${fields.port}`,
    port: fields.port,
    ...(fields.host !== undefined ? { host: fields.host } : {}),
    useWebsocket: fields.useWebsocket ?? false,
    path: fields.path ?? '/mqtt',
    enableAuth: fields.enableAuth ?? true,
    enableAcl: fields.enableAcl ?? true,
    enableBridge: false,
    messageMaxSize: fields.messageMaxSize ?? defaults.messageMaxSize,
    ...(fields.maxSessionSize !== undefined ? { maxSessionSize: fields.maxSessionSize } : {}),
    ...(fields.maxConnectionSize !== undefined ? { maxConnectionSize: fields.maxConnectionSize } : {}),
    ...(fields.maxConnectionPerSecond !== undefined ? { maxConnectionPerSecond: fields.maxConnectionPerSecond } : {}),
    ...(fields.sslConfig ? { sslConfig: fields.sslConfig } : {}),
    serverOptions: fields.serverOptions ?? {},
    childOptions: fields.childOptions ?? {},
    enabled: fields.enabled ?? true,
    isDefault: fields.isDefault ?? false,
    createTime: fields.createTime ?? new Date().toISOString(),
    source,
  };
}

/**
 * The endpoints of the configuration file: mqtt.tcp ("tcp", the default endpoint), mqtt.tls
 * ("tls") and mqtt.ws ("ws"), with the ports the supervisor resolved (port 0 picks one).
 */
export function configEndpoints(config: BrokerConfig, ports: { tcp?: number; tls?: number; ws?: number }): EndpointConfig[] {
  const c = config.mqtt;
  const max = config.limits.maxPacketSize;
  const out: EndpointConfig[] = [];
  const base = { enableAuth: true, enableAcl: true, enableBridge: false, messageMaxSize: max, serverOptions: {}, childOptions: {}, enabled: true, createTime: new Date().toISOString(), source: 'config' as const, path: c.ws.path };
  if (c.tcp.enabled && ports.tcp) out.push({ ...base, id: 'tcp', port: ports.tcp, useWebsocket: false, isDefault: true });
  if (c.tls.enabled && ports.tls) {
    out.push({
      ...base,
      id: 'tls',
      port: ports.tls,
      useWebsocket: false,
      isDefault: out.length === 0,
      sslConfig: { cert: c.tls.cert, key: c.tls.key, ...(c.tls.ca ? { ca: c.tls.ca } : {}), requestCert: c.tls.requestCert, rejectUnauthorized: c.tls.rejectUnauthorized, cnAsUsername: c.tls.cnAsUsername },
    });
  }
  if (c.ws.enabled && ports.ws) out.push({ ...base, id: 'ws', port: ports.ws, useWebsocket: true, isDefault: out.length === 0 });
  return out;
}
