// The shape of an endpoint (an MQTT listener) as the admin API and the store know it, its
// validation, and the endpoints the configuration file defines. Pure data: no sockets here.
// Limits that are absent are unlimited (the spec's ranges apply to values that are given).
import { existsSync } from 'node:fs';

import { Type, type Static } from '@sinclair/typebox';

import type { BrokerConfig } from '../config/index.ts';
import { invalid } from '../errors/domain-error.ts';
import { compileSchema, orNull, PATTERN_MESSAGE, type Checker } from '../schema/check.ts';
import { limits, RATE_LIMIT_SCHEMA, rateLimitProblem, type RateLimit } from './rate-limit.ts';
import { MAX_TRUSTED_BLOCKS, PROXY_MODES, trustedProblem, type ProxyProtocolMode } from './proxy-protocol.ts';

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

export { DEFAULT_BACKLOG } from './endpoint-backlog.ts';

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
  /** The inbound rate limit of each client of this endpoint (messages and bytes per second, with
   * bursts); an authentication answer's rateLimit overrides it for its client. Absent: none. */
  rateLimit?: RateLimit;
  /** The inbound rate limit of every client of this endpoint together, on this node (shared by
   * its workers). Absent: none. */
  totalRateLimit?: RateLimit;
  /** TLS (or WSS with useWebsocket) when present. */
  sslConfig?: SslConfig;
  /** PROXY protocol (v1 and v2; WebSocket: v2) headers from the balancers of
   * proxyProtocolTrusted: 'optional' takes a header from them and direct clients without one,
   * 'required' takes only their connections, each with a header. Absent: off. */
  proxyProtocol?: Exclude<ProxyProtocolMode, 'off'>;
  /** The balancers (addresses or CIDR blocks) whose headers are taken; a header from anywhere
   * else refuses the connection. */
  proxyProtocolTrusted?: string[];
  /** The CN of a client certificate a PROXY v2 header says the balancer verified is the username
   * (the certificate counts as the credential), as sslConfig.cnAsUsername for the TLS the
   * balancer terminated. Not on WebSocket endpoints (uWebSockets.js gives no TLVs). */
  proxyProtocolCnAsUsername?: boolean;
  serverOptions: ServerOptions;
  childOptions: ChildOptions;
  enabled: boolean;
  isDefault: boolean;
  createTime: string;
  /** Where it came from: the configuration file, or the admin API. */
  source: 'config' | 'api';
}

export const LIMITS = {
  maxConnectionSize: [1, 65535],
  maxSessionSize: [1, 10000],
  messageMaxSize: [1024, 16777216],
  maxConnectionPerSecond: [1, 1_000_000],
  port: [1, 65535],
} as const;

const range = (field: keyof typeof LIMITS, options: Record<string, unknown> = {}) => Type.Integer({ minimum: LIMITS[field][0], maximum: LIMITS[field][1], ...options });
/** A limit: absent or null is unlimited (null in an update clears it). */
const limit = (field: keyof typeof LIMITS) => Type.Optional(orNull(range(field, { description: 'absent or null: unlimited' })));

/** The fields of an endpoint as the admin API and an import take them, each optional here (which
 * are required depends on the route). Unknown fields are refused, so a typo is not ignored. */
