// handle_publish: an application message from a client. Works from the framer's descriptor (no
// packet object): resolves the topic alias, checks flow control and authorization, routes, and
// acknowledges. QoS 2 is routed once, when the PUBLISH first arrives; its packet id is kept until
// PUBREL so a resent PUBLISH is acknowledged without being routed again [MQTT-4.3.3-10].
import { DESC_EXPIRY, rewritePublishProperties } from '../native/index.ts';
import type { Connection, HandlerResult } from '../session/connection.ts';
import type { Message } from '../broker/message.ts';
import type { Routed } from '../router/worker-router.ts';
import { RC } from '../protocol/reason-codes.ts';
import { ack, PUBACK, PUBREC } from '../protocol/send.ts';

export function handlePublish(conn: Connection, src: Buffer, d: Uint32Array, o: number): HandlerResult {
  if (conn.state !== 'connected') {
    conn.protocolError(RC.PROTOCOL_ERROR, 'PUBLISH before CONNACK');
    return;
  }
  const ctx = conn.ctx;
  const header = d[o] & 0xff;
  const qos = ((header >> 1) & 3) as 0 | 1 | 2;
  const packetId = d[o + 5];
  const session = conn.session!;

  // Topic, possibly through a topic alias [MQTT-3.3.2-10 .. MQTT-3.3.2-12].
  let topicBytes = src.subarray(d[o + 3], d[o + 3] + d[o + 4]);
  const alias = d[o + 10];
  if (alias !== 0) {
    if (alias > ctx.config.limits.topicAliasMaximum) {
      conn.protocolError(RC.TOPIC_ALIAS_INVALID, 'topic alias above the maximum');
      return;
    }
    if (topicBytes.length === 0) {
      const known = conn.aliasesIn.get(alias);
      if (!known) {
        conn.protocolError(RC.PROTOCOL_ERROR, 'unknown topic alias');
        return;
      }
      topicBytes = known;
    } else {
      conn.aliasesIn.set(alias, Buffer.from(topicBytes));
    }
  }

  ctx.stats.messagesReceived++;
  conn.messagesIn++;
  ctx.stats.publishReceived[qos]++;
  ctx.stats.publishBytesReceived[qos] += d[o + 2];
  conn.endpoint.stats.publishIn(d[o + 2]);

  if (qos === 2) {
    if (session.incomingQos2.has(packetId)) {
      // A resend of a message already routed: acknowledge only.
      conn.write(ack(PUBREC, packetId, conn.version));
      return;
    }
    // [MQTT-3.3.4-8] Receive Maximum: unreleased QoS 2 messages beyond ours are refused.
    if (session.incomingQos2.size >= ctx.config.limits.receiveMaximum) {
      conn.disconnectWith(RC.RECEIVE_MAXIMUM_EXCEEDED, 'receive_maximum_exceeded');
      return;
    }
  }

  const now = Date.now();
  let props: Buffer | null = null;
  if (conn.version === 5 && d[o + 7] > 0) {
    props = src.subarray(d[o + 6], d[o + 6] + d[o + 7]);
    // Topic alias and expiry are set per delivery; the rest is forwarded as it came.
    if (alias !== 0 || d[o] & DESC_EXPIRY) {
      const rest = rewritePublishProperties(props);
      props = rest.length > 0 ? rest : null;
    }
  }
  const topic = topicBytes.toString('utf8');
  const message: Message = {
    topic,
    topicBytes,
    payload: src.subarray(d[o + 8], d[o + 8] + d[o + 9]),
    qos,
    retain: (header & 1) !== 0,
    props,
    expiresAt: d[o] & DESC_EXPIRY ? now + d[o + 11] * 1000 : 0,
    receivedAt: now,
  };
  conn.endpoint.stats.publishStart(message);

  // A topic with more levels than configured: refused like an invalid topic name. (A topic with
  // fewer bytes than the limit cannot have more levels: the count is skipped for most topics.)
  const maxLevels = ctx.config.limits.maxTopicLevels;
  if (topicBytes.length >= maxLevels && levelCount(topic) > maxLevels) {
    if (conn.version === 5) refusePublish(conn, qos, packetId, RC.TOPIC_NAME_INVALID);
    else conn.close('protocol_error');
    return;
  }
  // Clients may not publish to $-topics such as $SYS (MQTT 5.0 section 4.7.2: server-specific).
  if (topic.charCodeAt(0) === 0x24) {
    refusePublish(conn, qos, packetId);
    return;
  }
  if (!conn.authorizer.allowsEverything) {
    const allowed = conn.authorizer.authorize(conn.identity, 'publish', topic);
    if (typeof allowed !== 'boolean') {
      // The decision is not cached yet: the connection holds later packets until it is.
      return allowed.then((ok) => finishPublish(conn, message, packetId, ok));
    }
    finishPublish(conn, message, packetId, allowed);
    return;
  }
  finishPublish(conn, message, packetId, true);
}

