// The shape of an endpoint (an MQTT listener) as the admin API and the store know it, its
// validation, and the endpoints the configuration file defines. Pure data: no sockets here.
// Limits that are absent are unlimited (the spec's ranges apply to values that are given).
import { existsSync, readFileSync } from 'node:fs';

import { Type, type Static } from '@sinclair/typebox';

import { parsePskFile, PSK_LIMITS } from '../auth/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import { invalid } from '../errors/domain-error.ts';
import { compileSchema, orNull, PATTERN_MESSAGE, type Checker } from '../schema/check.ts';
import { limits, RATE_LIMIT_SCHEMA, rateLimitProblem, type RateLimit } from './rate-limit.ts';
import { crlFileProblem } from '../native/index.ts';
import { readServerCertificate, type ServerCertificate } from './certificates.ts';
import { OCSP_DEFAULTS } from './ocsp-defaults.ts';

export { OCSP_DEFAULTS };
import { MAX_TRUSTED_BLOCKS, PROXY_MODES, trustedProblem, type ProxyProtocolMode } from './proxy-protocol.ts';

export interface SslConfig {
  /** PEM file paths: the server's certificate chain and key. Both, unless `psk` is set (a
   * PSK-only listener has no certificate). */
  cert?: string;
  key?: string;
  ca?: string;
  requestCert?: boolean;
  rejectUnauthorized?: boolean;
  cnAsUsername?: boolean;
  /** Certificate revocation lists client certificates are checked against in the handshake:
   * a file of PEM `X509 CRL` sections or one DER CRL (docs/features/tls-revocation.md). */
  crl?: string;
  /** OCSP stapling of the server's certificate (src/features/revocation/stapler.ts). */
  ocspStapling?: OcspStapling;
  /** OCSP checks of client certificates at CONNECT (src/features/revocation/client-check.ts). */
  ocspClientCheck?: OcspClientCheck;
  /** TLS-PSK (docs/features/tls-psk.md): this endpoint's TLS then runs on Node's OpenSSL even
   * with mqtt.io native (rustls has no external PSK). */
  psk?: PskConfig;
}

export interface PskConfig {
  /** A Mosquitto psk_file (`identity:hexkey` per line), read by every worker and again on SIGHUP. */
  file?: string;
  /** The keys of the built-in client database: a client's pskKey, its username the identity. */
  fromClientDb?: boolean;
  /** Sent to TLS 1.2 clients to help them pick an identity (TLS 1.3 has no hint). */
  identityHint?: string;
  /** The identity is the client's username and its key its credential (no password is checked),
   * as Mosquitto's use_identity_as_username. */
  identityAsUsername?: boolean;
}

export interface OcspStapling {
  enabled: boolean;
  /** The responder asked (http or https); absent: the one in the certificate's AIA extension. */
  responderUrl?: string;
  /** Seconds before the response's nextUpdate a new one is fetched (at most half its validity). */
  refreshBefore?: number;
  /** Milliseconds the responder has to answer. */
  timeoutMs?: number;
}

