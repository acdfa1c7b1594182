// handle_connect: validates a CONNECT, authenticates, opens or resumes the session (also when
// its previous owner is another worker), and answers CONNACK.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type { Packet } from '../native/index.ts';
import type { Connection } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import * as send from '../protocol/send.ts';
import { NEVER_EXPIRES } from '../session/session.ts';
import type { Message } from '../broker/message.ts';
import { applyProxySubscriptions } from '../session/server-subscriptions.ts';
import type { Authorizer } from '../auth/index.ts';

/** The authorizer of endpoints with enableAcl off. */
const ALLOW_ALL: Authorizer = { allowsEverything: true, authorize: () => true };

export async function handleConnect(conn: Connection, p: Packet): Promise<void> {
  const startedAt = performance.now();
  const ctx = conn.ctx;
  if (conn.state !== 'new') {
    // [MQTT-3.1.0-2] a second CONNECT is a protocol violation.
    conn.protocolError(RC.PROTOCOL_ERROR, 'second CONNECT');
    return;
  }
  conn.state = 'connecting';
  const version = p.protocolVersion as send.Version;
  conn.version = version;
  const limits = ctx.config.limits;
  const props = p.properties ?? {};
  const clean = p.clean ?? true;

  const refuse = (reason: number, why: 'not_authorized' | 'protocol_error' = 'protocol_error') => {
    conn.endpoint.stats.connectionError(`0x${reason.toString(16).padStart(2, '0')}`);
    conn.write(send.connack(version, false, reason));
    conn.close(why);
  };

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
  conn.clientId = clientId;
  conn.clientHash = hashString(clientId);
  conn.cleanStart = clean;

  // The endpoint's connection limit, across every worker: 0x97 Quota Exceeded (v5) or 0x03
  // Server Unavailable (v3) [MQTT-3.2.2-6: the server then closes the connection].
  const endpoint = conn.endpoint;
  if (!ctx.endpointCounters.tryConnection(endpoint.slot, endpoint.config.maxConnectionSize)) {
    refuse(RC.QUOTA_EXCEEDED); // v3: 0x03 Server Unavailable (send.connack maps it)
    return;
  }
  conn.countedOnEndpoint = true;

  // Enhanced authentication: only registered methods [MQTT-4.12.0-1].
  const method = props.authenticationMethod;
  if (method && !ctx.authMethods.has(method)) {
    refuse(RC.BAD_AUTHENTICATION_METHOD, 'not_authorized');
    return;
  }

  // An endpoint with enableAuth off admits every client without checking credentials.
  const result = !endpoint.config.enableAuth
    ? { ok: true as const, username: p.username ?? undefined }
    : method
    ? await ctx.authMethods.get(method)!.authenticate({ clientId, username: p.username ?? undefined, data: props.authenticationData ?? undefined })
    : await ctx.authenticator.authenticate({
      clientId,
      username: p.username ?? undefined,
      password: p.password ?? undefined,
      remoteAddress: conn.transport.remoteAddress,
      certificateCN: conn.transport.certificateCN,
      protocolVersion: version,
    });
  if (conn.isClosed()) return; // the socket went away while we waited
  if (!result.ok) {
    ctx.stats.authFailed++;
    conn.endpoint.stats.authFailed++;
    refuse(result.reason === 'bad_credentials' ? RC.BAD_USER_NAME_OR_PASSWORD : result.reason === 'banned' ? RC.BANNED : RC.NOT_AUTHORIZED, 'not_authorized');
    return;
  }
  conn.username = result.username ?? p.username ?? undefined;
  conn.identity = { clientId, username: conn.username };
  // An endpoint with enableAcl off lets its clients publish and subscribe to every topic.
  conn.authorizer = endpoint.config.enableAcl ? ctx.authorizerFor(conn.identity) : ALLOW_ALL;

  // The limits the client asked for [MQTT-3.1.2-* properties].
  if (version === 5) {
    conn.sendQuota = props.receiveMaximum ?? 65535;
    conn.maxOutgoingPacket = props.maximumPacketSize ?? conn.maxOutgoingPacket;
    conn.aliasMaxOut = props.topicAliasMaximum ?? 0;
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
  const newSession = clean || !ctx.sessions.known(clientId);
  let sessionSlotTaken = false;
  if (newSession) {
    if (!ctx.endpointCounters.trySession(endpoint.slot, maxSessions)) {
      refuse(RC.QUOTA_EXCEEDED); // v3: 0x03 Server Unavailable (send.connack maps it)
      return;
    }
    sessionSlotTaken = true;
  }
  const opened = await ctx.sessions.open(conn, clientId, clean, cappedExpiry);
  const session = opened.session;
  if (sessionSlotTaken) {
    if (opened.present || session.endpointSlot >= 0) ctx.endpointCounters.releaseSession(endpoint.slot);
    else session.endpointSlot = endpoint.slot;
  }
  if (conn.isClosed()) return;
  if (p.will) session.will = { message: willMessage(p.will), delay: version === 5 ? p.will.properties?.willDelayInterval ?? 0 : 0 };
  // A persistent session exists for the client only once it is stored.
  const saved = ctx.persistence?.sessionConnected(session);
  if (saved) {
    try {
      await saved;
    } catch (err) {
      ctx.log.error('session could not be stored; CONNECT refused', { clientId, err });
      refuse(RC.SERVER_UNAVAILABLE);
      return;
    }
    if (conn.isClosed()) return;
  }

  const connackProps = version === 5 ? {
    receiveMaximum: limits.receiveMaximum,
    maximumPacketSize: conn.endpointMaxPacket,
    topicAliasMaximum: limits.topicAliasMaximum,
    retainAvailable: true,
    wildcardSubscriptionAvailable: true,
    subscriptionIdentifiersAvailable: true,
    sharedSubscriptionAvailable: true,
    assignedClientIdentifier: assigned ? clientId : undefined,
    serverKeepAlive,
    sessionExpiryInterval: cappedExpiry !== expiry ? cappedExpiry : undefined,
    authenticationMethod: method ?? undefined,
  } : undefined;
  conn.write(send.connack(version, opened.present, RC.SUCCESS, connackProps));
  conn.onConnected(keepalive);
  conn.endpoint.stats.timed('connect', startedAt);
  ctx.sessions.resume(session);
  // Subscriptions the operator adds to every client (admin API proxy subscriptions).
  applyProxySubscriptions(ctx, session);
}

function willMessage(w: NonNullable<Packet['will']>): Message {
  const topicBytes = Buffer.from(w.topic, 'utf8');
  const expiry = w.properties?.messageExpiryInterval;
  return {
    topic: w.topic,
    topicBytes,
    payload: Buffer.from(w.payload),
    qos: w.qos as 0 | 1 | 2,
    retain: w.retain,
    props: send.forwardedProperties(w.properties),
    // The will's expiry counts from when it is published; kept relative until then.
    expiresAt: expiry ? -expiry : 0,
    receivedAt: Date.now(),
  };
}

/** FNV-1a of a string: the publisher hash for the hash_clientid shared-subscription strategy. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