export const ENDPOINT_FIELDS = Type.Object(
  {
    id: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', [PATTERN_MESSAGE]: '1 to 64 of A-Z a-z 0-9 . _ -' })),
    port: Type.Optional(range('port')),
    host: Type.Optional(Type.String({ minLength: 1 })),
    useWebsocket: Type.Optional(Type.Boolean()),
    path: Type.Optional(Type.String({ pattern: '^/', [PATTERN_MESSAGE]: "must start with '/'" })),
    enableAuth: Type.Optional(Type.Boolean()),
    enableAcl: Type.Optional(Type.Boolean()),
    enableBridge: Type.Optional(Type.Boolean({ description: 'must be false: bridges belong to the broker (the bridges key, /bridge/add), not to an endpoint' })),
    messageMaxSize: Type.Optional(orNull(range('messageMaxSize', { description: 'absent or null: limits.maxPacketSize' }))),
    maxSessionSize: limit('maxSessionSize'),
    maxConnectionSize: limit('maxConnectionSize'),
    maxConnectionPerSecond: limit('maxConnectionPerSecond'),
    rateLimit: Type.Optional(orNull({ ...RATE_LIMIT_SCHEMA, description: 'inbound rate limit of each client of this endpoint (throttled past it; an authenticator may give a client its own); absent or null: none' })),
    totalRateLimit: Type.Optional(orNull({ ...RATE_LIMIT_SCHEMA, description: 'inbound rate limit of all the clients of this endpoint together, on this node; absent or null: none' })),
    sslConfig: Type.Optional(orNull(Type.Object(
      {
        cert: Type.String({ minLength: 1, description: 'PEM file path' }),
        key: Type.String({ minLength: 1, description: 'PEM file path' }),
        ca: Type.Optional(Type.String()),
        requestCert: Type.Optional(Type.Boolean()),
        rejectUnauthorized: Type.Optional(Type.Boolean()),
        cnAsUsername: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false, description: 'present: TLS (or WSS with useWebsocket)' },
    ))),
    proxyProtocol: Type.Optional(Type.Union(PROXY_MODES.map((m) => Type.Literal(m)), { description: "PROXY protocol headers (v1 and v2) from the balancers of proxyProtocolTrusted: 'optional' (a header from them, or a direct client without one), 'required' (only their connections, each with a header), 'off' (the default). WebSocket: v2 only; not on WSS endpoints" })),
    proxyProtocolTrusted: Type.Optional(Type.Array(Type.String(), { maxItems: MAX_TRUSTED_BLOCKS, description: 'the balancers whose PROXY headers are taken: IP addresses or CIDR blocks (10.0.0.0/8, fd00::/8); a header from anywhere else refuses the connection' })),
    proxyProtocolCnAsUsername: Type.Optional(Type.Boolean({ description: 'the CN of a client certificate a PROXY v2 header says the balancer verified (PP2_TYPE_SSL) is the username; the certificate counts as the credential' })),
    serverOptions: Type.Optional(Type.Object({ backlog: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })) }, { additionalProperties: false })),
    childOptions: Type.Optional(Type.Object(
      { tcpNoDelay: Type.Optional(Type.Boolean()), keepAlive: Type.Optional(Type.Boolean()), keepAliveInitialDelay: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })) },
      { additionalProperties: false },
    )),
    enabled: Type.Optional(Type.Boolean()),
    isDefault: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export type EndpointFields = Static<typeof ENDPOINT_FIELDS>;

const checkSchema: Checker<EndpointFields> = compileSchema(ENDPOINT_FIELDS);

/**
 * The fields of `input` checked against ENDPOINT_FIELDS, then what a schema cannot say (the TLS
 * files exist; no bridge on an endpoint). Throws 400 INVALID_PARAMETER naming the first bad field.
 * The admin routes check the same schema before; the configuration import comes here directly.
 */
export function checkEndpointFields(input: unknown): Partial<EndpointConfig> {
  checkSchema(input);
  const v = input;
  // A bridge is a connection of the whole broker to a remote one (src/bridges), not a property
  // of a listener: an endpoint must not claim a setting that would do nothing.
  if (v.enableBridge) throw invalid('enableBridge', 'bridges belong to the broker, not to an endpoint: configure them with the `bridges` key or /bridge/add');
  for (const f of ['rateLimit', 'totalRateLimit'] as const) {
    const l = v[f];
    const problem = l ? rateLimitProblem(l) : null;
    if (problem) throw invalid(`${f}.${problem.field}`, problem.message);
  }
  const out: Partial<EndpointConfig> = {};
  for (const [k, value] of Object.entries(v)) if (value !== null) (out as Record<string, unknown>)[k] = value;
  if (v.proxyProtocolTrusted) {
    const problem = trustedProblem(v.proxyProtocolTrusted);
    if (problem) throw invalid(problem.index === undefined ? 'proxyProtocolTrusted' : `proxyProtocolTrusted[${problem.index}]`, problem.message);
  }
  if (v.sslConfig) {
    for (const f of ['cert', 'key', 'ca'] as const) {
      const file = v.sslConfig[f];
      if (file !== undefined && !existsSync(file)) throw invalid(`sslConfig.${f}`, `no such file: ${file}`);
    }
  }
  return out;
}

/** A complete endpoint from checked fields and defaults (the id from the port when absent). */
export function completeEndpoint(fields: Partial<EndpointConfig>, defaults: { messageMaxSize: number }, source: 'config' | 'api'): EndpointConfig {
  if (fields.port === undefined) throw invalid('port', 'is required');
  const config: EndpointConfig = {
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
    ...(limits(fields.rateLimit) ? { rateLimit: fields.rateLimit } : {}),
    ...(limits(fields.totalRateLimit) ? { totalRateLimit: fields.totalRateLimit } : {}),
    ...(fields.sslConfig ? { sslConfig: fields.sslConfig } : {}),
    ...proxyFields(fields as ProxyInput),
    serverOptions: fields.serverOptions ?? {},
    childOptions: fields.childOptions ?? {},
    enabled: fields.enabled ?? true,
    isDefault: fields.isDefault ?? false,
    createTime: fields.createTime ?? new Date().toISOString(),
    source,
  };
  checkEndpointCombination(config);
  return config;
}

type ProxyInput = { proxyProtocol?: ProxyProtocolMode; proxyProtocolTrusted?: string[]; proxyProtocolCnAsUsername?: boolean };