export interface OcspClientCheck {
  enabled: boolean;
  /** The responder does not answer: 'closed' refuses the client (CONNACK 0x88, v3: 3), 'open'
   * admits it. */
  failMode?: 'open' | 'closed';
  /** The responder asked (http or https); absent: each certificate's AIA extension. */
  responderUrl?: string;
  /** Seconds an answer is kept at most (never past its nextUpdate; 0: not kept). */
  cacheSeconds?: number;
  /** Milliseconds the responder has to answer. */
  timeoutMs?: number;
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
        cert: Type.Optional(Type.String({ minLength: 1, description: 'PEM file path; required unless psk is set' })),
        key: Type.Optional(Type.String({ minLength: 1, description: 'PEM file path; required with cert' })),
        ca: Type.Optional(Type.String()),
        requestCert: Type.Optional(Type.Boolean()),
        rejectUnauthorized: Type.Optional(Type.Boolean()),
        cnAsUsername: Type.Optional(Type.Boolean()),
        psk: Type.Optional(Type.Object(
          {
            file: Type.Optional(Type.String({ minLength: 1, description: "a Mosquitto psk_file: 'identity:hexkey' per line; read again on SIGHUP" })),
            fromClientDb: Type.Optional(Type.Boolean({ description: "the keys of the built-in client database (a client's pskKey; the identity is its username)" })),
            identityHint: Type.Optional(Type.String({ minLength: 1, maxLength: PSK_LIMITS.identityBytes, description: 'sent to TLS 1.2 clients' })),
            identityAsUsername: Type.Optional(Type.Boolean({ description: 'the identity is the username, the key the credential' })),
          },
          { additionalProperties: false, description: 'TLS-PSK (runs on Node\'s OpenSSL whatever mqtt.io says; not with useWebsocket)' },
        )),
        crl: Type.Optional(Type.String({ minLength: 1, description: 'CRL file path (PEM, one or more X509 CRL sections, or one DER CRL): client certificates it revokes are refused in the handshake; needs requestCert; not on WebSocket endpoints' })),
        ocspStapling: Type.Optional(Type.Object(
          {
            enabled: Type.Boolean(),
            responderUrl: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL of the OCSP responder; absent: the certificate\'s AIA extension' })),
            refreshBefore: Type.Optional(Type.Integer({ minimum: 10, maximum: 604800, description: `seconds before the response's nextUpdate a new one is fetched (default ${OCSP_DEFAULTS.refreshBefore})` })),
            timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60000, description: `ms the responder has to answer (default ${OCSP_DEFAULTS.stapleTimeoutMs})` })),
          },
          { additionalProperties: false, description: 'OCSP stapling of the server certificate; not on WebSocket endpoints' },
        )),
        ocspClientCheck: Type.Optional(Type.Object(
          {
            enabled: Type.Boolean(),
            failMode: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed')], { description: 'responder down or late: closed refuses (CONNACK 0x88), open admits (default closed)' })),
            responderUrl: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL of the OCSP responder; absent: each certificate\'s AIA extension' })),
            cacheSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, description: `seconds an answer is kept at most, never past its nextUpdate (default ${OCSP_DEFAULTS.cacheSeconds})` })),
            timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60000, description: `ms the responder has to answer (default ${OCSP_DEFAULTS.clientTimeoutMs})` })),
          },
          { additionalProperties: false, description: 'OCSP check of each client certificate at CONNECT; needs requestCert, rejectUnauthorized and ca; not on WebSocket endpoints' },
        )),
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
    const pskFile = v.sslConfig.psk?.file;
    if (pskFile !== undefined) checkPskFile(pskFile, 'sslConfig.psk.file');
  }
  return out;
}

