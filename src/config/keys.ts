// Owns the list of configuration keys: path, accepted values, default and meaning. Everything
// else (defaults, file merging, environment overrides, documentation, and the BrokerConfig type
// in types.ts) is derived from it.
import { LOG_LEVELS } from '../log/levels.ts';
import { PROXY_MODES } from '../broker/proxy-protocol.ts';
import { aclRules, addresses, boolean, bridges, cidrs, fraction, httpUrl, integer, oneOf, port, rewriteRules, string, stringMap, topicFilters, users, type Checker } from './validators.ts';

export interface DefaultContext {
  cpus: number;
  hostname: string;
}

/** A key `K` whose values are of type `T`: KeySpec<'mqtt.ws.port', number>. */
export interface KeySpec<K extends string = string, T = unknown> {
  /** Dotted path, e.g. "mqtt.ws.port". */
  key: K;
  checker: Checker<T>;
  defaultValue(ctx: DefaultContext): T;
  /** The default as written in the documentation. */
  defaultText: string;
  description: string;
}

const MAX_WORKERS = 256;
/** host:port (a name, IPv4, or [IPv6]) or nothing. */
const HOST_PORT_OR_EMPTY = /^$|^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

// The helpers keep each key's literal path (K) and read its type (T) from the checker alone:
// NoInfer makes a default of another type an error here rather than a wider type in BrokerConfig.

/** A key whose default depends on the machine. */
function computed<K extends string, T>(key: K, checker: Checker<T>, defaultValue: (ctx: DefaultContext) => NoInfer<T>, defaultText: string, description: string): KeySpec<K, T> {
  return { key, checker, defaultValue, defaultText, description };
}

function fixed<K extends string, T>(key: K, checker: Checker<T>, value: NoInfer<T>, description: string): KeySpec<K, T> {
  return computed(key, checker, () => structuredClone(value), JSON.stringify(value), description);
}

// The PROXY protocol keys of the listeners of the configuration file (docs/features/proxy-protocol.md).
const LISTENER_NAMES = { tcp: 'TCP', tls: 'TLS', ws: 'WebSocket' } as const;

function proxyMode<K extends string>(key: K, l: keyof typeof LISTENER_NAMES): KeySpec<K, (typeof PROXY_MODES)[number]> {
  return fixed(key, oneOf(PROXY_MODES), 'off', `PROXY protocol headers (HAProxy's v1 and v2${l === 'ws' ? '; WebSocket: v2 only' : ''}) on the ${LISTENER_NAMES[l]} listener, from the balancers of \`mqtt.${l}.proxyProtocolTrusted\`: 'optional' takes a header from them and direct clients without one, 'required' takes only their connections, each with a header${l === 'tls' ? ' (before the TLS handshake)' : ''}. The client address the header names is the one bans, the lockout, ACLs, logs, the admin API and metrics see. A header from anywhere else, a malformed or missing one, or none within 10 s closes the connection (spindle_proxy_protocol_errors_total). 'off': no header is read.`);
}

function proxyTrusted<K extends string>(key: K, l: keyof typeof LISTENER_NAMES): KeySpec<K, string[]> {
  return fixed(key, cidrs(), [], `The balancers whose PROXY headers the ${LISTENER_NAMES[l]} listener takes: IP addresses or CIDR blocks, e.g. ["10.0.0.0/8", "127.0.0.1"] (IPv4 blocks also cover IPv4-mapped peers; at most 256). Required with \`mqtt.${l}.proxyProtocol\` on. Environment: JSON.`);
}

function proxyCnAsUsername<K extends string>(key: K, l: 'tcp' | 'tls'): KeySpec<K, boolean> {
  return fixed(key, boolean(), false, `With \`mqtt.${l}.proxyProtocol\` on: the CN of a client certificate that a PROXY v2 header says the balancer verified (PP2_TYPE_SSL, as HAProxy's send-proxy-v2-ssl-cn sends it) is the username, and the certificate counts as the credential. For a balancer that terminates TLS.`);
}

