// The configuration of one MQTT bridge (main thread): its fields, their defaults and limits, and
// the one check every way in goes through (the configuration file's `bridges` key and the admin
// API's /bridge/add and /bridge/update). A refusal names the field, e.g. `forwards[1].qos`.
import { Type, type Static } from '@sinclair/typebox';

import { topicFilterProblem } from '../auth/topic-filter.ts';
import { compileSchema, PATTERN_MESSAGE, type Checker } from '../schema/check.ts';
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

const int = (field: Exclude<keyof typeof BRIDGE_LIMITS, 'nameMax' | 'mappings'>, fallback: number, description: string) =>
  Type.Optional(Type.Integer({ minimum: BRIDGE_LIMITS[field][0], maximum: BRIDGE_LIMITS[field][1], description: `${description} (default ${fallback})` }));

const MAPPING = Type.Object(
  {
    filter: Type.String({ minLength: 1 }),
    qos: Type.Optional(Type.Unsafe<0 | 1 | 2>({ type: 'integer', enum: [0, 1, 2], description: 'the highest QoS on this mapping (default 1)' })),
    localPrefix: Type.Optional(Type.String({ description: 'no wildcards' })),
    remotePrefix: Type.Optional(Type.String({ description: 'no wildcards' })),
  },
  { additionalProperties: false },
);

const MAPPINGS = Type.Optional(Type.Array(MAPPING, { maxItems: BRIDGE_LIMITS.mappings }));

/**
 * The fields of a bridge, the one schema of both ways in (the admin routes check it too, and it is
 * their OpenAPI document). Absent fields take their defaults in parseBridgeConfig, not here: an
 * update without a password keeps the stored one, so the request must stay as it was sent.
 */
export const BRIDGE_FIELDS = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: BRIDGE_LIMITS.nameMax, pattern: '^[A-Za-z0-9._-]+$', [PATTERN_MESSAGE]: 'letters, digits, . _ - only' }),
    url: Type.String({ minLength: 1, description: 'mqtt://host:port, mqtts://, ws:// or wss://' }),
    protocolVersion: Type.Optional(Type.Unsafe<4 | 5>({ type: 'integer', enum: [4, 5], description: '4 (MQTT 3.1.1, the default) or 5' })),
    clientId: Type.Optional(Type.String({ description: 'empty: <nodeName>.<name>' })),
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String({ format: 'password', description: 'never answered; an update without it keeps the stored one' })),
    tls: Type.Optional(Type.Object(
      { ca: Type.Optional(Type.String()), cert: Type.Optional(Type.String()), key: Type.Optional(Type.String()), rejectUnauthorized: Type.Optional(Type.Boolean()) },
      { additionalProperties: false, description: 'PEM file paths' },
    )),
    keepalive: int('keepalive', 60, 'seconds, 0: none'),
    cleanStart: Type.Optional(Type.Boolean({ description: 'default false: a persistent session on the remote' })),
    sessionExpiryInterval: int('sessionExpiryInterval', 86400, 'MQTT 5: seconds'),
    reconnectPeriod: int('reconnectPeriod', 5000, 'ms'),
    queueLimit: int('queueLimit', 10000, 'outbound messages held'),
    maxInflight: int('maxInflight', 100, 'outbound QoS 1/2 messages not yet acknowledged'),
    forwards: MAPPINGS,
    subscriptions: MAPPINGS,
    enabled: Type.Optional(Type.Boolean({ description: 'default true' })),
  },
  { additionalProperties: false },
);

export type BridgeFields = Static<typeof BRIDGE_FIELDS>;

const checkFields: Checker<BridgeFields> = compileSchema(BRIDGE_FIELDS, { refuse: (field, reason) => new BridgeConfigError(field, reason) });

const PROTOCOLS = ['mqtt:', 'mqtts:', 'ws:', 'wss:'];

/** Checks `input` against BRIDGE_FIELDS, then what a schema cannot say (the URL, topic filters and
 * prefixes, fields that go together), and answers the bridge with every default filled in; throws
 * BridgeConfigError naming the first field at fault. A null is an absent field (YAML writes an
 * empty key as null). */
export function parseBridgeConfig(input: unknown): BridgeConfig {
  const b = withoutNulls(input);
  checkFields(b);
  checkUrl(b.url);
  const clientId = b.clientId ?? '';
  if (Buffer.byteLength(clientId) > 65535) throw new BridgeConfigError('clientId', 'longer than 65535 bytes');
  const config: BridgeConfig = {
    name: b.name,
    url: b.url,
    protocolVersion: b.protocolVersion ?? 4,
    clientId,
    username: b.username ?? '',
    password: b.password ?? '',
    tls: { ca: b.tls?.ca ?? '', cert: b.tls?.cert ?? '', key: b.tls?.key ?? '', rejectUnauthorized: b.tls?.rejectUnauthorized ?? true },
    keepalive: b.keepalive ?? 60,
    cleanStart: b.cleanStart ?? false,
    sessionExpiryInterval: b.sessionExpiryInterval ?? 86400,
    reconnectPeriod: b.reconnectPeriod ?? 5000,
    queueLimit: b.queueLimit ?? 10000,
    maxInflight: b.maxInflight ?? 100,
    forwards: (b.forwards ?? []).map((m, i) => mapping(m, `forwards[${i}].`)),
    subscriptions: (b.subscriptions ?? []).map((m, i) => mapping(m, `subscriptions[${i}].`)),
    enabled: b.enabled ?? true,
  };
  const { cert, key } = config.tls;
  if ((cert === '') !== (key === '')) throw new BridgeConfigError(cert === '' ? 'tls.cert' : 'tls.key', 'a client certificate needs both cert and key');
  if (config.password !== '' && config.username === '') throw new BridgeConfigError('username', 'is required with a password');
  if (config.forwards.length === 0 && config.subscriptions.length === 0) throw new BridgeConfigError('forwards', 'a bridge needs at least one of forwards or subscriptions');
  return config;
}

/** A copy of `value` without the null fields of its objects (at any depth; list items stay). */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, withoutNulls(v)]));
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

function mapping(m: Static<typeof MAPPING>, at: string): TopicMapping {
  const { filter, qos = 1, localPrefix = '', remotePrefix = '' } = m;
  for (const [field, p] of [['localPrefix', localPrefix], ['remotePrefix', remotePrefix]] as const) {
    if (p.includes('+') || p.includes('#')) throw new BridgeConfigError(`${at}${field}`, 'a prefix must not contain wildcards');
  }
  for (const [side, full] of [['filter', filter], ['localPrefix', localPrefix + filter], ['remotePrefix', remotePrefix + filter]] as const) {
    const problem = topicFilterProblem(full);
    if (problem !== undefined) throw new BridgeConfigError(`${at}${side}`, `${JSON.stringify(full)}: ${problem}`);
  }
  // The broker's own topics stay the broker's: a bridge neither exports nor imports them.
  if ((localPrefix + filter).startsWith('$')) throw new BridgeConfigError(`${at}localPrefix`, `the local side ${JSON.stringify(localPrefix + filter)} starts with $ (topics of the broker)`);
  return { filter, qos, localPrefix, remotePrefix };
}
