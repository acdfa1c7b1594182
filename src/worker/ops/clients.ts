// Worker operations on the clients, sessions and subscriptions this worker owns, for the admin
// API's connection, topic, session and publish routes. Everything here runs on the worker's own
// thread, so it sees its state between two packets, never in the middle of one.
import { RC } from '../../protocol/reason-codes.ts';
import type { Connection } from '../../engine/connection/connection.ts';
import type { ProxyOrigin } from '../../engine/connection/transport.ts';
import type { Session } from '../../engine/session/session.ts';
import type { Message } from '../../broker/message.ts';
import { withSourceTrace, type MessageTrace } from '../../broker/trace-context.ts';
import { payloadText, isoOrNull } from '../../broker/payload-text.ts';
import { subscribeOnBehalf, removeSubscription, SubscriptionRefused } from '../../engine/session/subscriptions.ts';
import { OpError, connectionOf, type Op, type OpsEnv } from './types.ts';
import type { BatchMessage } from '../messages.ts';
import type { NodeScope } from '../../router/delivery.ts';

const VERSION_NAMES: Record<number, string> = { 3: '3.1', 4: '3.1.1', 5: '5.0' };

/** One connected client, as /mqtt/connection lists it. */
export interface ConnectionInfo {
  clientId: string;
  username: string | null;
  /** The client's address: a PROXY header's source, or the peer. */
  ip: string;
  port: number;
  /** The balancer that sent the PROXY header naming the client (null: none). */
  proxyAddress: string | null;
  connectTime: string;
  lastActivity: string;
  protocolVersion: number;
  endpoint: string;
  endpointPort: number;
  transport: string;
  worker: number;
}

export interface ConnectionFilter {
  clientId?: string;
  username?: string;
  /** The endpoint (listener) port. */
  port?: number;
}

export interface SubscriptionInfo {
  topic: string;
  qos: number;
  noLocal: boolean;
  retainAsPublished: boolean;
  retainHandling: number;
  subscriptionId: number | null;
}

function connectionInfo(conn: Connection, worker: number): ConnectionInfo {
  const t = conn.transport;
  return {
    clientId: conn.clientId,
    username: conn.username ?? null,
    ip: t.remoteAddress,
    port: t.remotePort,
    proxyAddress: t.proxy?.address ?? null,
    connectTime: new Date(conn.connectedAt).toISOString(),
    lastActivity: new Date(conn.lastActivity).toISOString(),
    protocolVersion: conn.version,
    endpoint: conn.endpoint.config.id,
    endpointPort: conn.endpoint.config.port,
    transport: t.kind,
    worker,
  };
}

/** What the PROXY header said, as the admin API shows it (null: none). */
function proxyInfo(p: ProxyOrigin | undefined) {
  if (p === undefined) return null;
  return {
    address: p.address,
    port: p.port,
    version: p.version,
    serverName: p.serverName ?? null,
    ssl: p.ssl,
    certificateCN: p.certificateCN ?? null,
    certificateVerified: p.certificateVerified,
  };
}

function subscriptionInfo(filter: string, options: number, subscriptionId: number): SubscriptionInfo {
  return {
    topic: filter,
    qos: options & 3,
    noLocal: (options & 4) !== 0,
    retainAsPublished: (options & 8) !== 0,
    retainHandling: (options >> 4) & 3,
    subscriptionId: subscriptionId || null,
  };
}

/** Case-insensitive substring match (the admin API's connection filters). */
function contains(value: string | undefined, needle: string | undefined): boolean {
  if (needle === undefined) return true;
  return value !== undefined && value.toLowerCase().includes(needle.toLowerCase());
}

function sessionOf(env: OpsEnv, clientId: string): Session {
  const s = env.sessions.byClientId.get(clientId);
  if (!s) throw new OpError('NOT_FOUND', `client ${clientId} not found`);
  return s;
}

function connectedOf(env: OpsEnv, clientId: string): { session: Session; conn: Connection } {
  const session = sessionOf(env, clientId);
  const conn = connectionOf(session);
  if (!conn || conn.state !== 'connected') throw new OpError('NOT_FOUND', `client ${clientId} is not connected`);
  return { session, conn };
}

