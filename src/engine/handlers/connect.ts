// handle_connect: validates a CONNECT, authenticates, opens or resumes the session (also when
// its previous owner is another worker), and answers CONNACK.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type { Packet } from '../../native/index.ts';
import type { Message } from '../../broker/message.ts';
import type { AuthResult, Authorizer, ClientIdentity } from '../../auth/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { hashString } from '../../protocol/client-hash.ts';
import * as send from '../../protocol/send.ts';
import { NEVER_EXPIRES } from '../../store/types.ts';
import type { Session, Will } from '../session/session.ts';
import { setReadChecked } from '../session/subscriptions.ts';
import { subscribeScope } from '../../auth/acl-scope.ts';
import type { Opening } from '../session/session-lifecycle.ts';
import { applyProxySubscriptions } from '../session/proxy-subscriptions.ts';
import { EV } from '../session/events.ts';
import type { Client, HandlerHost, HandlerResult, TopicRewrite } from './client.ts';
import { limiterFor } from './throttle.ts';
import { beginExchange } from './auth.ts';

/** The authorizer of endpoints with enableAcl off. */
const ALLOW_ALL: Authorizer = { allowsEverything: true, authorize: () => true };

/** What one CONNECT carries from stage to stage. */
interface Connecting {
  readonly p: Packet;
  readonly version: send.Version;
  readonly clientId: string;
  readonly assigned: boolean;
  readonly clean: boolean;
  readonly method: string | undefined;
  readonly startedAt: number;
  refuse(reason: number, why?: 'not_authorized' | 'protocol_error', props?: ConnackProperties): void;
}

/**
 * CONNECT in three stages: checks and authentication, then the session (its previous owner may
 * be another worker), then storing a persistent session; then CONNACK. Each stage goes on at once
 * when it has nothing to wait for (anonymous or certificate authentication, a client id nobody
 * holds, a session that is not stored), so a plain CONNECT is handled without a Promise and the
 * connection never pauses reading for it.
 */
export function handleConnect(host: HandlerHost, c: Client, p: Packet): HandlerResult {
  const startedAt = performance.now();
  if (c.state !== 'new') {
    // [MQTT-3.1.0-2] a second CONNECT is a protocol violation.
    c.protocolError(RC.PROTOCOL_ERROR, 'second CONNECT');
    return;
  }
  c.state = 'connecting';
  const version = p.protocolVersion as send.Version;
  c.version = version;
  const limits = host.config.limits;
  const props = p.properties ?? {};
  const clean = p.clean ?? true;

  const refuse = (reason: number, why: 'not_authorized' | 'protocol_error' = 'protocol_error', refusalProps?: ConnackProperties) => {
    c.endpoint.stats.connectionError(`0x${reason.toString(16).padStart(2, '0')}`);
    c.write(send.connack(version, false, reason, refusalProps));
    c.close(why);
  };

  // An overloaded worker (src/features/overload) takes no new client: 0x89 Server busy (v3:
  // 3 Server unavailable, send.connack maps it); those connected keep working.
  if (host.overload.refusing) {
    host.overload.refused++;
    refuse(RC.SERVER_BUSY);
    return;
  }

  // Client identifier [MQTT-3.1.3-6 .. MQTT-3.1.3-9].
  let clientId = p.clientId ?? '';
  let assigned = false;
  if (clientId === '') {
    if (version === 3 || (version === 4 && !clean)) {
      refuse(RC.CLIENT_IDENTIFIER_NOT_VALID);
      return;
    }
    clientId = `spindle-${randomBytes(8).toString('hex')}`;
    assigned = true;
  }
  if (clientId.length > limits.maxClientIdLength) {
    refuse(RC.CLIENT_IDENTIFIER_NOT_VALID);
    return;
  }
  c.clientId = clientId;
  c.clientHash = hashString(clientId);
  c.cleanStart = clean;

  // The ban list (and flapping detection), before authentication and before the client takes a
  // place: 0x8A Banned (v5) or 5 Not authorized (v3, send.connack maps it), then close.
  const gate = host.gate;
  if (gate.active && gate.refuses(clientId, p.username ?? undefined, c) !== null) {
    refuse(RC.BANNED, 'not_authorized');
    return;
  }

  // The endpoint's connection limit, across every worker: 0x97 Quota Exceeded (v5) or 0x03
  // Server Unavailable (v3) [MQTT-3.2.2-6: the server then closes the connection].
  const endpoint = c.endpoint;
  if (!host.endpointCounters.tryConnection(endpoint.slot, endpoint.config.maxConnectionSize)) {
    refuse(RC.QUOTA_EXCEEDED); // v3: 0x03 Server Unavailable (send.connack maps it)
    return;
  }
  c.countedOnEndpoint = true;

  // Enhanced authentication: only registered methods [MQTT-4.12.0-1].
  const method = props.authenticationMethod ?? undefined;
  if (method && !host.authMethods.has(method)) {
    refuse(RC.BAD_AUTHENTICATION_METHOD, 'not_authorized');
    return;
  }
  const k: Connecting = { p, version, clientId, assigned, clean, method, startedAt, refuse };

  // An address locked out after too many failed authentications is refused before any check.
  const failures = host.authFailures;
  if (endpoint.config.enableAuth && failures !== null && !failures.quiet() && failures.locked(c.remoteAddress)) {
    host.stats.authLockedOut++;
    endpoint.stats.authFailed++;
    refuse(RC.BANNED, 'not_authorized');
    return;
  }

  // The endpoint's OCSP check of client certificates (sslConfig.ocspClientCheck): a revoked or
  // unknown certificate is refused (0x87 Not authorized, v3: 5), and so is any when its
  // responder cannot tell and the check fails closed (0x88 Server unavailable, v3: 3).
  const certificateCheck = endpoint.certificateCheck;
  if (certificateCheck) {
    const verdict = certificateCheck.check(c);
    if (verdict instanceof Promise) {
      return verdict.then((rc) => {
        if (c.isClosed()) return;
        if (rc === RC.SUCCESS) return authenticate(host, c, k);
        k.refuse(rc, 'not_authorized');
      });
    }
    if (verdict !== RC.SUCCESS) {
      k.refuse(verdict, 'not_authorized');
      return;
    }
  }
  return authenticate(host, c, k);
}