/** The PROXY protocol fields of an endpoint as kept: as given, but 'off' is kept as no
 * proxyProtocol at all. */
export function proxyFields(f: ProxyInput): Pick<EndpointConfig, 'proxyProtocol' | 'proxyProtocolTrusted' | 'proxyProtocolCnAsUsername'> {
  const mode = f.proxyProtocol;
  return {
    ...(mode !== undefined && mode !== 'off' ? { proxyProtocol: mode } : {}),
    ...(f.proxyProtocolTrusted !== undefined ? { proxyProtocolTrusted: f.proxyProtocolTrusted } : {}),
    ...(f.proxyProtocolCnAsUsername !== undefined ? { proxyProtocolCnAsUsername: f.proxyProtocolCnAsUsername } : {}),
  };
}

/**
 * What the fields of a complete endpoint cannot be together (a new one, or one after a change):
 * 400 naming the field.
 */
export function checkEndpointCombination(c: EndpointConfig): void {
  const on = c.proxyProtocol !== undefined;
  if (on && (c.proxyProtocolTrusted ?? []).length === 0) {
    throw invalid('proxyProtocolTrusted', `required with proxyProtocol '${c.proxyProtocol}': the addresses or CIDR blocks of the balancers whose headers are taken`);
  }
  if (on && c.useWebsocket && c.sslConfig) {
    throw invalid('proxyProtocol', 'not on a WSS endpoint: uWebSockets.js reads a PROXY header inside the TLS stream, where balancers never send it (they send it before the handshake); terminate TLS at the balancer and give it a plain WebSocket endpoint, or use a TLS endpoint');
  }
  if (c.proxyProtocolCnAsUsername && !on) throw invalid('proxyProtocolCnAsUsername', "needs proxyProtocol 'optional' or 'required'");
  if (c.proxyProtocolCnAsUsername && c.useWebsocket) throw invalid('proxyProtocolCnAsUsername', 'not on a WebSocket endpoint: uWebSockets.js gives no PROXY v2 TLVs');
}

/**
 * The endpoints of the configuration file: mqtt.tcp ("tcp", the default endpoint), mqtt.tls
 * ("tls") and mqtt.ws ("ws"), with the ports the supervisor resolved (port 0 picks one).
 */
export function configEndpoints(config: BrokerConfig, ports: { tcp?: number; tls?: number; ws?: number }): EndpointConfig[] {
  const c = config.mqtt;
  const max = config.limits.maxPacketSize;
  const out: EndpointConfig[] = [];
  const rateLimit = configRateLimit(c.rateLimit);
  const totalRateLimit = configRateLimit(c.totalRateLimit);
  const base = {
    enableAuth: true, enableAcl: true, enableBridge: false, messageMaxSize: max, serverOptions: {}, childOptions: {}, enabled: true, createTime: new Date().toISOString(), source: 'config' as const, path: c.ws.path,
    ...(rateLimit ? { rateLimit } : {}), ...(totalRateLimit ? { totalRateLimit } : {}),
  };
  if (c.tcp.enabled && ports.tcp) out.push({ ...base, id: 'tcp', port: ports.tcp, useWebsocket: false, isDefault: true, ...proxyFields(c.tcp) });
  if (c.tls.enabled && ports.tls) {
    out.push({
      ...base,
      id: 'tls',
      port: ports.tls,
      useWebsocket: false,
      isDefault: out.length === 0,
      sslConfig: { cert: c.tls.cert, key: c.tls.key, ...(c.tls.ca ? { ca: c.tls.ca } : {}), requestCert: c.tls.requestCert, rejectUnauthorized: c.tls.rejectUnauthorized, cnAsUsername: c.tls.cnAsUsername },
      ...proxyFields(c.tls),
    });
  }
  if (c.ws.enabled && ports.ws) out.push({ ...base, id: 'ws', port: ports.ws, useWebsocket: true, isDefault: out.length === 0, ...proxyFields(c.ws) });
  return out;
}

/** A rate limit from the configuration keys (mqtt.rateLimit.*, mqtt.totalRateLimit.*): 0 is
 * absent; undefined when neither rate is set. */
function configRateLimit(k: { messagesPerSecond: number; messagesBurst: number; bytesPerSecond: number; bytesBurst: number }): RateLimit | undefined {
  const out: RateLimit = {};
  if (k.messagesPerSecond > 0) {
    out.messagesPerSecond = k.messagesPerSecond;
    if (k.messagesBurst > 0) out.messagesBurst = k.messagesBurst;
  }
  if (k.bytesPerSecond > 0) {
    out.bytesPerSecond = k.bytesPerSecond;
    if (k.bytesBurst > 0) out.bytesBurst = k.bytesBurst;
  }
  return limits(out) ? out : undefined;
}