export const KEYS = Object.freeze([
  computed('nodeName', string({ nonEmpty: true }), (ctx) => `spindle@${ctx.hostname}`, '"spindle@" + host name', 'Name of this broker node, reported in $SYS topics and logs.'),
  computed('workers', integer(1, MAX_WORKERS), (ctx) => Math.min(Math.max(ctx.cpus, 1), MAX_WORKERS), 'number of CPUs', `Worker threads accepting connections, 1..${MAX_WORKERS}.`),
  fixed('workerYoungGeneration', integer(1, 1024), 6, 'Size in MB of the V8 young generation of each worker thread (1..1024). Small keeps the nursery where most message objects live and die in the CPU caches: faster than V8\'s default of up to 48 MB, and idle connections cost less memory.'),
  fixed('dataDir', string({ nonEmpty: true }), './data', 'Directory for persistent state, relative to the working directory.'),
  fixed('log.level', oneOf(LOG_LEVELS), 'info', 'Lowest level written: debug, info, warn or error.'),
  fixed('log.file.enabled', boolean(), true, 'Keep every log line (main thread and workers) in the log store as well as on stdout: rotating NDJSON files `spindle.log`, `spindle.log.1`, ... in `<dataDir>/logs`, queried and downloaded through the admin API (/log/query, /log/download).'),
  fixed('log.file.maxSize', integer(1024, 1073741824), 10485760, 'Bytes per log file (1024..1073741824); past it the file is rotated to `spindle.log.1`.'),
  fixed('log.file.maxFiles', integer(1, 1000), 5, 'Log files kept, the live one included (1..1000); the oldest goes when another is rotated.'),
  fixed('mqtt.host', string({ nonEmpty: true }), '0.0.0.0', "Bind address of every MQTT listener; '::' for dual stack."),
  fixed('mqtt.io', oneOf(['native', 'node'] as const), 'native', "Who does the I/O of TCP connections: 'native' (the Rust core: accept, read and write on one epoll instance per worker, batched per event-loop turn) or 'node' (Node's net sockets, as before; kept for one release to compare). TLS too (rustls in the driver); WebSocket connections stay on uWebSockets.js."),
  fixed('mqtt.tcp.enabled', boolean(), true, 'Accept MQTT over plain TCP.'),
  fixed('mqtt.tcp.port', port(), 1883, 'Port of the TCP listener (0: any free port).'),
  fixed('mqtt.ws.enabled', boolean(), true, 'Accept MQTT over WebSocket.'),
  fixed('mqtt.ws.port', port(), 8083, 'Port of the WebSocket listener (0: any free port).'),
  fixed('mqtt.ws.path', string({ pattern: /^\//, patternText: "must start with '/'" }), '/mqtt', 'HTTP path of the WebSocket endpoint.'),
  fixed('mqtt.tls.enabled', boolean(), false, 'Accept MQTT over TLS. Turned on automatically when `cert` and `key` are set and this key is not set.'),
  fixed('mqtt.tls.port', port(), 8883, 'Port of the TLS listener (0: any free port).'),
  fixed('mqtt.tls.cert', string(), '', 'Server certificate chain, PEM file path.'),
  fixed('mqtt.tls.key', string(), '', 'Server private key, PEM file path.'),
  fixed('mqtt.tls.ca', string(), '', 'CA certificates (PEM file path) that client certificates are verified against; empty: the system roots.'),
  fixed('mqtt.tls.requestCert', boolean(), false, 'Ask TLS clients for a certificate. False: clients are not asked and present none.'),
  fixed('mqtt.tls.rejectUnauthorized', boolean(), true, 'With `requestCert`: refuse clients whose certificate is missing or not signed by `ca` (the system roots when `ca` is empty). False: a client certificate is optional and unverified.'),
  fixed('mqtt.tls.cnAsUsername', boolean(), false, 'Use the verified client certificate CN as the username; the certificate counts as the credential. Needs `requestCert` and `ca`.'),
  fixed('mqtt.tls.psk.file', string(), '', "TLS-PSK on the TLS listener: a Mosquitto `psk_file` (`identity:hexkey` per line, `#` comments), path; empty: none. Read at start (a bad line stops the start, naming it) and again on SIGHUP (a bad file is logged and the old keys stay). Turns `mqtt.tls.enabled` on like `cert` and `key`; with PSK the listener needs no certificate. A PSK listener's TLS runs on Node's OpenSSL even with `mqtt.io` native (rustls has no external PSK). See docs/features/tls-psk.md."),
  fixed('mqtt.tls.psk.fromClientDb', boolean(), false, "TLS-PSK on the TLS listener with the keys of the built-in client database (a client's `pskKey`; the identity is its username), after `mqtt.tls.psk.file`. Turns `mqtt.tls.enabled` on like `mqtt.tls.psk.file`."),
  fixed('mqtt.tls.psk.identityHint', string(), '', 'The PSK identity hint sent to TLS 1.2 clients (TLS 1.3 has none); empty: none.'),
  fixed('mqtt.tls.psk.identityAsUsername', boolean(), false, "The PSK identity is the client's username, and its key its credential: no password is checked (Mosquitto's `use_identity_as_username`). A client of the client database keeps its roles, client id binding and enabled flag."),
  fixed('mqtt.tls.crl', string(), '', 'Certificate revocation lists (file path: PEM `X509 CRL` sections, or one DER CRL) client certificates are checked against in the handshake: a revoked certificate is refused, and so is one whose issuer has no CRL in the file or whose CRL is past its nextUpdate. Read again on SIGHUP. Needs `requestCert`. Empty: no CRL.'),
  fixed('mqtt.tls.ocspStapling.enabled', boolean(), false, 'Staple the OCSP response for the server certificate to TLS handshakes (clients that ask get it): fetched from the responder of the certificate\'s AIA extension (or `responderUrl`), refreshed before its nextUpdate, retried with backoff on failure; the last good response is stapled until it expires.'),
  fixed('mqtt.tls.ocspStapling.responderUrl', string({ pattern: /^$|^https?:\/\/\S+$/, patternText: 'an http(s) URL or nothing' }), '', 'OCSP responder asked for the stapled response (http or https URL); empty: the one in the server certificate\'s AIA extension.'),
  fixed('mqtt.tls.ocspStapling.refreshBefore', integer(10, 604800), 3600, 'Seconds before the stapled response\'s nextUpdate a new one is fetched (10..604800; at most half the response\'s validity).'),
  fixed('mqtt.tls.ocspStapling.timeoutMs', integer(100, 60000), 5000, 'Milliseconds the OCSP responder has to answer a staple request (100..60000).'),
  fixed('mqtt.tls.ocspClientCheck.enabled', boolean(), false, 'Ask the OCSP responder about each client certificate after the handshake, before the CONNECT is admitted: revoked or unknown is refused (CONNACK 0x87, MQTT 3.1.1: 5). Needs `requestCert`, `rejectUnauthorized` and `ca`.'),
  fixed('mqtt.tls.ocspClientCheck.failMode', oneOf(['closed', 'open'] as const), 'closed', "When the responder cannot be asked (down, late, a bad answer): 'closed' refuses the client (CONNACK 0x88 Server unavailable, MQTT 3.1.1: 3), 'open' admits it (counted in spindle_ocsp_client_checks_total)."),
  fixed('mqtt.tls.ocspClientCheck.responderUrl', string({ pattern: /^$|^https?:\/\/\S+$/, patternText: 'an http(s) URL or nothing' }), '', 'OCSP responder asked about client certificates (http or https URL); empty: each certificate\'s AIA extension.'),
  fixed('mqtt.tls.ocspClientCheck.cacheSeconds', integer(0, 86400), 300, 'Seconds a worker keeps a client certificate\'s status (0..86400; never past the answer\'s nextUpdate; 0: asked at every CONNECT).'),
  fixed('mqtt.tls.ocspClientCheck.timeoutMs', integer(100, 60000), 3000, 'Milliseconds the OCSP responder has to answer about a client certificate (100..60000).'),
  proxyMode('mqtt.tcp.proxyProtocol', 'tcp'),
  proxyTrusted('mqtt.tcp.proxyProtocolTrusted', 'tcp'),
  proxyCnAsUsername('mqtt.tcp.proxyProtocolCnAsUsername', 'tcp'),
  proxyMode('mqtt.tls.proxyProtocol', 'tls'),
  proxyTrusted('mqtt.tls.proxyProtocolTrusted', 'tls'),
  proxyCnAsUsername('mqtt.tls.proxyProtocolCnAsUsername', 'tls'),
  proxyMode('mqtt.ws.proxyProtocol', 'ws'),
  proxyTrusted('mqtt.ws.proxyProtocolTrusted', 'ws'),
  fixed('mqtt.rateLimit.messagesPerSecond', integer(0, 10_000_000), 0, 'Inbound PUBLISH packets per second each client of the configuration file\'s endpoints (mqtt.tcp, mqtt.tls, mqtt.ws) may send (0..10000000; 0: no limit). Past it the connection stops reading until its bucket refills (throttled: nothing is lost; spindle_rate_limit_throttled_total). An endpoint made through the admin API has its own rateLimit; an authenticator may give a client its own.'),
  fixed('mqtt.rateLimit.messagesBurst', integer(0, 100_000_000), 0, 'PUBLISH packets a client may send at once above mqtt.rateLimit.messagesPerSecond (0..100000000; 0: one second\'s worth).'),
  fixed('mqtt.rateLimit.bytesPerSecond', integer(0, 10_000_000_000), 0, 'Inbound PUBLISH bytes (whole packets) per second per client of the configuration file\'s endpoints (0..10000000000; 0: no limit).'),
  fixed('mqtt.rateLimit.bytesBurst', integer(0, 100_000_000_000), 0, 'Bytes a client may send at once above mqtt.rateLimit.bytesPerSecond (0..100000000000; 0: one second\'s worth).'),
  fixed('mqtt.totalRateLimit.messagesPerSecond', integer(0, 10_000_000), 0, 'Inbound PUBLISH packets per second of all the clients of each of the configuration file\'s endpoints together, on this node (shared by its workers; 0..10000000; 0: no limit). Past it every client of the endpoint that sends is throttled.'),
  fixed('mqtt.totalRateLimit.messagesBurst', integer(0, 100_000_000), 0, 'Burst of mqtt.totalRateLimit.messagesPerSecond (0..100000000; 0: one second\'s worth).'),
  fixed('mqtt.totalRateLimit.bytesPerSecond', integer(0, 10_000_000_000), 0, 'Inbound PUBLISH bytes per second of all the clients of each of the configuration file\'s endpoints together, on this node (0..10000000000; 0: no limit).'),
  fixed('mqtt.totalRateLimit.bytesBurst', integer(0, 100_000_000_000), 0, 'Burst of mqtt.totalRateLimit.bytesPerSecond (0..100000000000; 0: one second\'s worth).'),
  fixed('overload.enabled', boolean(), false, 'Overload protection: a worker whose event-loop lag, or the process whose V8 heap or RSS, passes its high-water mark refuses new connections (CONNACK 0x89 Server busy, MQTT 3.1.1: 3 Server unavailable) until every measure is back below its low-water mark; connected clients keep working. The marks change at run time (PUT /api/overload/marks).'),
  fixed('overload.lagHighMs', integer(1, 600_000), 500, 'Event-loop lag of a worker (ms, the 99th percentile over overload.sampleMs) above which it refuses new connections (1..600000).'),
  fixed('overload.lagLowMs', integer(0, 600_000), 100, 'Lag (ms) below which an overloaded worker accepts again (0..600000; at most overload.lagHighMs).'),
  fixed('overload.heapHighMB', integer(0, 1_048_576), 0, 'V8 heap used by a worker (MB) above which it refuses new connections (0: not watched).'),
  fixed('overload.heapLowMB', integer(0, 1_048_576), 0, 'Heap used (MB) below which it accepts again (at most overload.heapHighMB).'),
  fixed('overload.rssHighMB', integer(0, 1_048_576), 0, 'Resident memory of the process (MB) above which every worker refuses new connections (0: not watched).'),
  fixed('overload.rssLowMB', integer(0, 1_048_576), 0, 'RSS (MB) below which the workers accept again (at most overload.rssHighMB).'),
  fixed('overload.sampleMs', integer(50, 60_000), 250, 'How often each worker measures its lag, heap and the RSS (ms, 50..60000).'),
  fixed('overload.shedQos0', boolean(), false, 'While a worker is overloaded, QoS 0 deliveries to slow clients (whose socket is not taking what is written: over 64 KB waiting) are dropped (counted as spindle_overload_shed_total) instead of queued.'),
  fixed('overload.debugBusy', boolean(), false, 'Testing only: lets POST /api/overload/debug/busy make a worker busy-loop for a while (to see overload protection act). Off in production.'),
  fixed('limits.maxPacketSize', integer(16, 268435455), 1048576, 'Largest packet accepted, in bytes (16..268435455); advertised in the MQTT 5 CONNACK.'),
  fixed('limits.receiveMaximum', integer(1, 65535), 1024, 'QoS 1/2 messages a client may have unacknowledged towards the broker (1..65535); advertised in CONNACK.'),
  fixed('limits.maxInflight', integer(1, 65535), 1024, "QoS 1/2 messages the broker sends a client unacknowledged (1..65535); also bounded by the client's Receive Maximum."),
  fixed('limits.maxKeepalive', integer(0, 65535), 3600, 'Longest keep alive in seconds (0..65535). A client asking for more, or for 0, gets this as Server Keep Alive (MQTT 5). 0: no cap.'),
  fixed('limits.topicAliasMaximum', integer(0, 65535), 64, 'Topic aliases a client may use towards the broker (0..65535; 0: none).'),
  fixed('limits.maxQueuedMessages', integer(0, 10_000_000), 1000, 'Messages queued per session (0..10000000): the offline queue and the overflow beyond the inflight window.'),
  fixed('limits.queueDropPolicy', oneOf(['drop-oldest', 'drop-newest']), 'drop-oldest', 'Which message a full queue drops: drop-oldest or drop-newest.'),
  fixed('limits.queueQos0', boolean(), false, 'Queue QoS 0 messages for offline sessions.'),
  fixed('limits.maxSessionExpiry', integer(0, 4294967295), 604800, 'Cap on the Session Expiry Interval, in seconds; MQTT 3.1.1 persistent sessions (clean session 0) get this.'),
  fixed('limits.maxClientIdLength', integer(23, 65535), 256, 'Longest client identifier accepted, in bytes (23..65535).'),
  fixed('limits.maxTopicLevels', integer(1, 65535), 128, 'Most levels in a topic name or filter (1..65535).'),
  fixed('limits.authMaxFailures', integer(0, 1_000_000), 10, 'Failed MQTT authentications from one source address within `limits.authFailureWindow` that lock the address out for `limits.authLockout` (0..1000000; 0: no limit). A locked-out address gets CONNACK 0x8A Banned (5 in MQTT 3.1.1) before any password is checked; counted in spindle_auth_lockouts_total. Shared by every worker.'),
  fixed('limits.authFailureWindow', integer(1, 86400), 60, 'Seconds over which failed MQTT authentications are counted per source address (1..86400).'),
  fixed('limits.authLockout', integer(1, 86400), 60, 'Seconds a source address stays locked out after too many failed MQTT authentications (1..86400).'),
  fixed('limits.maxOutboundBytes', integer(65536, 1073741824), 8388608, 'Bytes written to a connection and not yet taken by its client (socket and WebSocket buffers), at most (65536..1073741824). Past it QoS 0 messages to the client are dropped (counted as slow_consumer) and QoS 1/2 wait in the session queue.'),
  fixed('limits.slowConsumerTimeout', integer(1, 86400), 30, 'Seconds a connection may stay over limits.maxOutboundBytes before it is closed (1..86400).'),
  fixed('limits.partialPacketTimeout', integer(1, 86400), 60, 'Seconds a packet may take to arrive once its first byte has, for clients without keep alive (with keep alive, 1.5 x keep alive bounds it) (1..86400).'),
  fixed('limits.maxRetainedMessages', integer(0, 100_000_000), 0, 'Retained messages held at most (0..100000000; 0: no limit), the broker\'s own $SYS ones not counted. A retained PUBLISH for a topic that has none past it is refused: PUBACK/PUBREC 0x97 Quota exceeded for MQTT 5 QoS 1/2, dropped for QoS 0 and acknowledged and dropped for MQTT 3.1.1 (docs/features/retained-limits.md); replacing or clearing a retained message never is. Counted in spindle_retained_refused_total{reason="count"}. In a cluster each node holds the whole retained set and checks its own count.'),
  fixed('limits.maxRetainedPayloadSize', integer(0, 268435455), 0, 'Bytes of the payload of a retained message at most (0..268435455; 0: no limit, limits.maxPacketSize still applies). A retained PUBLISH with a larger payload is refused as one past limits.maxRetainedMessages (0x97 Quota exceeded); counted in spindle_retained_refused_total{reason="size"}.'),
  fixed('limits.retainedDefaultExpiry', integer(0, 4294967295), 0, 'Seconds a retained message without a Message Expiry Interval is kept (0..4294967295; 0: until replaced or cleared). The retained copy then expires as if it had been published with that interval (a new subscriber gets the time left); the copies delivered when it was published are not changed.'),
  fixed('auth.allowAnonymous', boolean(), true, 'Accept clients without a username.'),
  fixed('auth.users', users(), [], 'Users: a list of `{username, password, rateLimit?}` where password is an argon2 or bcrypt hash (see "Password hashes") and rateLimit (`{messagesPerSecond, messagesBurst, bytesPerSecond, bytesBurst}`, each optional) is the user\'s own inbound rate limit, used instead of its endpoint\'s. Environment: JSON.'),
  fixed('auth.acl', aclRules(), [], 'Access rules, first match wins: `{permission: allow|deny, action: publish|subscribe|pubsub, topic, username?, clientId?}`; `topic` is a filter where `%c` and `%u` stand for the client id and username. Environment: JSON.'),
  fixed('auth.aclDefault', oneOf(['allow', 'deny']), 'allow', 'Decision when no ACL rule matches: allow or deny.'),
  fixed('auth.passwordFile', string(), '', 'A Mosquitto password file (as `mosquitto_passwd` writes it: `user:$7$...` PBKDF2-SHA512 or `user:$6$...` SHA-512), path; empty: none. Its users can sign in besides `auth.users`; a name in both is checked against `auth.users`. Read at start (a bad file stops the start) and again on SIGHUP (a bad file is logged and the old contents stay).'),
  fixed('auth.aclFile', string(), '', 'A Mosquitto ACL file (`topic`, `user`, `pattern` lines with read, write, readwrite or deny), path; empty: none. Consulted when no `auth.acl` rule applies, and then it decides: what it does not grant is denied (`auth.aclDefault` is not used). Read at start and again on SIGHUP, like `auth.passwordFile`.'),
  fixed('auth.cacheSize', integer(0, 1_000_000), 1024, 'Authorization decisions cached per connection (0..1000000; 0: no cache).'),
  fixed('auth.policyCacheTtl', integer(0, 86_400), 60, 'Seconds an answer of the authentication policies (allow or deny, per username, password, and the client id or address when a policy reads them) is kept by each worker (0..86400; 0: no cache). Emptied on every policy change.'),
  fixed('auth.policyCacheSize', integer(0, 10_000_000), 100_000, 'Authentication policy answers kept per worker, least recently used out first (0..10000000).'),
  fixed('auth.clientDbCache', boolean(), true, 'Built-in client database: after a password is verified, each worker keeps an HMAC-SHA256 of username and password (under a random key of its own, never stored) per client, so the next CONNECT with the same password skips the argon2/bcrypt/PBKDF2 verification. Dropped when the client changes. Off: every CONNECT verifies its hash.'),
  fixed('auth.policyTimeout', integer(100, 600_000), 15_000, 'Milliseconds a CONNECT, PUBLISH or SUBSCRIBE waits for the policy chains; past it the CONNECT is refused with 0x88 (3 in MQTT 3) and the PUBLISH or SUBSCRIBE with 0x87, never allowed (100..600000).'),
  fixed('auth.hashConcurrency', integer(0, 1024), 0, 'bcrypt, argon2 and pbkdf2 verifications of the auth policies that run at once (the others wait in order), so a storm of logins leaves cores to the connected clients\' traffic (0..1024; 0: half the CPUs, at least 1). Waits are counted in spindle_auth_hash_waits_total.'),
  fixed('auth.policyMaxPending', integer(1, 1_000_000), 10_000, 'Policy questions a worker may have waiting at once; past it new ones are refused like a timeout (1..1000000).'),
  fixed('auth.exchangeTimeout', integer(1, 600), 10, 'Seconds an MQTT 5 enhanced-authentication exchange (AUTH packets: SCRAM-SHA-256, SCRAM-SHA-512) may take, from the CONNECT or the client\'s AUTH 0x19 (re-authentication) to its end (1..600). Past it a CONNECT is refused with CONNACK 0x87 and a re-authentication ends with DISCONNECT 0x87; counted in spindle_auth_exchange_timeouts_total. A CONNECT is also bounded by the 10 s every client has to complete its CONNECT.'),
  fixed('auth.scram.iterations', integer(4096, 10_000_000), 4096, 'PBKDF2 iteration count of the SCRAM-SHA-256 and SCRAM-SHA-512 credentials made when a built-in client\'s password is set through the admin API (4096..10000000; RFC 7677 asks for at least 4096). Higher makes stolen credentials harder to guess from, and costs every SCRAM client that much PBKDF2 at each sign-in (the broker computes it only when the password is set). Also the iteration count shown for usernames nobody holds. Existing credentials keep theirs until their password is set again.'),
  fixed('store.storeType', oneOf(['LOCAL', 'MEMORY', 'POSTGRESQL', 'MYSQL']), 'LOCAL', 'Where sessions, queued messages, retained messages and admin objects are kept: LOCAL (embedded SQLite in dataDir, zero setup), MEMORY (nothing survives a restart), POSTGRESQL or MYSQL (MariaDB works).'),
  fixed('store.datasource.url', string(), '', 'Database URL for POSTGRESQL (postgres://host:5432/db) or MYSQL (mysql://host:3306/db); the driver follows storeType.'),
  fixed('store.datasource.username', string(), '', 'Database user (overrides one in the URL).'),
  fixed('store.datasource.password', string(), '', 'Database password (overrides one in the URL).'),
  fixed('admin.enabled', boolean(), true, 'Serve the admin HTTP API, the metrics and the OpenAPI document.'),
  fixed('admin.host', string({ nonEmpty: true }), '0.0.0.0', 'Bind address of the admin HTTP API.'),
  fixed('admin.port', port(), 8080, 'Port of the admin HTTP API (0: any free port).'),
  fixed('admin.tls.cert', string(), '', 'HTTPS for the admin API and console: the server certificate chain, PEM file path (with `admin.tls.key`); empty: no certificate of its own. Read again on SIGHUP: new connections get the new certificate, open ones keep theirs. See docs/operating/admin-https.md.'),
  fixed('admin.tls.key', string(), '', 'The private key of `admin.tls.cert`, PEM file path.'),
  fixed('admin.tls.fromEndpoint', string(), '', 'HTTPS for the admin API with the certificate and key of this MQTT endpoint (its id, e.g. "tls"), instead of `admin.tls.cert`; read again on SIGHUP, as the endpoint has them then. Empty: none.'),
  fixed('admin.tls.plain', oneOf(['off', 'redirect', 'on'] as const), 'off', "With HTTPS on `admin.port`, what plain HTTP gets: 'off' (no plain HTTP at all), 'redirect' (a plain-HTTP port, `admin.tls.plainPort`, answers every request with 308 to the same path on HTTPS), 'on' (the plain-HTTP port serves the API and console too, e.g. for a scraper on a private address; the session cookie set there is not Secure)."),
  fixed('admin.tls.plainPort', port(), 0, "Port of the plain-HTTP listener of `admin.tls.plain` redirect or on (0: any free port; set one, e.g. 80, for people to type)."),
  fixed('admin.tls.plainHost', string(), '', 'Bind address of the plain-HTTP listener; empty: `admin.host`.'),
  fixed('admin.maxBodySize', integer(1024, 268435456), 1048576, 'Largest admin request body in bytes (1024..268435456); larger requests get 413.'),
  fixed('admin.tokenLifetime', integer(60, 31536000), 86400, 'Lifetime of the tokens /public/login issues, in seconds (60..31536000).'),
  fixed('admin.loginMaxFailures', integer(0, 1_000_000), 10, 'Failed admin sign-ins (/public/login or HTTP Basic) from one address, or for one username, within `admin.loginWindow` that lock it out for `admin.loginLockout` (0..1000000; 0: no limit). Locked out: 429 with Retry-After.'),
  fixed('admin.loginWindow', integer(1, 86400), 60, 'Seconds over which failed admin sign-ins are counted (1..86400).'),
  fixed('admin.loginLockout', integer(1, 86400), 60, 'Seconds an address or username stays locked out after too many failed admin sign-ins (1..86400).'),
  fixed('admin.username', string({ nonEmpty: true }), 'admin', 'Name of the first admin user, created at first start.'),
  fixed('admin.password', string(), '', 'Password of the first admin user, used once at first start; empty: one is generated and printed once.'),
  fixed('admin.licensePublicKey', string(), '', 'PEM file of the Ed25519 public key that licences are verified with; empty: the built-in Spindle key.'),
  fixed('rules.actionQueueLimit', integer(1, 10_000_000), 10000, 'Outputs waiting per rule action (a write to a data source) at most (1..10000000). While its target is down an action retries with backoff and its queue fills; past this bound further outputs are dropped and counted (spindle_rule_action_dropped_total).'),
  fixed('scripts.threads', integer(1, 64), 1, 'Pool threads per worker that run scripts and extensions (1..64), so a listener thread never runs user code.'),
  fixed('scripts.timeout', integer(1, 60_000), 100, 'Milliseconds a script or extension may take on one message (1..60000); past it the call is cut off (an extension that never yields: its pool thread is ended) and counted in spindle_script_failures_total{reason="timeout"}.'),
  fixed('scripts.memoryLimit', integer(16, 16_384), 128, 'Heap megabytes of each pool thread (16..16384); a script or extension that needs more ends its thread: the batch fails with reason "memory" and a new thread takes over.'),
  fixed('scripts.onError', oneOf(['pass', 'drop']), 'pass', 'What happens to a message a script or extension fails on (throws, times out, runs out of memory, returns something invalid): pass (routed as it came) or drop.'),
  fixed('extensions.dir', string(), '', 'Directory extensions are loaded from (/extension/add names a module inside it, nothing outside); \'\': extensions are off.'),
  fixed('mqtt.exclusiveSubscription', boolean(), true, 'Exclusive subscriptions (EMQX\'s `$exclusive/{filter}`): one client at a time holds the filter on this node, others are refused with SUBACK 0x97 Quota exceeded (MQTT 3.1.1: 0x80); the place frees when the holder unsubscribes or its session ends. False: `$exclusive/...` is an ordinary filter. (EMQX\'s default is false; here it costs one prefix test per SUBSCRIBE filter.) One holder across a cluster\'s nodes (the JetStream KV bucket spindle-exclusive decides), and a persistent session\'s place is kept in the store across a restart (docs/features/exclusive-subscriptions.md).'),
  fixed('rewrite', rewriteRules(), [], 'Topic rewrite rules (EMQX\'s), in order: `{action: publish|subscribe|all, sourceFilter, regex, destination}`. The first rule whose action applies, whose `sourceFilter` matches the topic and whose `regex` (JavaScript) matches it rewrites it to `destination`, `$1..$n` standing for the groups and `${clientid}`, `${username}` for the client\'s (a rule naming a value the client cannot give, none or one with + # /, does not apply to it). Applied before the ACL to PUBLISH topics and will topics (publish), and to SUBSCRIBE/UNSUBSCRIBE filters, also inside `$share/{group}/` (subscribe). At most 1000. Replaced at run time by PUT /api/rewrite (docs/features/topic-rewrite.md). Environment: JSON.'),
  fixed('bridges', bridges(), [], 'MQTT bridges to remote brokers: a list of `{name, url, protocolVersion, clientId, username, password, tls, keepalive, cleanStart, sessionExpiryInterval, reconnectPeriod, queueLimit, maxInflight, forwards, subscriptions, enabled}` (see "MQTT bridges"). They run beside the bridges added through the admin API, which shows them read-only. Environment: JSON.'),
  fixed('platform.maxTenants', integer(16, 1_000_000), 10_000, 'Organizations and applications of the control platform, together (16..1000000): each has a slot in the counters every worker shares (40 bytes); past it, adding one is refused (409).'),
  fixed('platform.alertInterval', integer(1, 3600), 10, 'Seconds between evaluations of the alert rules (1..3600): each samples the signals and fires, updates or resolves alerts.'),
  fixed('platform.maxAlerts', integer(100, 10_000_000), 10_000, 'Alerts kept (100..10000000); past it the oldest resolved ones are removed (counted in spindle_alerts_pruned_total).'),
  fixed('audit.reads', boolean(), false, 'Audit reads too: every answered GET, and POST query, of a signed-in user, as action `read` (the console polls several a second while open: many entries). False: only writes and sign-ins are audited. The console\'s audit page hides reads unless asked (reads=false on GET /api/v1/audit-logs).'),
  fixed('audit.retentionDays', integer(1, 36_500), 90, 'Days audit log entries are kept (1..36500); older ones are removed hourly.'),
  fixed('cluster.enabled', boolean(), false, 'Run as a node of a cluster (see "Cluster"): messages, interest and node state cross nodes over NATS.'),
  fixed('cluster.natsUrl', string(), '', 'URL of an existing NATS cluster to use (nats://host:4222[,nats://...]); \'\': this node runs its own nats-server, clustered with its peers.'),
  fixed('cluster.localAddress', string(), '127.0.0.1:6222', 'host:port of this node\'s nats-server route listener (its peers connect there).'),
  fixed('cluster.addresses', addresses(), [], 'host:port route addresses of the other nodes\' nats-servers. Environment: JSON.'),
  fixed('cluster.clientPort', integer(1, 65535), 4222, 'Port of this node\'s own nats-server for clients (on 127.0.0.1).'),
  fixed('cluster.natsServer', string(), '', 'Path of the nats-server binary; \'\': the one on PATH, else Go\'s bin directory (scripts/ensure-nats.sh installs it).'),
  fixed('cluster.discovery.service', string(), '', 'With cluster.discovery.namespace: the peers are the addresses the orchestrator\'s DNS answers for <service>.<namespace> (route port from cluster.localAddress).'),
  fixed('cluster.discovery.namespace', string(), '', 'See cluster.discovery.service.'),
  fixed('cluster.maxNodes', integer(2, 1024), 64, 'Most nodes a cluster may have (2..1024): each other node has a handle in the routing core.'),
  fixed('cluster.mqttAddress', string({ pattern: HOST_PORT_OR_EMPTY, patternText: 'must be "host:port" or empty' }), '', 'host:port where MQTT clients reach this node (told to the other nodes; a draining node names it in the Server Reference of DISCONNECT 0x9C). \'\': the host of cluster.localAddress and the port of the first enabled plain MQTT endpoint.'),
  fixed('drain.rate', integer(1, 100_000), 100, 'Clients a drain or a rebalance moves away per second, per node (1..100000; a request may give its own).'),
  fixed('drain.serverReference', string({ pattern: HOST_PORT_OR_EMPTY, patternText: 'must be "host:port" or empty' }), '', 'host:port named to MQTT 5 clients of a draining node when no other running node is known (a single node, e.g. behind a load balancer). \'\': they get DISCONNECT 0x8B Server shutting down instead of 0x9C.'),
  fixed('drain.onStop', boolean(), false, 'SIGTERM (and SIGINT) drains the node first (its clients moved away at drain.rate, their sessions handed to the nodes they reconnect to), then stops; at most drain.stopTimeout seconds.'),
  fixed('drain.stopTimeout', integer(1, 3600), 60, 'Seconds a drain on stop may take (1..3600); then the node stops with the clients left (v5: DISCONNECT 0x8B).'),
  fixed('drain.handoverTimeout', integer(1, 600), 10, 'Seconds a drain waits for a moved client\'s persistent session to be claimed by the node it reconnects to (1..600); past it the session stays here, counted in spindle_drain_moved_total{reason="handover_timeout"}.'),
  fixed('delayed.enabled', boolean(), true, 'Delayed publish: a PUBLISH to $delayed/{seconds}/{topic} is held and published to {topic} when due (docs/features/delayed-publish.md). Off: such topics are ordinary topic names.'),
  fixed('delayed.maxMessages', integer(0, 100_000_000), 1_000_000, 'Delayed messages held at most, in the whole store (0..100000000); past it a delayed PUBLISH is refused (v5: 0x97 Quota exceeded; 3.1.1: dropped), counted in spindle_delayed_refused_total{reason="quota"}.'),
  fixed('delayed.maxInterval', integer(0, 4_294_967), 4_294_967, 'Longest delay in seconds a $delayed/{seconds}/ topic may ask (0..4294967); a longer one is refused like an invalid topic name (v5: 0x90).'),
  fixed('schemaRegistry.offloadBytes', integer(0, 268_435_456), 4096, 'A PUBLISH whose payload has at least this many bytes and whose topic has a schema check is decoded on a pool thread of its worker, not on the listener thread; so is a rule calling schema_decode or spb_decode on such a PUBLISH evaluated (0..268435456; 0: every check and rule runs inline). Smaller payloads are checked and evaluated inline: a thread hop costs more than their decode (docs/features/schema-registry.md).'),
  fixed('schemaRegistry.threads', integer(1, 64), 1, 'Pool threads per worker that decode offloaded schema checks and evaluate offloaded rules (1..64), started with the first offloaded PUBLISH.'),
  fixed('schemaRegistry.maxWaitingBytes', integer(0, 1_073_741_824), 16_777_216, 'Payload bytes per worker waiting for (or being decoded by) the schema pool, checks and rule evaluations together, before it pushes back (0..1073741824): past it a PUBLISH is checked inline on the listener thread instead (counted in spindle_schema_check_offload_overflow_total), and a rule evaluation still waits but the reading of its publisher is paused until the backlog is below half of it (spindle_schema_rule_publishers_paused_total); past twice it a rule is evaluated inline (spindle_schema_rule_offload_overflow_total).'),
  fixed('schemaRegistry.maxWaitingMessages', integer(1, 1_000_000), 10_000, 'Checks and rule evaluations per worker waiting for (or being run by) the schema pool before it pushes back (1..1000000): past it a PUBLISH is checked inline, or the publisher of a rule paused (inline past twice it), like past schemaRegistry.maxWaitingBytes.'),
  fixed('schemaRegistry.timeout', integer(1, 60_000), 1000, 'Milliseconds a pool thread may take on one schema check or rule evaluation (1..60000); a batch whose thread stops beating for 3x this (plus 500 ms) is aborted and its thread ended: its checks are handled per schemaRegistry.onPoolFailure, its rule evaluations fail (counted in spindle_schema_rule_offload_failures_total).'),
  fixed('schemaRegistry.onPoolFailure', oneOf(['refuse', 'pass']), 'refuse', 'What an offloaded schema check answers when its batch fails as a whole (the pool thread died, ran out of memory or passed schemaRegistry.timeout): refuse (as a payload that does not decode: v5 QoS 1/2 0x99, else dropped) or pass (routed unchecked). Counted in spindle_schema_check_offload_failures_total{outcome}.'),
  fixed('topicMetrics.filters', topicFilters(), [], 'Topic filters (wildcards allowed) whose messages are counted from the start: in and out by QoS, bytes, dropped (docs/features/topic-metrics.md); more are created through POST /api/topic-metrics. Environment: JSON.'),
  fixed('topicMetrics.max', integer(1, 10_000), 512, 'Topic filters with topic metrics at most, the configuration\'s and the admin API\'s together (1..10000); a creation past it is refused with 409 (field filter), counted in spindle_topic_metrics_refused_total.'),
  fixed('slowSubs.enable', boolean(), false, 'Slow subscribers (docs/features/slow-subscribers.md): time every QoS 1/2 delivery until its PUBACK or PUBCOMP and keep the slowest clients per topic. Changed at run time by PUT /api/slow-subscriptions/settings.'),
  fixed('slowSubs.threshold', integer(0, 3_600_000), 500, 'Milliseconds: a delivery latency below it is not recorded (0..3600000).'),
  fixed('slowSubs.topK', integer(1, 1000), 10, 'Records in the slow subscriber top list at most (1..1000), per worker and merged; a slower latency pushes out the fastest record, counted in spindle_slow_subs_evicted_total.'),
  fixed('slowSubs.window', integer(1, 86_400), 300, 'Seconds a slow subscriber record stays without a new latency above the threshold (1..86400).'),
  fixed('slowSubs.statsType', oneOf(['whole', 'internal', 'response']), 'whole', 'What a latency measures: whole (the broker received the message to the subscriber acknowledged it), internal (received to sent: time queued), response (sent to acknowledged).'),
  fixed('banned.maxEntries', integer(1, 10_000_000), 100_000, 'Most bans held (client ids, usernames, addresses and CIDR blocks together; 1..10000000). A ban past it is refused with 409 (counted in spindle_banned_refused_adds_total); flapping bans past it are logged and counted there too.'),
  fixed('banned.sweepInterval', integer(1, 86400), 60, 'Seconds between sweeps of expired bans (1..86400). An expired ban never refuses a client, swept or not.'),
  fixed('flapping.enable', boolean(), false, 'Flapping detection: a client id that connects more than flapping.maxCount times within flapping.window seconds (on any worker of the node) is banned for flapping.banTime seconds (a normal ban, by "flapping": replicated and kicking).'),
  fixed('flapping.maxCount', integer(1, 1_000_000), 15, 'Connections of one client id within flapping.window allowed before it is banned for flapping (1..1000000).'),
  fixed('flapping.window', integer(1, 86400), 60, 'Seconds over which connections of a client id are counted for flapping detection (1..86400).'),
  fixed('flapping.banTime', integer(1, 31_536_000), 300, 'Seconds a client id found flapping stays banned (1..31536000).'),
  fixed('sparkplug.enabled', boolean(), true, 'Keep the Sparkplug B state (docs/features/sparkplug.md): the births, deaths and data of edge nodes and devices under spBv1.0/, and the primary hosts\' STATE, copied from the workers to the main thread and read through /api/sparkplug and the console; births, deaths and STATEs are kept in the store and replicated across a cluster. false: nothing is copied (spb_decode() in rules works either way).'),
  fixed('sparkplug.maxEdgeNodes', integer(1, 1_000_000), 10_000, 'Most Sparkplug B edge nodes kept (1..1000000; hosts of spBv1.0/STATE are kept apart up to the same number). A new one past it is not kept, counted in spindle_sparkplug_dropped_total.'),
  fixed('sparkplug.maxDevicesPerNode', integer(1, 1_000_000), 1000, 'Most devices kept per Sparkplug B edge node (1..1000000). A new one past it is not kept, counted in spindle_sparkplug_dropped_total{what="device"}.'),
  fixed('otel.serviceName', string({ nonEmpty: true }), 'spindle', 'OpenTelemetry: the service.name of what this node exports over OTLP (docs/features/opentelemetry.md); service.instance.id is nodeName, service.version the broker\'s.'),
  fixed('otel.resourceAttributes', stringMap({ max: 64, name: /^[A-Za-z0-9_.\-]{1,255}$/, nameText: 'a name is 1 to 255 letters, digits, _ . or -' }), {}, 'OpenTelemetry: more resource attributes of what this node exports, e.g. {"deployment.environment.name": "prod"} (at most 64; they cannot replace service.name, service.version or service.instance.id). Environment: JSON.'),
  fixed('otel.metrics.enabled', boolean(), false, 'Export the metrics of /prometheus (the same series, summed over the threads) over OTLP/HTTP protobuf to `otel.metrics.endpoint` every `otel.metrics.interval` seconds: counters as cumulative monotonic sums, gauges as gauges, histograms as histograms, labels as attributes. The SDK loads only when this or `otel.logs.enabled` is on.'),
  fixed('otel.metrics.endpoint', httpUrl(), 'http://127.0.0.1:4318/v1/metrics', 'OTLP/HTTP URL the metrics are posted to (http:// or https://; the whole path, e.g. .../v1/metrics).'),
  fixed('otel.metrics.interval', integer(1, 86_400), 60, 'Seconds between metric exports (1..86400); one more is sent on shutdown.'),
  fixed('otel.metrics.headers', stringMap({ max: 64, name: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, nameText: 'a header name is an HTTP token' }), {}, 'HTTP headers sent with every metric export, e.g. {"Authorization": "Bearer ..."} (at most 64). Environment: JSON.'),
  fixed('otel.metrics.timeout', integer(100, 600_000), 10_000, 'Milliseconds a metric export may take (100..600000; at most the interval): past it the export fails (counted in spindle_otel_export_failures_total).'),
  fixed('otel.logs.enabled', boolean(), false, 'Export the log lines of this node (main thread and workers) over OTLP/HTTP protobuf to `otel.logs.endpoint`: one log record per line, with its severity, message as body, and fields as attributes, in batches. Turns the relay of the workers\' output to the main thread on, as `log.file.enabled` does.'),
  fixed('otel.logs.endpoint', httpUrl(), 'http://127.0.0.1:4318/v1/logs', 'OTLP/HTTP URL the log records are posted to (http:// or https://; the whole path, e.g. .../v1/logs).'),
  fixed('otel.logs.level', oneOf(LOG_LEVELS), 'info', 'Lowest level exported over OTLP: debug, info, warn or error (a line must also pass `log.level` to be written at all).'),
  fixed('otel.logs.headers', stringMap({ max: 64, name: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, nameText: 'a header name is an HTTP token' }), {}, 'HTTP headers sent with every log export (at most 64). Environment: JSON.'),
  fixed('otel.logs.timeout', integer(100, 600_000), 10_000, 'Milliseconds a log export may take (100..600000): past it the export fails and its records are dropped (counted).'),
  fixed('otel.logs.queueSize', integer(1, 1_000_000), 10_000, 'Log records waiting for export at most (1..1000000); past it new records are dropped and counted in spindle_otel_log_records_dropped_total{reason="queue_full"}.'),
  fixed('otel.traces.enabled', boolean(), false, 'OpenTelemetry traces of a message\'s path (docs/features/opentelemetry.md#traces): received, authorized, scripts, rules, routed, delivered per subscriber and acknowledged, exported over OTLP/HTTP protobuf to otel.traces.endpoint, with the resource of otel.serviceName and otel.resourceAttributes. Off: a PUBLISH costs one check.'),
  fixed('otel.traces.endpoint', httpUrl(), 'http://127.0.0.1:4318/v1/traces', 'OTLP/HTTP URL the spans are posted to (http:// or https://; the whole path, e.g. .../v1/traces).'),
  fixed('otel.traces.headers', stringMap({ max: 64, name: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, nameText: 'a header name is an HTTP token' }), {}, 'HTTP headers sent with every trace export, e.g. {"Authorization": "Bearer ..."} (at most 64). Environment: JSON.'),
  fixed('otel.traces.sampleRatio', fraction(), 0, 'The share of PUBLISHes traced (0..1; 0.01 is one in a hundred). Besides these, the messages of clients under a client trace are always traced, and with otel.traces.parentBased those whose traceparent user property is sampled.'),
  fixed('otel.traces.parentBased', boolean(), true, 'A PUBLISH with a `traceparent` MQTT 5 user property is traced when its sampled flag is set, and not when it is clear (the ratio is not asked). false: the ratio decides for it too (a traced one still continues its trace).'),
  fixed('otel.traces.queueSize', integer(1, 1_000_000), 8192, 'Spans waiting for export at most (1..1000000), on the main thread and per worker between two of its posts (every 25 ms); past it spans are dropped, counted in spindle_otel_traces_spans_dropped_total.'),
  fixed('otel.traces.batchSize', integer(1, 100_000), 4096, 'Most spans sent in one export request (1..100000); a full batch leaves at once. Large, because each request costs the main thread far more than a span does (4096 spans make about 0.7 MB).'),
  fixed('otel.traces.delay', integer(10, 600_000), 1000, 'Milliseconds spans wait before they are exported when there are fewer than otel.traces.batchSize (10..600000).'),
  fixed('otel.traces.timeout', integer(100, 600_000), 10_000, 'Milliseconds a trace export may take (100..600000); past it the export fails, its spans dropped and counted in spindle_otel_traces_spans_dropped_total{reason="export_failed"}.'),
  fixed('sys.enabled', boolean(), true, 'Publish broker statistics under $SYS/.'),
  fixed('sys.interval', integer(1, 86400), 10, 'Seconds between $SYS updates (1..86400).'),
  fixed('shutdownTimeout', integer(0, 600_000), 5000, 'Milliseconds given to connections to close on shutdown before they are cut (0..600000).'),
]);

const BY_KEY: ReadonlyMap<string, KeySpec> = new Map(KEYS.map((spec) => [spec.key, spec]));

export function keySpec(key: string): KeySpec | undefined {
  return BY_KEY.get(key);
}

/** True when `path` is a section ("mqtt", "mqtt.tls") holding keys. */
export function isSection(path: string): boolean {
  const prefix = `${path}.`;
  return KEYS.some((spec) => spec.key.startsWith(prefix));
}

/** The keys and sections directly inside `section` ('' for the top level). */
export function childrenOf(section: string): string[] {
  const prefix = section === '' ? '' : `${section}.`;
  const names = new Set<string>();
  for (const spec of KEYS) {
    if (spec.key.startsWith(prefix)) names.add(spec.key.slice(prefix.length).split('.')[0]);
  }
  return [...names];
}