/** Stage one's end: the credentials (or the endpoint admits everyone). */
function authenticate(host: HandlerHost, c: Client, k: Connecting): HandlerResult {
  const endpoint = c.endpoint;
  const { p, clientId, method, version } = k;
  const props = p.properties ?? {};
  // Enhanced authentication: the exchange runs over AUTH packets (auth.ts), then goes on here.
  if (method) {
    c.authMethod = method;
    if (endpoint.config.enableAuth) {
      const req = { clientId, username: p.username ?? undefined, data: props.authenticationData ?? undefined, remoteAddress: c.remoteAddress, reauthenticating: false };
      return beginExchange(host, c, method, host.authMethods.get(method)!, req, (r, data) => authenticated(host, c, k, r, data));
    }
  }
  // What a balancer's PROXY v2 header said of the client's TLS (undefined without one: at once,
  // for a listener without PROXY protocol).
  const proxy = c.proxy;
  // An endpoint with enableAuth off admits every client without checking credentials (a TLS-PSK
  // identity is still its username).
  const result = !endpoint.config.enableAuth
    ? { ok: true as const, username: c.pskIdentity ?? p.username ?? undefined }
    : host.authenticator.authenticate({
      clientId,
      username: p.username ?? undefined,
      password: p.password ?? undefined,
      // Read when asked: a syscall most authenticators never need.
      get remoteAddress() { return c.remoteAddress; },
      certificateCN: c.certificateCN,
      pskIdentity: c.pskIdentity,
      serverName: proxy?.serverName,
      proxyCertificateCN: proxy?.certificateVerified ? proxy.certificateCN : undefined,
      protocolVersion: version,
    });
  if (result instanceof Promise) return result.then((r) => authenticated(host, c, k, r));
  return authenticated(host, c, k, result);
}

/** Stage two: the client is who it says (or not); its limits; its session. `authData`: the
 * last Authentication Data of an enhanced-authentication exchange, for the CONNACK. */
