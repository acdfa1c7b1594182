// The configuration of one MQTT bridge (main thread): its fields, their defaults and limits, and
// the one check every way in goes through (the configuration file's `bridges` key and the admin
// API's /bridge/add and /bridge/update). A refusal names the field, e.g. `forwards[1].qos`.
import { topicFilterProblem } from '../auth/topic-filter.ts';
import { BridgeConfigError } from './errors.ts';

/** One topic mapping, as Mosquitto's `topic pattern direction qos local-prefix remote-prefix`:
 * the local side is `localPrefix + filter`, the remote side `remotePrefix + filter`. */
export interface TopicMapping {
  filter: string;
  /** The highest QoS used on this mapping (a message goes with the lower of its own and this). */
  qos: 0 | 1 | 2;
  localPrefix: string;
  remotePrefix: string;
}

export interface BridgeTls {
  /** PEM file paths; empty: none (the system roots for `ca`). */
  ca: string;
  cert: string;
  key: string;
  rejectUnauthorized: boolean;
}

export interface BridgeConfig {
  name: string;
  /** mqtt://, mqtts://, ws:// or wss:// with host and port (ws: and a path). */
  url: string;
  protocolVersion: 4 | 5;
  /** Empty: `<nodeName>.<name>` (stable, so the remote keeps the session). */
  clientId: string;
  username: string;
  password: string;
  tls: BridgeTls;
  /** Seconds (0: none). */
  keepalive: number;
  /** True: a new session on the remote at every connect. False: a persistent one. */
  cleanStart: boolean;
  /** MQTT 5 only: seconds the remote keeps the session after a disconnect. */
  sessionExpiryInterval: number;
  /** Milliseconds between reconnect attempts. */
  reconnectPeriod: number;
  /** Outbound messages held (waiting or sent and not yet acknowledged by the remote) at most. */
  queueLimit: number;
  /** Outbound QoS 1/2 messages sent and not yet acknowledged, at most. */
  maxInflight: number;
  /** Local -> remote. */
  forwards: TopicMapping[];
  /** Remote -> local. */
  subscriptions: TopicMapping[];
  enabled: boolean;
}

export const BRIDGE_LIMITS = {
  nameMax: 64,
  keepalive: [0, 65535],
  sessionExpiryInterval: [0, 4294967295],
  reconnectPeriod: [100, 3_600_000],
  queueLimit: [1, 10_000_000],
  maxInflight: [1, 65535],
  mappings: 256,
} as const;

const FIELDS = ['name', 'url', 'protocolVersion', 'clientId', 'username', 'password', 'tls', 'keepalive', 'cleanStart', 'sessionExpiryInterval', 'reconnectPeriod', 'queueLimit', 'maxInflight', 'forwards', 'subscriptions', 'enabled'] as const;
const TLS_FIELDS = ['ca', 'cert', 'key', 'rejectUnauthorized'] as const;
const MAPPING_FIELDS = ['filter', 'qos', 'localPrefix', 'remotePrefix'] as const;
const PROTOCOLS = ['mqtt:', 'mqtts:', 'ws:', 'wss:'];

type Input = Record<string, unknown>;

/** Checks `input` and answers the bridge with every default filled in; throws BridgeConfigError
 * naming the first field at fault. */
export function parseBridgeConfig(input: unknown): BridgeConfig {
  const b = objectAt(input, '');
  onlyFields(b, FIELDS, '');
  const name = string(b, 'name', { required: true });
  if (name.length > BRIDGE_LIMITS.nameMax) throw new BridgeConfigError('name', `longer than ${BRIDGE_LIMITS.nameMax} characters`);
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new BridgeConfigError('name', 'letters, digits, . _ - only');
  const url = string(b, 'url', { required: true });
  checkUrl(url);
  const protocolVersion = b.protocolVersion ?? 4;
  if (protocolVersion !== 4 && protocolVersion !== 5) throw new BridgeConfigError('protocolVersion', `must be 4 (MQTT 3.1.1) or 5, got ${JSON.stringify(protocolVersion)}`);
  const clientId = string(b, 'clientId');
  if (Buffer.byteLength(clientId) > 65535) throw new BridgeConfigError('clientId', 'longer than 65535 bytes');
  const cleanStart = bool(b, 'cleanStart', false);
  const config: BridgeConfig = {
    name,
    url,
    protocolVersion,
    clientId,
    username: string(b, 'username'),
    password: string(b, 'password'),
    tls: tls(b.tls),
    keepalive: int(b, 'keepalive', BRIDGE_LIMITS.keepalive, 60),
    cleanStart,
    sessionExpiryInterval: int(b, 'sessionExpiryInterval', BRIDGE_LIMITS.sessionExpiryInterval, 86400),
    reconnectPeriod: int(b, 'reconnectPeriod', BRIDGE_LIMITS.reconnectPeriod, 5000),
    queueLimit: int(b, 'queueLimit', BRIDGE_LIMITS.queueLimit, 10000),
    maxInflight: int(b, 'maxInflight', BRIDGE_LIMITS.maxInflight, 100),
    forwards: mappings(b, 'forwards'),
    subscriptions: mappings(b, 'subscriptions'),
    enabled: bool(b, 'enabled', true),
  };
  if (config.password !== '' && config.username === '') throw new BridgeConfigError('username', 'is required with a password');
  if (config.forwards.length === 0 && config.subscriptions.length === 0) throw new BridgeConfigError('forwards', 'a bridge needs at least one of forwards or subscriptions');
  return config;
}