function finishPublish(conn: Connection, message: Message, packetId: number, allowed: boolean): void {
  if (conn.state === 'closed') return;
  const ctx = conn.ctx;
  if (!allowed) {
    ctx.stats.aclDenied++;
    ctx.stats.dropped.notAuthorized++;
    conn.endpoint.stats.aclDenied++;
    refusePublish(conn, message.qos, packetId);
    return;
  }
  conn.endpoint.stats.topicsPublished++;
  if (message.qos === 2) conn.session!.incomingQos2.add(packetId); // resends are now duplicates
  if (ctx.persistence === null || (message.qos === 0 && !message.retain && conn.publishChain === null)) {
    // Nothing to keep: route and acknowledge now.
    acknowledge(conn, message, packetId, ctx.router.publish(message, conn.session!.handle, conn.clientHash));
    return;
  }
  // With a store, what must be kept is stored before the message is delivered or acknowledged
  // ("store before you publish": a failed store never produces a delivered message). Storing
  // starts at once (the store keeps one caller's writes in order and commits them in groups);
  // delivery and acknowledgement wait behind the previous message's, so they keep the order the
  // messages arrived in [MQTT-4.6.0-2 .. MQTT-4.6.0-6]. The connection goes on reading.
  let routed: Routed[];
  if (message.qos === 1 && !message.retain && conn.publishChain === null) {
    // Nothing stored unless a persistent session gets it: then this is the plain fast path.
    const done = ctx.router.publishOrRoute(message, conn.session!.handle, conn.clientHash, ctx.persistence.keeps);
    if (typeof done === 'number') {
      acknowledge(conn, message, packetId, done);
      return;
    }
    routed = done;
  } else {
    routed = ctx.router.route(message, conn.session!.handle, conn.clientHash);
  }
  const { stored, finish } = storeFirst(conn, message, packetId, routed);
  const before = conn.publishChain;
  if (before === null && stored === undefined) {
    finish();
    return;
  }
  const gate = before === null ? stored! : stored === undefined ? before : Promise.all([before, stored]);
  chain(conn, gate.then(finish));
}

/** Routes the message and starts storing what must be kept; `finish` delivers and acknowledges
 * once `stored` (undefined: nothing to store) has resolved. */
function storeFirst(conn: Connection, message: Message, packetId: number, routed: Routed[]): { stored: Promise<unknown> | undefined; finish: () => void } {
  const ctx = conn.ctx;
  const persistence = ctx.persistence!;
  const session = conn.session!;
  const waits: Promise<void>[] = [];
  const kept = persistence.messageRouted(message, routed);
  if (kept) waits.push(kept);
  if (message.retain) waits.push(persistence.retained(message));
  if (message.qos === 2) {
    const q2 = persistence.incomingQos2(session, packetId);
    if (q2) waits.push(q2);
  }
  const finish = () => {
    // Stored, so delivered even if the publisher went away meanwhile (it is then not
    // acknowledged: the client sends it again, a duplicate QoS 1 allows and QoS 2 recognises).
    ctx.router.deliverRouted(message, routed);
    acknowledge(conn, message, packetId, routed.length);
  };
  return { stored: waits.length === 0 ? undefined : waits.length === 1 ? waits[0] : Promise.all(waits), finish };
}

/** Appends to the connection's publish pipeline; bounded: reading pauses while it is long. */
function chain(conn: Connection, p: Promise<void>): void {
  const ctx = conn.ctx;
  conn.publishPending++;
  if (conn.publishPending === ctx.config.limits.receiveMaximum) conn.transport.pause();
  const link: Promise<void> = p.then(
    () => settle(conn, link),
    (err: unknown) => {
      settle(conn, link);
      // Not acknowledged, so not lost: the client keeps the message and sends it again.
      ctx.log.error('store failed; message not acknowledged', { clientId: conn.clientId, err });
      conn.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error', 'message could not be stored');
    },
  );
  conn.publishChain = link;
}

function settle(conn: Connection, link: Promise<void>): void {
  conn.publishPending--;
  if (conn.publishChain === link) conn.publishChain = null;
  if (conn.publishPending === conn.ctx.config.limits.receiveMaximum - 1 && conn.state !== 'closed') conn.transport.resume();
}

function acknowledge(conn: Connection, message: Message, packetId: number, matched: number): void {
  conn.endpoint.stats.publishDone(message);
  if (conn.state === 'closed') return;
  if (message.qos === 1) conn.write(ack(PUBACK, packetId, conn.version, matched === 0 ? RC.NO_MATCHING_SUBSCRIBERS : 0));
  else if (message.qos === 2) conn.write(ack(PUBREC, packetId, conn.version, matched === 0 ? RC.NO_MATCHING_SUBSCRIBERS : 0));
}

/** A PUBLISH that is not delivered: v5 acknowledges it with 0x87 [MQTT-3.3.5-2 context]; v3 has
 * no negative acknowledgement, so the message is acknowledged and dropped. */
function refusePublish(conn: Connection, qos: number, packetId: number, reason: number = RC.NOT_AUTHORIZED): void {
  if (qos === 1) conn.write(ack(PUBACK, packetId, conn.version, reason));
  else if (qos === 2) conn.write(ack(PUBREC, packetId, conn.version, reason));
}

export function levelCount(topic: string): number {
  let n = 1;
  for (let i = topic.indexOf('/'); i !== -1; i = topic.indexOf('/', i + 1)) n++;
  return n;
}