function authenticated(host: HandlerHost, c: Client, k: Connecting, result: AuthResult, authData?: Buffer): HandlerResult {
  if (c.isClosed()) return; // the socket went away while we waited
  const { p, version, clientId, clean } = k;
  const props = p.properties ?? {};
  const limits = host.config.limits;
  const endpoint = c.endpoint;
  if (!result.ok && result.reason === 'unavailable') {
    // Nobody could decide (the policy chain did not answer in time): not the client's failure.
    k.refuse(RC.SERVER_UNAVAILABLE);
    return;
  }
  if (!result.ok) {
    host.stats.authFailed++;
    endpoint.stats.authFailed++;
    if (host.authFailures !== null && host.authFailures.failed(c.remoteAddress)) {
      host.stats.authLockouts++;
      host.log.warn('source address locked out after failed authentications', { address: c.remoteAddress, clientId });
    }
    const code = result.reason === 'bad_credentials' ? RC.BAD_USER_NAME_OR_PASSWORD : result.reason === 'banned' ? RC.BANNED : RC.NOT_AUTHORIZED;
    // A refused exchange may say why in its method's terms (SCRAM: e=invalid-proof).
    k.refuse(code, 'not_authorized', authData === undefined ? undefined : { authenticationMethod: k.method, authenticationData: authData });
    return;
  }
  const tenant = result.tenant;
  c.username = result.username ?? p.username ?? undefined;
  c.identity = tenant !== undefined
    ? { clientId, username: c.username, superuser: false, acl: result.acl, tenant }
    : result.superuser === true || result.acl !== undefined
    ? { clientId, username: c.username, superuser: result.superuser === true, acl: result.acl }
    : { clientId, username: c.username };
  if (result.rateLimit !== undefined) c.identity.rateLimit = result.rateLimit;
  // The client's inbound rate limit (its own or its endpoint's, and the endpoint's total).
  c.limiter = limiterFor(c, host.endpointCounters.totals, Date.now());
  // An endpoint with enableAcl off lets its clients publish and subscribe to every topic; a
  // tenant's client stays in its namespace everywhere.
  c.authorizer = endpoint.config.enableAcl || tenant !== undefined ? host.authorizerFor(c.identity, peerhostOf(c)) : ALLOW_ALL;

  // The limits the client asked for [MQTT-3.1.2-* properties].
  if (version === 5) {
    c.receiveMaximum = props.receiveMaximum ?? 65535;
    c.maxPacketSize = props.maximumPacketSize ?? c.maxPacketSize;
    c.aliasMaxOut = props.topicAliasMaximum ?? 0;
  }
  let expiry: number;
  if (version === 5) expiry = props.sessionExpiryInterval ?? 0;
  else expiry = clean ? 0 : NEVER_EXPIRES;
  const cappedExpiry = Math.min(expiry, limits.maxSessionExpiry);

  let keepalive = p.keepalive ?? 0;
  let serverKeepAlive: number | undefined;
  if (limits.maxKeepalive > 0 && (keepalive > limits.maxKeepalive || (keepalive === 0 && version === 5))) {
    // [MQTT-3.2.2-21] the client must use the Server Keep Alive we answer with (v5 only;
    // a v3 client is held to the cap when it asked for more than it).
    keepalive = limits.maxKeepalive;
    serverKeepAlive = keepalive;
  }

  // The endpoint's session limit counts sessions it created; resuming one takes no new place.
  const maxSessions = endpoint.config.maxSessionSize;
  let sessionSlotTaken = false;
  if (clean || !host.sessions.known(clientId)) {
    if (!host.endpointCounters.trySession(endpoint.slot, maxSessions)) {
      k.refuse(RC.QUOTA_EXCEEDED); // v3: 0x03 Server Unavailable (send.connack maps it)
      return;
    }
    sessionSlotTaken = true;
  }
  // Retain, wildcard subscriptions, subscription identifiers and shared subscriptions are
  // available: the default when CONNACK does not say (MQTT 5.0 section 3.2.2.3), so it does not,
  // and stays within small client Maximum Packet Sizes [MQTT-3.1.2-24].
  const connackProps: ConnackProperties = {
    receiveMaximum: limits.receiveMaximum === 65535 ? undefined : limits.receiveMaximum,
    maximumPacketSize: c.endpointMaxPacket,
    topicAliasMaximum: limits.topicAliasMaximum || undefined,
    assignedClientIdentifier: k.assigned ? clientId : undefined,
    serverKeepAlive,
    sessionExpiryInterval: cappedExpiry !== expiry ? cappedExpiry : undefined,
    authenticationMethod: k.method,
    authenticationData: authData,
  };
  const next = (opening: Opening | null) => opened(host, c, k, opening, sessionSlotTaken, keepalive, connackProps);
  const opening = host.sessions.open(c, clientId, c.username, clean, cappedExpiry);
  if (opening instanceof Promise) return opening.then(next);
  return next(opening);
}