/** The client id a bridge connects with. */
export function clientIdOf(config: BridgeConfig, nodeName: string): string {
  return config.clientId !== '' ? config.clientId : `${nodeName}.${config.name}`;
}

/** The bridge as the admin API shows it: the password is never answered, only whether one is set. */
export function redactBridge(config: BridgeConfig): Omit<BridgeConfig, 'password'> & { passwordSet: boolean } {
  const { password, ...rest } = config;
  return { ...rest, passwordSet: password !== '' };
}

function checkUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BridgeConfigError('url', `not a URL: ${JSON.stringify(url)}`);
  }
  if (!PROTOCOLS.includes(u.protocol)) throw new BridgeConfigError('url', `the scheme must be mqtt, mqtts, ws or wss, got ${u.protocol.replace(/:$/, '')}`);
  if (u.hostname === '') throw new BridgeConfigError('url', 'has no host');
  if (u.username !== '' || u.password !== '') throw new BridgeConfigError('url', 'must not carry credentials: use username and password');
  if ((u.protocol === 'mqtt:' || u.protocol === 'mqtts:') && u.pathname !== '' && u.pathname !== '/') throw new BridgeConfigError('url', 'an mqtt:// or mqtts:// URL has no path');
}

function tls(value: unknown): BridgeTls {
  if (value === undefined || value === null) return { ca: '', cert: '', key: '', rejectUnauthorized: true };
  const t = objectAt(value, 'tls');
  onlyFields(t, TLS_FIELDS, 'tls.');
  const out: BridgeTls = {
    ca: string(t, 'ca', { at: 'tls.' }),
    cert: string(t, 'cert', { at: 'tls.' }),
    key: string(t, 'key', { at: 'tls.' }),
    rejectUnauthorized: bool(t, 'rejectUnauthorized', true, 'tls.'),
  };
  if ((out.cert === '') !== (out.key === '')) throw new BridgeConfigError(out.cert === '' ? 'tls.cert' : 'tls.key', 'a client certificate needs both cert and key');
  return out;
}

function mappings(b: Input, field: 'forwards' | 'subscriptions'): TopicMapping[] {
  const v = b[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new BridgeConfigError(field, 'expected a list of {filter, qos, localPrefix, remotePrefix}');
  if (v.length > BRIDGE_LIMITS.mappings) throw new BridgeConfigError(field, `at most ${BRIDGE_LIMITS.mappings} entries`);
  return v.map((item, i) => mapping(item, `${field}[${i}].`));
}

function mapping(value: unknown, at: string): TopicMapping {
  const m = objectAt(value, at.slice(0, -1));
  onlyFields(m, MAPPING_FIELDS, at);
  const filter = string(m, 'filter', { required: true, at });
  const qos = m.qos ?? 1;
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new BridgeConfigError(`${at}qos`, `must be 0, 1 or 2, got ${JSON.stringify(qos)}`);
  const localPrefix = prefix(m, 'localPrefix', at);
  const remotePrefix = prefix(m, 'remotePrefix', at);
  for (const [side, full] of [['filter', filter], ['localPrefix', localPrefix + filter], ['remotePrefix', remotePrefix + filter]] as const) {
    const problem = topicFilterProblem(full);
    if (problem !== undefined) throw new BridgeConfigError(`${at}${side}`, `${JSON.stringify(full)}: ${problem}`);
  }
  // The broker's own topics stay the broker's: a bridge neither exports nor imports them.
  if ((localPrefix + filter).startsWith('$')) throw new BridgeConfigError(`${at}localPrefix`, `the local side ${JSON.stringify(localPrefix + filter)} starts with $ (topics of the broker)`);
  return { filter, qos, localPrefix, remotePrefix };
}

function prefix(m: Input, field: string, at: string): string {
  const p = string(m, field, { at });
  if (p.includes('+') || p.includes('#')) throw new BridgeConfigError(`${at}${field}`, 'a prefix must not contain wildcards');
  return p;
}

function objectAt(value: unknown, field: string): Input {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BridgeConfigError(field === '' ? 'body' : field, 'expected an object');
  return value as Input;
}

function onlyFields(o: Input, allowed: readonly string[], at: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new BridgeConfigError(`${at}${k}`, `unknown field (expected ${allowed.join(', ')})`);
}

function string(o: Input, field: string, options: { required?: boolean; at?: string } = {}): string {
  const v = o[field];
  const at = `${options.at ?? ''}${field}`;
  if (v === undefined || v === null) {
    if (options.required) throw new BridgeConfigError(at, 'is required');
    return '';
  }
  if (typeof v !== 'string') throw new BridgeConfigError(at, `expected a string, got ${JSON.stringify(v)}`);
  if (options.required && v === '') throw new BridgeConfigError(at, 'must not be empty');
  return v;
}

function bool(o: Input, field: string, fallback: boolean, at = ''): boolean {
  const v = o[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new BridgeConfigError(`${at}${field}`, `expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

function int(o: Input, field: string, [min, max]: readonly [number, number], fallback: number): number {
  const v = o[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new BridgeConfigError(field, `expected an integer, got ${JSON.stringify(v)}`);
  if (v < min || v > max) throw new BridgeConfigError(field, `must be between ${min} and ${max}, got ${v}`);
  return v;
}