function byConnectTime(a: ConnectionInfo, b: ConnectionInfo): number {
  return a.connectTime < b.connectTime ? -1 : a.connectTime > b.connectTime ? 1 : a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0;
}

/** A delivery of a session's queue or window, as /mqtt/session/query shows it. */
function messageRecord(clientId: string, m: Message, d: { qos: number; retain: boolean }, state: string, packetId: number, position: number) {
  // A stored message's id starts with the milliseconds it was stored at (store/persistence.ts).
  const storedAt = m.storeId !== undefined ? Number(m.storeId >> 22n) : 0;
  return {
    id: m.storeId !== undefined ? m.storeId.toString() : state === 'queued' ? `queued-${position}` : `inflight-${packetId}`,
    clientId,
    topic: m.topic,
    qos: d.qos,
    retain: d.retain,
    ...payloadText(m.payload),
    time: isoOrNull(storedAt || m.receivedAt),
    state,
    packetId: packetId || null,
  };
}

export const clientOps = {
  /** Connected clients matching the filter: the total and the first `limit` by connect time. */
  'clients.list'(args: ConnectionFilter & { limit: number }, env) {
    const items: ConnectionInfo[] = [];
    for (const conn of env.connections) {
      if (conn.state !== 'connected') continue;
      if (!contains(conn.clientId, args.clientId) || !contains(conn.username, args.username)) continue;
      if (args.port !== undefined && conn.endpoint.config.port !== args.port) continue;
      items.push(connectionInfo(conn, env.workerId));
    }
    items.sort(byConnectTime);
    return { total: items.length, items: items.slice(0, args.limit) };
  },

  /**
   * Kicks a client. `close`: the connection closes (v5: DISCONNECT 0x98 Administrative action) and
   * the session ends with it, also a persistent one and also when the client is offline; a will
   * goes out now (the connection did not end with a normal DISCONNECT, and the session ended).
   * `down`: only the network connection closes; a persistent session stays, the will goes out
   * (after its delay, as for any lost connection).
   */
  'clients.close'(args: { clientId: string; mode: 'close' | 'down' }, env) {
    if (args.mode === 'down') {
      const { session, conn } = connectedOf(env, args.clientId);
      conn.disconnectWith(RC.ADMINISTRATIVE_ACTION, 'kicked');
      return { clientId: args.clientId, sessionKept: env.sessions.byHandle.get(session.handle) === session };
    }
    const session = sessionOf(env, args.clientId);
    const conn = connectionOf(session);
    const wasConnected = conn !== null && conn.state !== 'closed';
    if (conn && conn.state !== 'closed') {
      // Expiry 0: the session ends as the connection closes, its will (delayed or not) goes out.
      session.expiryInterval = 0;
      conn.disconnectWith(RC.ADMINISTRATIVE_ACTION, 'kicked');
    }
    void env.sessions.end(session, true);
    return { clientId: args.clientId, wasConnected };
  },

  /** Disconnects (0x98 Administrative action) every client of the control platform's
   * application(s): deleted or disabled. Their sessions stay until they expire. */
  'clients.kickTenant'(args: { applicationIds: string[] }, env) {
    const ids = new Set(args.applicationIds);
    let kicked = 0;
    for (const conn of env.connections) {
      const tenant = conn.identity?.tenant;
      if (conn.state === 'closed' || tenant === undefined || !ids.has(tenant.applicationId)) continue;
      conn.disconnectWith(RC.ADMINISTRATIVE_ACTION, 'kicked');
      kicked++;
    }
    return { kicked };
  },

  'clients.runtime'(args: { clientId: string }, env) {
    const session = sessionOf(env, args.clientId);
    const link = connectionOf(session);
    const conn = link?.state === 'connected' ? link : null;
    return {
      clientId: session.clientId,
      username: session.username ?? null,
      worker: env.workerId,
      connected: conn !== null,
      connectedAt: conn ? new Date(conn.connectedAt).toISOString() : null,
      disconnectedAt: conn ? null : isoOrNull(session.disconnectedAt),
      lastActivity: conn ? new Date(conn.lastActivity).toISOString() : null,
      ip: conn?.transport.remoteAddress ?? null,
      port: conn?.transport.remotePort ?? null,
      proxy: proxyInfo(conn?.transport.proxy),
      endpoint: conn?.endpoint.config.id ?? null,
      endpointPort: conn?.endpoint.config.port ?? null,
      // tcp, tls or ws (WebSocket, over TLS when the endpoint has tls: wss).
      transport: conn?.transport.kind ?? null,
      tls: conn ? conn.transport.kind === 'tls' || conn.endpoint.config.sslConfig !== undefined : null,
      clientCertificate: conn ? (conn.transport.peerCertificates()?.length ?? 0) > 0 : null,
      protocolVersion: conn?.version ?? null,
      keepalive: conn?.keepalive ?? null,
      cleanStart: conn?.cleanStart ?? null,
      sessionExpiryInterval: session.expiryInterval,
      persistent: session.expiryInterval > 0,
      inflight: session.inflightCount,
      inflightMax: conn ? Math.min(conn.receiveMaximum, env.config.limits.maxInflight) : env.config.limits.maxInflight,
      queued: session.queuedCount,
      queueMax: env.config.limits.maxQueuedMessages,
      awaitingPubrel: session.incomingQos2.size,
      subscriptions: [...session.subscriptions.values()].map((s) => subscriptionInfo(s.filter, s.options, s.subscriptionId)),
      will: session.will !== null,
      bytesIn: conn?.bytesIn ?? null,
      bytesOut: conn?.bytesOut ?? null,
      messagesIn: conn?.messagesIn ?? null,
      messagesOut: conn?.messagesOut ?? null,
    };
  },

  /** /api/check: the connected client's CONNECT as the broker saw it (never the password). */
  'clients.check'(args: { clientId: string }, env) {
    const { session, conn } = connectedOf(env, args.clientId);
    const will = session.will;
    return {
      clientId: conn.clientId,
      clientIp: conn.transport.remoteAddress,
      clientPort: conn.transport.remotePort,
      proxy: proxyInfo(conn.transport.proxy),
      version: VERSION_NAMES[conn.version] ?? String(conn.version),
      protocolVersion: conn.version,
      keepalive: conn.keepalive,
      cleanSession: conn.cleanStart,
      sessionExpiryInterval: session.expiryInterval,
      auth: { username: conn.username ?? null },
      will: will ? { topic: will.message.topic, qos: will.message.qos, retain: will.message.retain, delay: will.delay, ...payloadText(will.message.payload) } : null,
      endpoint: conn.endpoint.config.id,
      timestamp: new Date(conn.connectedAt).toISOString(),
    };
  },

  /**
   * Publishes a message the admin API was given, as a client's PUBLISH is: what must be kept
   * (retained, QoS 1/2 to persistent sessions) is stored first, then it is delivered. Answers how
   * many subscriptions it went to.
   */
  async 'clients.publish'(args: { topic: string; payload: Uint8Array; qos: 0 | 1 | 2; retain: boolean; props: Uint8Array | null; expiresAt: number; publisher: number; publisherHash: number; clientId?: string }, env) {
    const now = Date.now();
    const message: Message = {
      topic: args.topic,
      topicBytes: Buffer.from(args.topic, 'utf8'),
      payload: Buffer.from(args.payload.buffer, args.payload.byteOffset, args.payload.byteLength),
      qos: args.qos,
      retain: args.retain,
      props: args.props ? Buffer.from(args.props.buffer, args.props.byteOffset, args.props.byteLength) : null,
      expiresAt: args.expiresAt,
      receivedAt: now,
      storeId: undefined,
      seq: undefined,
      trace: undefined,
    };
    // Traced as the client named in the request, else as `api`.
    const tracedAs = args.clientId ?? 'api';
    const tracer = env.otelTraces;
    const t = tracer.originated(tracedAs, message);
    const persistence = env.persistence;
    if (!persistence) {
      const matched = env.router.publish(message, args.publisher, args.publisherHash);
      if (t !== undefined) {
        tracer.routed(t, matched);
        tracer.finished(t, tracedAs, message.topic, message.qos, matched);
      }
      return { matched };
    }
    const routed = env.router.route(message, args.publisher, args.publisherHash);
    if (t !== undefined) tracer.routed(t, routed.length);
    const kept = persistence.messageRouted(message, routed);
    try {
      await Promise.all([kept, message.retain ? persistence.retained(message) : undefined]);
    } catch (err) {
      env.router.discardRouted(routed);
      if (t !== undefined) tracer.finished(t, tracedAs, message.topic, message.qos, 0, 'not_stored');
      throw err;
    }
    env.router.deliverRouted(message, routed);
    if (t !== undefined) tracer.finished(t, tracedAs, message.topic, message.qos, routed.length);
    return { matched: routed.length };
  },

  /**
   * Publishes a batch of messages from an inbound bridge (src/features/commands, src/bridges) in order, as
   * 'clients.publish' does one: what must be kept is stored first, then delivered. Resolves once
   * every message is routed and stored, so the caller may then commit its source's offsets or
   * acknowledge. Answers how many subscriptions each went to. Messages from another node of the
   * cluster (published with its inbound handle) reach only what that node decided (NodeScope);
   * `sharesMissed` counts the shared groups named for them that had no member here.
   */
  async 'clients.publishBatch'(args: { messages: BatchMessage[]; publisher: number; publisherHash: number }, env) {
    const now = Date.now();
    const persistence = env.persistence;
    const matched: number[] = [];
    const waits: Promise<unknown>[] = [];
    const fromNode = env.router.fromCluster(args.publisher);
    const missedBefore = env.router.sharesMissed;
    /** Messages only for sessions some of which are not on this node (yet): by index, those. */
    const absent: { index: number; only: string[] }[] = [];
    for (const [index, m] of args.messages.entries()) {
      let only: Set<number> | null = null;
      if (fromNode && m.only) only = env.sessions.handlesOf(m.only);
      const scope: NodeScope | undefined = fromNode ? { plain: m.plain ?? true, shares: m.shares ?? [], only } : undefined;
      const message: Message = {
        topic: m.topic,
        topicBytes: Buffer.from(m.topic, 'utf8'),
        payload: Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength),
        qos: m.qos,
        retain: m.retain,
        props: withSourceTrace(m.props ? Buffer.from(m.props.buffer, m.props.byteOffset, m.props.byteLength) : null, m),
        expiresAt: m.expiresAt,
        receivedAt: now,
        storeId: undefined,
        seq: undefined,
        origin: fromNode && m.origin ? m.origin : undefined,
        trace: undefined,
      };
      // A traced message from another node: its deliveries here are spans of its trace. Any other
      // (a bridge's, a delayed message's) is traced as a PUBLISH of its `tracedAs` would be.
      let t: MessageTrace | undefined;
      const tracedAs = m.tracedAs ?? 'broker';
      if (fromNode) {
        if (env.otelTraces.enabled) env.otelTraces.fromNode(message);
      } else t = env.otelTraces.originated(tracedAs, message);
      // Named sessions it did not reach: not here yet, or here but their subscriptions not yet
      // routed (a claim's answer being taken on another worker); routed again for them later
      // (a session here that does not match the topic is asked again for nothing, 2 s at most).
      const absentFor = (): void => {
        if (!only || !m.only) return;
        const reached = env.router.onlyReached;
        const missing = m.only.filter((id) => {
          const h = env.sessions.handlesOf([id]);
          return h.size === 0 || ![...h].some((x) => reached.has(x));
        });
        if (missing.length > 0) absent.push({ index, only: missing });
      };
      // The hash_clientid strategy picks by the publisher on the node it published on.
      const hash = fromNode ? m.publisherHash ?? args.publisherHash : args.publisherHash;
      if (!persistence) {
        const n = env.router.publish(message, args.publisher, hash, scope);
        matched.push(n);
        if (t !== undefined) {
          env.otelTraces.routed(t, n);
          env.otelTraces.finished(t, tracedAs, message.topic, message.qos, n);
        }
        absentFor();
        // Forwarded to the node a session moved to: routed here once the cluster has it.
        const forwarded = env.bridges.take(message);
        if (forwarded) waits.push(forwarded);
        continue;
      }
      const routed = env.router.route(message, args.publisher, hash, scope);
      if (t !== undefined) env.otelTraces.routed(t, routed.length);
      absentFor();
      const forwarded = env.bridges.take(message);
      if (forwarded) waits.push(forwarded);
      const kept = persistence.messageRouted(message, routed);
      // A message from another node: its retained side is the cluster's (src/cluster/retained.ts).
      const retained = message.retain && !env.router.fromCluster(args.publisher) ? persistence.retained(message) : undefined;
      matched.push(routed.length);
      const stored = kept && retained ? Promise.all([kept, retained]) : kept ?? retained;
      const delivered = (): void => {
        env.router.deliverRouted(message, routed, args.publisher);
        if (t !== undefined) env.otelTraces.finished(t, tracedAs, message.topic, message.qos, routed.length);
      };
      if (stored) {
        waits.push(stored.then(delivered, (err: unknown) => {
          env.router.discardRouted(routed);
          if (t !== undefined) env.otelTraces.finished(t, tracedAs, message.topic, message.qos, 0, 'not_stored');
          throw err;
        }));
      }
      else delivered();
    }
    const sharesMissed = env.router.sharesMissed - missedBefore;
    await Promise.all(waits);
    return { matched, sharesMissed, absent };
  },

  async 'clients.subscribe'(args: { clientId: string; topic: string; options: number }, env) {
    const session = sessionOf(env, args.clientId);
    try {
      const existed = await subscribeOnBehalf(env.proxies, session, args.topic, args.options, () => env.sessions.owns(session));
      return { clientId: args.clientId, ...subscriptionInfo(args.topic, args.options, 0), replaced: existed };
    } catch (err) {
      if (err instanceof SubscriptionRefused) throw new OpError('INVALID_PARAMETER', `topic: ${err.message}`, 'topic');
      throw err;
    }
  },

  'clients.unsubscribe'(args: { clientId: string; topic: string }, env) {
    const session = sessionOf(env, args.clientId);
    if (!removeSubscription(env.proxies, session, args.topic)) throw new OpError('NOT_FOUND', `client ${args.clientId} has no subscription to ${args.topic}`);
    return { clientId: args.clientId, topic: args.topic };
  },

  /** Every subscribed filter of this worker's client sessions (online or not) with its count. */
  'clients.topics'(_args: unknown, env) {
    const counts = new Map<string, number>();
    for (const s of env.sessions.all()) if (s.subscriptionCount > 0) for (const f of s.subscriptions.keys()) counts.set(f, (counts.get(f) ?? 0) + 1);
    return [...counts];
  },

  /** The sessions of this worker subscribed to exactly `topic`. */
  'clients.subscribers'(args: { topic: string }, env) {
    const out: (SubscriptionInfo & { clientId: string; connected: boolean })[] = [];
    for (const s of env.sessions.all()) {
      const sub = s.subscriptionCount > 0 ? s.subscriptions.get(args.topic) : undefined;
      if (!sub) continue;
      out.push({ clientId: s.clientId, connected: connectionOf(s)?.state === 'connected', ...subscriptionInfo(sub.filter, sub.options, sub.subscriptionId) });
    }
    return out;
  },

  /** A session's messages in flight (oldest first), then those queued: a page of them. */
  'clients.sessionMessages'(args: { clientId: string; offset: number; limit: number }, env) {
    const session = sessionOf(env, args.clientId);
    const total = session.inflightCount + session.queuedCount;
    const items: ReturnType<typeof messageRecord>[] = [];
    let i = 0;
    const end = args.offset + args.limit;
    for (const e of session.inflight.values()) {
      if (i >= end) break;
      if (i++ >= args.offset) items.push(messageRecord(session.clientId, e.message, e, e.state === 'pubrel' ? 'pubrel' : 'inflight', e.packetId, 0));
    }
    let position = 0;
    for (const d of session.queue) {
      if (i >= end) break;
      if (i++ >= args.offset) items.push(messageRecord(session.clientId, d.message, d, 'queued', 0, position));
      position++;
    }
    return { total, items };
  },

  /** Drops a session's queued and in-flight messages, here and in the store. */
  'clients.sessionClear'(args: { clientId: string }, env) {
    const session = sessionOf(env, args.clientId);
    let removed = 0;
    for (const e of session.inflight.values()) {
      env.persistence?.delivered(session, e.message);
      removed++;
    }
    session.inflight.clear();
    for (const d of session.queue.clear()) {
      env.persistence?.delivered(session, d.message);
      removed++;
    }
    return { clientId: args.clientId, removed };
  },
} satisfies Record<string, Op>;