/** Reads and parses a PSK file now; a missing or bad one is a 400 naming `field` (and the line). */
export function checkPskFile(file: string, field: string): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalid(field, `cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    parsePskFile(text, file);
  } catch (err) {
    throw invalid(field, (err as Error).message);
  }
}

/**
 * What the fields of a whole endpoint must say together about TLS: a certificate and its key,
 * or PSK (or both); PSK needs a source of keys and is not for WebSocket. Throws 400 naming the
 * field. Checked on the endpoint an add makes and on the one an update would give.
 */
export function checkEndpointTls(c: EndpointConfig): void {
  const ssl = c.sslConfig;
  if (!ssl) return;
  if (ssl.cert !== undefined && ssl.key === undefined) throw invalid('sslConfig.key', 'is required with sslConfig.cert');
  if (ssl.key !== undefined && ssl.cert === undefined) throw invalid('sslConfig.cert', 'is required with sslConfig.key');
  const psk = ssl.psk;
  if (!psk) {
    if (ssl.cert === undefined) throw invalid('sslConfig.cert', 'is required (a certificate and its key), unless sslConfig.psk is set');
    return;
  }
  if (psk.file === undefined && psk.fromClientDb !== true) throw invalid('sslConfig.psk', 'needs file or fromClientDb: true (where the keys come from)');
  if (c.useWebsocket) throw invalid('sslConfig.psk', 'TLS-PSK is for MQTT over TLS: browsers, and so WebSocket endpoints, do not offer it');
  if (ssl.cert === undefined && ssl.requestCert === true) throw invalid('sslConfig.requestCert', 'needs a server certificate (sslConfig.cert and key): a PSK-only endpoint asks for no client certificate');
}

/**
 * What the revocation settings of a complete endpoint need (docs/features/tls-revocation.md):
 * client certificates for a CRL or OCSP checks, a TLS listener that can do them (uWebSockets.js,
 * which serves WSS, takes no CRL and cannot staple), a CRL file that loads, http(s) responder
 * URLs. Throws 400 INVALID_PARAMETER naming the field, under `prefix` ('sslConfig', or
 * 'mqtt.tls' for the configuration file's endpoint).
 */
export function checkRevocation(c: EndpointConfig, prefix = 'sslConfig'): void {
  const ssl = c.sslConfig;
  if (!ssl) return;
  const stapling = ssl.ocspStapling;
  const clientCheck = ssl.ocspClientCheck;
  if (c.useWebsocket) {
    const why = 'WebSocket endpoints run on uWebSockets.js, whose TLS (SSLApp) takes no CRL and does no OCSP: use an MQTT over TLS endpoint';
    if (ssl.crl !== undefined) throw invalid(`${prefix}.crl`, why);
    if (stapling?.enabled) throw invalid(`${prefix}.ocspStapling`, why);
    if (clientCheck?.enabled) throw invalid(`${prefix}.ocspClientCheck`, why);
  }
  if (ssl.crl !== undefined) {
    if (!ssl.requestCert) throw invalid(`${prefix}.crl`, `needs ${prefix}.requestCert: true (a CRL checks client certificates)`);
    if (!existsSync(ssl.crl)) throw invalid(`${prefix}.crl`, `no such file: ${ssl.crl}`);
    const problem = crlFileProblem(ssl.crl);
    if (problem !== null) throw invalid(`${prefix}.crl`, problem);
  }
  if (stapling?.responderUrl !== undefined) checkResponderUrl(stapling.responderUrl, `${prefix}.ocspStapling.responderUrl`);
  if (stapling?.enabled) {
    if (ssl.cert === undefined) throw invalid(`${prefix}.ocspStapling`, `needs a server certificate (${prefix}.cert and key): a PSK-only endpoint has none to staple for`);
    // What a staple request needs: the certificate's issuer, and a responder to ask.
    let server: ServerCertificate;
    try {
      server = readServerCertificate(ssl.cert, ssl.ca, stapling.responderUrl);
    } catch (err) {
      throw invalid(`${prefix}.cert`, `cannot be read for OCSP stapling: ${(err as Error).message}`);
    }
    if (!server.issuer) throw invalid(`${prefix}.ocspStapling`, `the issuer of the server certificate is needed to ask for its status: put it after the certificate in ${prefix}.cert, or in ${prefix}.ca`);
    if (!server.responder) throw invalid(`${prefix}.ocspStapling.responderUrl`, 'is required: the server certificate names no OCSP responder (no Authority Information Access extension with an OCSP URI)');
  }
  if (clientCheck) {
    if (clientCheck.responderUrl !== undefined) checkResponderUrl(clientCheck.responderUrl, `${prefix}.ocspClientCheck.responderUrl`);
    if (clientCheck.enabled) {
      // Only certificates that verified are asked about: an unverified one could name any URL
      // in its AIA extension, and the broker would fetch it.
      if (!ssl.requestCert || ssl.rejectUnauthorized === false) throw invalid(`${prefix}.ocspClientCheck`, `needs ${prefix}.requestCert: true and ${prefix}.rejectUnauthorized: true (only verified certificates are checked)`);
      if (!ssl.ca) throw invalid(`${prefix}.ocspClientCheck`, `needs ${prefix}.ca: the issuers of client certificates are found there`);
    }
  }
}

function checkResponderUrl(value: string, field: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(field, `not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(field, `an http or https URL is expected, not ${url.protocol}`);
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
  checkEndpointTls(config);
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
      sslConfig: configSslConfig(c.tls),
      ...proxyFields(c.tls),
    });
  }
  if (c.ws.enabled && ports.ws) out.push({ ...base, id: 'ws', port: ports.ws, useWebsocket: true, isDefault: out.length === 0, ...proxyFields(c.ws) });
  return out;
}

/** The TLS endpoint's sslConfig from the mqtt.tls.* keys (the cross-checks made them whole). */
function configSslConfig(t: BrokerConfig['mqtt']['tls']): SslConfig {
  const ssl: SslConfig = { ...(t.cert ? { cert: t.cert, key: t.key } : {}), ...(t.ca ? { ca: t.ca } : {}), requestCert: t.requestCert, rejectUnauthorized: t.rejectUnauthorized, cnAsUsername: t.cnAsUsername,
    ...(t.crl ? { crl: t.crl } : {}),
    ...(t.ocspStapling.enabled ? { ocspStapling: withoutEmpty(t.ocspStapling) } : {}),
    ...(t.ocspClientCheck.enabled ? { ocspClientCheck: withoutEmpty(t.ocspClientCheck) } : {}),
  };
  const p = t.psk;
  if (p.file !== '' || p.fromClientDb) {
    ssl.psk = {
      ...(p.file !== '' ? { file: p.file } : {}),
      ...(p.fromClientDb ? { fromClientDb: true } : {}),
      ...(p.identityHint !== '' ? { identityHint: p.identityHint } : {}),
      ...(p.identityAsUsername ? { identityAsUsername: true } : {}),
    };
  }
  return ssl;
}

/** A configuration section without its empty strings (an unset responderUrl). */
function withoutEmpty<T extends object>(section: T): T {
  return Object.fromEntries(Object.entries(section).filter(([, v]) => v !== '')) as T;
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