/** Stage three: the session is open; a persistent one is stored before CONNACK. */
function opened(host: HandlerHost, c: Client, k: Connecting, opening: Opening | null, sessionSlotTaken: boolean, keepalive: number, props: ConnackProperties): HandlerResult {
  const endpoint = c.endpoint;
  if (opening === null) {
    if (sessionSlotTaken) host.endpointCounters.releaseSession(endpoint.slot);
    if (!c.isClosed()) k.refuse(RC.SERVER_UNAVAILABLE);
    return;
  }
  // A tenant's client (control platform) counts against its licence's connections, on every
  // worker: 0x97 Quota Exceeded (v5) or 0x03 Server Unavailable (v3) past it. Counted once the
  // session is open: a connection it took over has given its place back by then.
  const tenant = c.identity.tenant;
  if (tenant !== undefined && !c.isClosed() && !tenant.connect()) {
    if (sessionSlotTaken) host.endpointCounters.releaseSession(endpoint.slot);
    k.refuse(RC.QUOTA_EXCEEDED);
    opening.abandon();
    return;
  }
  const session = opening.session;
  if (sessionSlotTaken) {
    if (opening.present || session.endpointSlot >= 0) host.endpointCounters.releaseSession(endpoint.slot);
    else session.endpointSlot = endpoint.slot;
  }
  if (c.isClosed()) {
    opening.abandon();
    return;
  }
  c.session = session;
  session.identity = c.identity;
  markReadChecks(c, session);
  if (k.p.will) session.will = willOf(k.p.will, k.version, host.rewrite.current, c.identity);
  // A persistent session exists for the client only once it is stored.
  const saved = host.persistence?.sessionConnected(session);
  if (saved === undefined) {
    connected(host, c, opening, k, keepalive, props);
    return;
  }
  return saved.then(() => {
    if (c.isClosed()) opening.abandon();
    else connected(host, c, opening, k, keepalive, props);
  }, (err: unknown) => {
    host.log.error('session could not be stored; CONNECT refused', { clientId: k.clientId, err });
    k.refuse(RC.SERVER_UNAVAILABLE);
    opening.abandon();
  });
}

type ConnackProperties = NonNullable<Parameters<typeof send.connack>[3]>;

/** CONNACK, then the session's traffic: what was in flight and queued, and the proxy
 * subscriptions. */
function connected(host: HandlerHost, c: Client, opening: Opening, k: Connecting, keepalive: number, props: ConnackProperties): void {
  const version = k.version;
  const frame = send.connack(version, opening.present, RC.SUCCESS, version === 5 ? props : undefined);
  if (frame.length > c.maxPacketSize) {
    // Even without optional properties the CONNACK is larger than the client accepts
    // [MQTT-3.1.2-24]: the connection cannot go on.
    host.log.debug('CONNACK larger than the client\'s Maximum Packet Size', { clientId: c.clientId, size: frame.length, max: c.maxPacketSize });
    c.close('packet_too_large');
    opening.abandon();
    return;
  }
  c.write(frame);
  c.onConnected(keepalive);
  opening.attach();
  c.endpoint.stats.timed('connect', k.startedAt);
  if (host.events.wants[EV.CONNECT]) {
    host.events.emit('CONNECT', {
      clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, proto_ver: version, keepalive,
      clean_start: c.cleanStart, session_present: opening.present, expiry_interval: opening.session.expiryInterval, timestamp: Date.now(),
    });
  }
  // Subscriptions the operator adds to every client (admin API proxy subscriptions).
  applyProxySubscriptions(host.proxies, opening.session);
}

/**
 * A resumed session's subscriptions were granted to an earlier connection, maybe to another
 * identity or under other rules: what this client's ACL lets each read is asked again. A sync
 * answer applies now; one from the policies keeps the subscription checked until it comes.
 */
function markReadChecks(c: Client, session: Session): void {
  session.readHold = null;
  if (session.subscriptionCount === 0) return;
  for (const entry of session.subscriptions.values()) {
    const scope = subscribeScope(c.authorizer, c.identity, entry.filter);
    if (typeof scope === 'string') {
      setReadChecked(session, entry, scope !== 'all');
      continue;
    }
    setReadChecked(session, entry, true);
    scope.then((s) => {
      if (c.session === session && session.subscriptions.get(entry.filter) === entry) setReadChecked(session, entry, s !== 'all');
    }, () => undefined);
  }
}

/** The client's address when a policy asks. Made here, not inline in the handler: a closure
 * keeps its whole scope alive, and the handler's scope holds the CONNECT packet and its state
 * (about 1 KB per connection for as long as the client stays). */
function peerhostOf(c: Client): () => string {
  return () => c.remoteAddress;
}

function willOf(w: NonNullable<Packet['will']>, version: send.Version, rewrite: TopicRewrite, who: ClientIdentity): Will {
  // Topic rewrite (src/features/rewrite): the will is published, and checked, as rewritten.
  const topic = rewrite.active ? rewrite.publish(w.topic, who) : w.topic;
  const message: Message = {
    topic,
    topicBytes: Buffer.from(topic, 'utf8'),
    payload: Buffer.from(w.payload),
    qos: w.qos as 0 | 1 | 2,
    retain: w.retain,
    props: send.forwardedProperties(w.properties),
    // Set when the will is published: its expiry counts from then (see wills.ts).
    expiresAt: 0,
    receivedAt: Date.now(),
    storeId: undefined,
    seq: undefined,
  };
  return {
    message,
    delay: version === 5 ? w.properties?.willDelayInterval ?? 0 : 0,
    expiryInterval: w.properties?.messageExpiryInterval ?? 0,
  };
}
