// handle_publish: an application message from a client. Works from the framer's descriptor (no
// packet object): resolves the topic alias, checks flow control and authorization, routes, and
// acknowledges. QoS 2 is routed once, when the PUBLISH first arrives; its packet id is kept until
// PUBREL so a resent PUBLISH is acknowledged without being routed again [MQTT-4.3.3-10].
import { DESC_EXPIRY, DESC_SLOTS, rewritePublishProperties } from '../../native/index.ts';
import type { Message } from '../../broker/message.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { ack, PUBACK, PUBREC } from '../../protocol/send.ts';
import { tooManyLevels } from '../../protocol/topic-levels.ts';
import { reservedTopic } from '../../protocol/reserved-topics.ts';
import type { Routed } from '../../router/delivery.ts';
import { formatTraceparent, withTraceContext, type MessageTrace } from '../../broker/trace-context.ts';
import { EV } from '../session/events.ts';
import { THROTTLE } from '../../broker/rate-limit.ts';
import { pauseUntil, throttled } from './throttle.ts';
import { PAYLOAD_OFFLOAD, PAYLOAD_REFUSED, type Client, type HandlerHost, type HandlerResult, type TransformDone } from './client.ts';

/** Node's Buffer.prototype.utf8Slice (not in its types): the decoder toString('utf8') calls. */
interface Utf8Slice {
  utf8Slice(start: number, end: number): string;
}

export function handlePublish(host: HandlerHost, c: Client, src: Buffer, d: Uint32Array, o: number): HandlerResult {
  if (c.state !== 'connected') {
    c.protocolError(RC.PROTOCOL_ERROR, 'PUBLISH before CONNACK');
    return;
  }
  // Over a rate limit (the client's, or its endpoint's total on this node): the message waits
  // until the buckets can take it, and the connection reads nothing meanwhile (throttling;
  // nothing is lost). No limit: this one check.
  const now = Date.now();
  const limiter = c.limiter;
  if (limiter !== null) {
    const wait = limiter.admit(d[o + 2], now);
    if (wait !== 0) return throttled(c, limiter.lastKind, wait, src, d, o, DESC_SLOTS, (cc, s, dd, oo) => handlePublish(host, cc, s, dd, oo));
  }
  return publishAdmitted(host, c, src, d, o, now);
}

function publishAdmitted(host: HandlerHost, c: Client, src: Buffer, d: Uint32Array, o: number, now: number): HandlerResult {
  const header = d[o] & 0xff;
  const qos = ((header >> 1) & 3) as 0 | 1 | 2;
  const packetId = d[o + 5];
  const session = c.session!;
  const limits = host.config.limits;

  // Topic, possibly through a topic alias [MQTT-3.3.2-10 .. MQTT-3.3.2-12].
  let topicBytes = src.subarray(d[o + 3], d[o + 3] + d[o + 4]);
  const alias = d[o + 10];
  if (alias !== 0) {
    if (alias > limits.topicAliasMaximum) {
      c.protocolError(RC.TOPIC_ALIAS_INVALID, 'topic alias above the maximum');
      return;
    }
    if (topicBytes.length === 0) {
      const known = c.aliasesIn.get(alias);
      if (!known) {
        c.protocolError(RC.PROTOCOL_ERROR, 'unknown topic alias');
        return;
      }
      topicBytes = known;
    } else {
      c.aliasesIn.set(alias, Buffer.from(topicBytes));
    }
  }

  const stats = host.stats;
  stats.messagesReceived++;
  c.messagesIn++;
  // A tenant over its licence's message rate: the message is taken, and reading pauses until the
  // next second (throttling; nothing is lost).
  const tenant = c.identity.tenant;
  if (tenant !== undefined && !tenant.message(now)) pauseUntil(host, c, THROTTLE.tenant, now, now + 1001 - (now % 1000));
  stats.publishReceived[qos]++;
  stats.publishBytesReceived[qos] += d[o + 2];
  c.endpoint.stats.publishIn(d[o + 2]);

  if (qos === 2) {
    if (session.incomingQos2.has(packetId)) {
      // A resend of a message already routed: acknowledge only.
      c.write(ack(PUBREC, packetId, c.version));
      return;
    }
    // [MQTT-3.3.4-8] Receive Maximum: unreleased QoS 2 messages beyond ours are refused.
    if (session.incomingQos2.size >= limits.receiveMaximum) {
      c.disconnectWith(RC.RECEIVE_MAXIMUM_EXCEEDED, 'receive_maximum_exceeded');
      return;
    }
  }

  let props: Buffer | null = null;
  if (c.version === 5 && d[o + 7] > 0) {
    props = src.subarray(d[o + 6], d[o + 6] + d[o + 7]);
    // Topic alias and expiry are set per delivery; the rest is forwarded as it came.
    if (alias !== 0 || d[o] & DESC_EXPIRY) {
      const rest = rewritePublishProperties(props);
      props = rest.length > 0 ? rest : null;
    }
  }
  // Buffer's utf8Slice, what toString('utf8') calls after checking its arguments: on every
  // PUBLISH one call fewer, and a large candidate fewer for V8's inlining budget of this function
  // (with tracing on it was crowded out and not inlined).
  let topic = (topicBytes as Buffer & Utf8Slice).utf8Slice(0, topicBytes.length);
  // Topic rewrite, before the ACL (src/features/rewrite): one check without rules.
  const rewrite = host.rewrite.current;
  if (rewrite.active) {
    const to = rewrite.publishFrom(c, topic);
    if (to !== topic) {
      topic = to;
      topicBytes = Buffer.from(to);
    }
  }
  const message: Message = {
    topic,
    topicBytes,
    payload: src.subarray(d[o + 8], d[o + 8] + d[o + 9]),
    qos,
    retain: (header & 1) !== 0,
    props,
    expiresAt: d[o] & DESC_EXPIRY ? now + d[o + 11] * 1000 : 0,
    receivedAt: now,
    // Declared here, set later: every Message has the same shape (hidden class) on the hot path.
    storeId: undefined,
    seq: undefined,
    trace: undefined,
  };
  c.endpoint.stats.publishStart(message);

  // A topic with more levels than configured: refused like an invalid topic name.
  if (tooManyLevels(topic, limits.maxTopicLevels)) {
    if (c.version === 5) refusePublish(c, qos, packetId, RC.TOPIC_NAME_INVALID);
    else c.close('protocol_error');
    return;
  }
  // Delayed publish (src/features/delayed): `$delayed/{seconds}/{topic}` is held, not routed.
  if (host.delayed.enabled && topic.charCodeAt(0) === 0x24 && topic.startsWith('$delayed/')) {
    return delayedPublish(host, c, message, packetId, now);
  }
  // Clients may not publish to the broker's own topics ($SYS/; MQTT 5.0 section 4.7.2).
  if (reservedTopic(topic)) {
    refusePublish(c, qos, packetId);
    return;
  }
  // OpenTelemetry traces (src/features/otel-traces): off, this one check; on, a count down and a
  // call only for what may be sampled.
  const tracer = host.tracer;
  if (tracer.enabled && (--tracer.untilSelected <= 0 || message.props !== null || c.traced)) tracer.received(c, message);
  if (!c.authorizer.allowsEverything) {
    const allowed = c.authorizer.authorize(c.identity, 'publish', topic);
    if (typeof allowed !== 'boolean') {
      // The decision is not cached yet: the connection holds later packets until it is.
      return allowed.then((ok) => {
        if (message.trace !== undefined) host.tracer.authorized(message.trace, ok);
        finishPublish(host, c, message, packetId, ok);
      });
    }
    if (message.trace !== undefined) host.tracer.authorized(message.trace, allowed);
    finishPublish(host, c, message, packetId, allowed);
    return;
  }
  finishPublish(host, c, message, packetId, true);
}

function finishPublish(host: HandlerHost, c: Client, message: Message, packetId: number, allowed: boolean): void {
  if (c.state === 'closed') return;
  const trace = message.trace;
  if (!allowed) {
    if (trace !== undefined) host.tracer.finished(trace, c.clientId, message.topic, message.qos, 0, 'not_authorized');
    c.identity.tenant?.denied();
    host.stats.aclDenied++;
    host.stats.dropped.notAuthorized++;
    c.endpoint.stats.aclDenied++;
    if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'not_authorized');
    refusePublish(c, message.qos, packetId);
    return;
  }
  // Schema checks on topic filters: a payload that does not decode is refused. None: this check.
  const check = host.payloadCheck;
  if (check.active) {
    const verdict = check.verdict(message.topic, message.payload, c.version);
    if (verdict === PAYLOAD_REFUSED) {
      refuseInvalidPayload(host, c, message, packetId);
      return;
    }
    if (verdict === PAYLOAD_OFFLOAD) {
      checkOffThenPublish(host, c, message, packetId);
      return;
    }
  }
  publishChecked(host, c, message, packetId);
}

/** An accepted PUBLISH whose payload passed the schema checks (or has none). */
function publishChecked(host: HandlerHost, c: Client, message: Message, packetId: number): void {
  c.endpoint.stats.topicsPublished++;
  if (message.qos === 2) c.session!.incomingQos2.add(packetId); // resends are now duplicates
  if (host.transforms.wants(message.topic)) {
    transformThenPublish(host, c, message, packetId);
    return;
  }
  const before = c.publishChain;
  if (before !== null && host.persistence === null && c.transforming > 0) {
    // Behind a message still with the processors: it is routed and acknowledged first
    // [MQTT-4.6.0-2]. (Behind one only waiting for its acknowledgement, this one is routed now
    // and acknowledged after it: publishAccepted.)
    chain(host, c, before.then(() => asHead(c, () => publishAccepted(host, c, message, packetId))));
    return;
  }
  publishAccepted(host, c, message, packetId);
}

/**
 * Runs `publish` for a message whose turn has come in the connection's pipeline (from a link's
 * callback: every message before it is routed and acknowledged), as if it were the head: it does
 * not queue behind the links of later messages (c.publishChain points at the newest), or its
 * acknowledgement would come after theirs. What it must still wait for (a store, another node)
 * it chains as its own link, which the calling link waits for, and later messages with it.
 */
function asHead(c: Client, publish: () => void): Promise<void> | undefined {
  const later = c.publishChain;
  c.publishChain = null;
  let own: Promise<void> | null = null;
  try {
    publish();
    own = c.publishChain;
  } finally {
    c.publishChain = later;
  }
  return own ?? undefined;
}

/**
 * A large payload held to a schema: decoded on a pool thread of this worker (the schema
 * registry's CheckStage), not here. The message waits in the publish pipeline like one with the
 * processors (`transforming` counts it, so later messages of the connection queue behind it): it
 * is then refused (0x99 on v5 QoS 1/2, else dropped) or published, and acknowledgements and
 * deliveries keep the order messages came in [MQTT-4.6.0-2]. A QoS 2 packet id is taken at once
 * (a resend meanwhile is a duplicate) and freed by a refusal on v5, which ends the exchange.
 */
function checkOffThenPublish(host: HandlerHost, c: Client, message: Message, packetId: number): void {
  c.transforming++;
  if (message.qos === 2) c.session!.incomingQos2.add(packetId);
  const verdict = new Promise<boolean>((resolve) => host.payloadCheck.offload(message.payload, c.version, resolveVerdict, resolve));
  const before = c.publishChain;
  const ready = before === null ? verdict : Promise.all([verdict, before]).then(([refused]) => refused);
  chain(host, c, ready.then((refused) => {
    c.transforming--;
    if (!refused) return asHead(c, () => publishChecked(host, c, message, packetId));
    if (message.trace !== undefined) host.tracer.finished(message.trace, c.clientId, message.topic, message.qos, 0, 'payload_format_invalid');
    if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'payload_format_invalid');
    if (c.state === 'closed') return;
    if (message.qos === 2 && c.version === 5) c.session!.incomingQos2.delete(packetId);
    refusePublish(c, message.qos, packetId, RC.PAYLOAD_FORMAT_INVALID);
    return undefined;
  }));
}

const resolveVerdict = (resolve: (refused: boolean) => void, refused: boolean): void => resolve(refused);

/** A packet id meaning "do not acknowledge": all but the last message a processor made of one. */
const NO_ACK = -1;

/**
 * Scripts and extensions first (off this thread): what they make of the message is published in
 * its place, and the last of it carries the acknowledgement. A message they drop is acknowledged
 * as one no subscriber wanted. Their answers come in the order messages went in, so a QoS 0
 * message with nothing ahead of it in the publish pipeline is published from the answer
 * directly; anything else waits in the pipeline, so acknowledgements keep their order.
 */
function transformThenPublish(host: HandlerHost, c: Client, message: Message, packetId: number): void {
  c.transforming++;
  if (message.trace !== undefined) host.tracer.scriptsStart(message.trace);
  if (message.qos === 0 && c.publishChain === null) {
    // Still counted in the pipeline's bound: a publisher faster than the processors is paused.
    if (++c.publishPending === host.config.limits.receiveMaximum) c.pauseReading();
    host.transforms.transform(message, c.clientId, transformedFor(host), c, packetId);
    return;
  }
  const made = new Promise<Message | Message[] | null>((resolve) => host.transforms.transform(message, c.clientId, resolveWith, resolve, 0));
  const before = c.publishChain;
  const ready = before === null ? made : Promise.all([made, before]).then(([m]) => m);
  chain(host, c, ready.then((out) => {
    c.transforming--;
    return asHead(c, () => publishOutputs(host, c, message, packetId, out));
  }));
}

const resolveWith: TransformDone<(out: Message | Message[] | null) => void> = (resolve, _tag, _m, out) => resolve(out);

/** Per worker, the one function the processors answer QoS 0 messages with. */
const transformed = new WeakMap<HandlerHost, TransformDone<Client>>();
function transformedFor(host: HandlerHost): TransformDone<Client> {
  let done = transformed.get(host);
  if (done === undefined) {
    done = (c, packetId, message, out) => {
      c.transforming--;
      settle(c, null, host.config.limits.receiveMaximum);
      publishOutputs(host, c, message, packetId, out);
    };
    transformed.set(host, done);
  }
  return done;
}

function publishOutputs(host: HandlerHost, c: Client, message: Message, packetId: number, out: Message | Message[] | null): void {
  if (message.trace !== undefined) traceOutputs(host, message.trace, out);
  if (out === null || (Array.isArray(out) && out.length === 0)) {
    if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'dropped_by_processor');
    acknowledge(host, c, message, packetId, -1);
    return;
  }
  if (!Array.isArray(out)) {
    publishAccepted(host, c, out, packetId);
    return;
  }
  for (let i = 0; i < out.length; i++) publishAccepted(host, c, out[i], i === out.length - 1 ? packetId : NO_ACK);
  c.endpoint.stats.publishDone(message);
}

/** What the processors made of a traced message is traced on: the same trace, and the broker's
 * traceparent in what MQTT 5 subscribers receive. */
function traceOutputs(host: HandlerHost, t: MessageTrace, out: Message | Message[] | null): void {
  const made = out === null ? [] : Array.isArray(out) ? out : [out];
  host.tracer.scripts(t, made.length);
  for (const m of made) {
    if (m.trace === t) continue;
    m.trace = t;
    m.props = withTraceContext(m.props, formatTraceparent(t.traceId, t.spanId), t.tracestate);
  }
}

/** Routes (storing first what must be kept) and acknowledges an accepted message. */
function publishAccepted(host: HandlerHost, c: Client, message: Message, packetId: number): void {
  // Topic metrics (src/features/topic-metrics): one check without filters.
  if (host.topics.on) host.topics.received(message.topic, message.qos, message.payload.length);
  const trace = message.trace;
  if (message.retain && host.router.retainLimited) {
    const refusal = host.router.retainRefusal(message);
    if (refusal !== null) {
      if (trace !== undefined) host.tracer.finished(trace, c.clientId, message.topic, message.qos, 0, `retained_${refusal}`);
      refuseRetained(host, c, message, packetId, refusal);
      return;
    }
  }
  if (trace !== undefined) host.tracer.routing(trace);
  const persistence = host.persistence;
  if (persistence === null || (message.qos === 0 && !message.retain && c.publishChain === null)) {
    // Nothing to keep: route and acknowledge now (or once accepted elsewhere).
    const matched = host.router.publish(message, c.session!.handle, c.clientHash);
    if (trace !== undefined) host.tracer.routed(trace, matched);
    acknowledgeRouted(host, c, message, packetId, matched);
    return;
  }
  // With a store, what must be kept is stored before the message is delivered or acknowledged
  // ("store before you publish": a failed store never produces a delivered message). Storing
  // starts at once (the store keeps one caller's writes in order and commits them in groups);
  // delivery and acknowledgement wait behind the previous message's, so they keep the order the
  // messages arrived in [MQTT-4.6.0-2 .. MQTT-4.6.0-6]. The connection goes on reading.
  let routed: Routed[];
  if (message.qos === 1 && !message.retain && c.publishChain === null) {
    // Nothing stored unless a persistent session gets it: then this is the plain fast path.
    const done = host.router.publishOrRoute(message, c.session!.handle, c.clientHash, persistence.keeps);
    if (typeof done === 'number') {
      if (trace !== undefined) host.tracer.routed(trace, done);
      acknowledgeRouted(host, c, message, packetId, done);
      return;
    }
    routed = done;
  } else {
    routed = host.router.route(message, c.session!.handle, c.clientHash);
  }
  if (trace !== undefined) host.tracer.routed(trace, routed.length);
  const { stored, finish } = storeFirst(host, c, message, packetId, routed);
  const before = c.publishChain;
  if (before === null && stored === undefined) {
    finish();
    return;
  }
  const gate = before === null ? stored! : stored === undefined ? before : Promise.all([before, stored]);
  chain(host, c, gate.then(finish, (err: unknown) => {
    host.router.discardRouted(routed);
    host.router.releaseRetained(message);
    throw err;
  }));
}

/** Starts storing what must be kept of a routed message; `finish` delivers and acknowledges once
 * `stored` (undefined: nothing to store) has resolved. */
function storeFirst(host: HandlerHost, c: Client, message: Message, packetId: number, routed: Routed[]): { stored: Promise<unknown> | undefined; finish: () => void } {
  const persistence = host.persistence!;
  const session = c.session!;
  const waits: Promise<void>[] = [];
  // Accepted by the cluster's other nodes it crossed to (QoS 1/2): waited for like a store.
  const elsewhere = message.qos > 0 ? host.ackGates.take(message) : undefined;
  if (elsewhere) waits.push(elsewhere);
  const kept = persistence.messageRouted(message, routed);
  if (kept) waits.push(kept);
  if (message.retain) waits.push(persistence.retained(message));
  if (message.qos === 2 && packetId !== NO_ACK) {
    const q2 = persistence.incomingQos2(session, packetId);
    if (q2) waits.push(q2);
  }
  const finish = () => {
    // Stored, so delivered even if the publisher went away meanwhile (it is then not
    // acknowledged: the client sends it again, a duplicate QoS 1 allows and QoS 2 recognises).
    host.router.deliverRouted(message, routed);
    acknowledge(host, c, message, packetId, routed.length);
  };
  return { stored: waits.length === 0 ? undefined : waits.length === 1 ? waits[0] : Promise.all(waits), finish };
}

/** Acknowledges a message already routed and delivered: at once, or, when it must first be
 * accepted elsewhere (another node of the cluster), behind that and the messages before it. */
function acknowledgeRouted(host: HandlerHost, c: Client, message: Message, packetId: number, matched: number): void {
  const elsewhere = message.qos > 0 ? host.ackGates.take(message) : undefined;
  const before = c.publishChain;
  if (elsewhere === undefined && before === null) {
    acknowledge(host, c, message, packetId, matched);
    return;
  }
  const gate = before === null ? elsewhere! : elsewhere === undefined ? before : Promise.all([before, elsewhere]);
  chain(host, c, gate.then(() => acknowledge(host, c, message, packetId, matched)));
}

/** Appends to the connection's publish pipeline; bounded: reading pauses while it is long. */
function chain(host: HandlerHost, c: Client, p: Promise<void>): void {
  const max = host.config.limits.receiveMaximum;
  c.publishPending++;
  if (c.publishPending === max) c.pauseReading();
  const link: Promise<void> = p.then(
    () => settle(c, link, max),
    (err: unknown) => {
      settle(c, link, max);
      // Not acknowledged, so not lost: the client keeps the message and sends it again.
      host.log.error('message not stored or not accepted by another node; not acknowledged', { clientId: c.clientId, err });
      c.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error', 'message could not be stored or handed to another node');
    },
  );
  c.publishChain = link;
}

function settle(c: Client, link: Promise<void> | null, max: number): void {
  c.publishPending--;
  if (c.publishChain === link) c.publishChain = null;
  if (c.publishPending === max - 1 && c.state !== 'closed' && c.throttledUntil === 0 && !c.heldByRules) c.resumeReading();
}

/** $EVENT.DROP for a message of this client that goes nowhere. */
function dropEvent(host: HandlerHost, c: Client, m: Message, reason: string): void {
  host.events.emit('DROP', { reason, clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, timestamp: Date.now(), publish_received_at: m.receivedAt });
}

/** Counts the message handled and acknowledges it: `matched` subscriptions got it (-1: a
 * processor dropped it, acknowledged like no subscriber). */
function acknowledge(host: HandlerHost, c: Client, message: Message, packetId: number, matched: number): void {
  if (matched === 0) {
    if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'no_subscribers');
    if (host.topics.on) host.topics.dropped(message.topic);
  }
  if (message.trace !== undefined) host.tracer.finished(message.trace, c.clientId, message.topic, message.qos, matched);
  c.endpoint.stats.publishDone(message);
  if (c.state === 'closed' || packetId === NO_ACK) return;
  const reason = matched <= 0 ? RC.NO_MATCHING_SUBSCRIBERS : 0;
  if (message.qos === 1) c.write(ack(PUBACK, packetId, c.version, reason));
  else if (message.qos === 2) c.write(ack(PUBREC, packetId, c.version, reason));
}

/**
 * A retained PUBLISH past a retained-message limit is not accepted: neither retained nor
 * delivered, so what a publisher is told holds for every subscriber. MQTT 5 QoS 1/2 get
 * 0x97 Quota exceeded (0x95 Packet too large is no PUBACK/PUBREC code: a payload past
 * limits.maxRetainedPayloadSize gets 0x97 too); a failed PUBREC ends a QoS 2 exchange, so its
 * packet id is free again. QoS 0 and MQTT 3.1.1 cannot be told: the message is dropped and, for
 * 3.1.1 QoS 1/2, acknowledged [MQTT-3.3.5-2]. Counted, and a DROP event. The acknowledgement
 * waits behind those of earlier messages [MQTT-4.6.0-2].
 */
function refuseRetained(host: HandlerHost, c: Client, message: Message, packetId: number, refusal: 'count' | 'size'): void {
  host.stats.retainedRefused[refusal]++;
  if (host.events.wants[EV.DROP]) dropEvent(host, c, message, refusal === 'count' ? 'retained_quota_exceeded' : 'retained_payload_too_large');
  if (packetId === NO_ACK) return;
  const refuse = () => {
    if (c.state === 'closed') return;
    if (message.qos === 2 && c.version === 5) c.session!.incomingQos2.delete(packetId);
    refusePublish(c, message.qos, packetId, RC.QUOTA_EXCEEDED);
  };
  const before = c.publishChain;
  if (before === null) refuse();
  else chain(host, c, before.then(refuse));
}

/**
 * A PUBLISH whose payload a schema check refused (counted by the check): v5 QoS 1/2 get 0x99
 * Payload format invalid; QoS 0 and MQTT 3.1.1 cannot be told, so the message is dropped (3.1.1
 * QoS 1/2 acknowledged). A DROP event. The acknowledgement waits behind those of earlier
 * messages [MQTT-4.6.0-2].
 */
function refuseInvalidPayload(host: HandlerHost, c: Client, message: Message, packetId: number): void {
  if (message.trace !== undefined) host.tracer.finished(message.trace, c.clientId, message.topic, message.qos, 0, 'payload_format_invalid');
  if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'payload_format_invalid');
  refuseInOrder(host, c, message.qos, packetId, RC.PAYLOAD_FORMAT_INVALID);
}

/**
 * A PUBLISH to `$delayed/{seconds}/{topic}`: malformed, refused with 0x90 Topic name invalid (v5
 * QoS 1/2); the publisher's ACL is checked on {topic} now (0x87 when denied); then the message
 * is handed to the main thread, which stores it, and only then acknowledged (0x97 Quota exceeded
 * past delayed.maxMessages, 0x80 when it could not be stored). MQTT 3.1.1 has no negative
 * acknowledgement: a refused QoS 1/2 message is acknowledged and dropped; QoS 0 is dropped. Every
 * refusal is counted. Acknowledgements keep the order the messages came in [MQTT-4.6.0-2].
 */
function delayedPublish(host: HandlerHost, c: Client, message: Message, packetId: number, now: number): HandlerResult {
  const delayed = host.delayed;
  const parsed = delayed.parse(message.topic, now);
  if ('error' in parsed) {
    delayed.refused('invalid');
    if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'delayed_topic_invalid');
    refuseInOrder(host, c, message.qos, packetId, RC.TOPIC_NAME_INVALID);
    return;
  }
  const target = parsed.topic;
  if (reservedTopic(target) || tooManyLevels(target, host.config.limits.maxTopicLevels)) {
    delayed.refused('invalid');
    refuseInOrder(host, c, message.qos, packetId, RC.TOPIC_NAME_INVALID);
    return;
  }
  // Traced as a PUBLISH (its span ends when the message is held); its properties then carry the
  // broker's traceparent, so the release, traced when due, goes on under this span.
  const tracer = host.tracer;
  if (tracer.enabled && (--tracer.untilSelected <= 0 || message.props !== null || c.traced)) tracer.received(c, message);
  const trace = message.trace;
  const accept = (allowed: boolean) => {
    if (c.state === 'closed') return;
    if (trace !== undefined && !c.authorizer.allowsEverything) tracer.authorized(trace, allowed);
    if (!allowed) {
      if (trace !== undefined) tracer.finished(trace, c.clientId, message.topic, message.qos, 0, 'not_authorized');
      delayed.refused('denied');
      host.stats.aclDenied++;
      c.endpoint.stats.aclDenied++;
      if (host.events.wants[EV.DROP]) dropEvent(host, c, message, 'not_authorized');
      refuseInOrder(host, c, message.qos, packetId, RC.NOT_AUTHORIZED);
      return;
    }
    if (message.qos === 2) c.session!.incomingQos2.add(packetId); // resends are now duplicates
    let stored = delayed.accept(message, target, parsed.dueAt, c.identity);
    if (trace !== undefined) {
      stored = stored.then((rc) => {
        if (rc === 0) tracer.held(trace, c.clientId, message.topic, message.qos, parsed.dueAt);
        else tracer.finished(trace, c.clientId, message.topic, message.qos, 0, rc === RC.QUOTA_EXCEEDED ? 'quota_exceeded' : 'not_stored');
        return rc;
      });
    }
    const before = c.publishChain;
    const gate = before === null ? stored : Promise.all([stored, before]).then(([rc]) => rc);
    chain(host, c, gate.then((rc) => {
      c.endpoint.stats.publishDone(message);
      if (c.state === 'closed' || message.qos === 0) return;
      if (rc !== 0 && message.qos === 2) c.session!.incomingQos2.delete(packetId);
      // Held: no subscriber has it yet, but it is accepted (0x00 Success).
      refusePublish(c, message.qos, packetId, rc);
    }));
  };
  if (c.authorizer.allowsEverything) {
    accept(true);
    return;
  }
  const allowed = c.authorizer.authorize(c.identity, 'publish', target);
  if (typeof allowed !== 'boolean') return allowed.then(accept); // later packets wait for it
  accept(allowed);
}

/** refusePublish behind the acknowledgements of earlier messages [MQTT-4.6.0-2]. */
function refuseInOrder(host: HandlerHost, c: Client, qos: number, packetId: number, reason: number): void {
  const refuse = () => {
    if (c.state !== 'closed') refusePublish(c, qos, packetId, reason);
  };
  const before = c.publishChain;
  if (before === null) refuse();
  else chain(host, c, before.then(refuse));
}

/** A PUBLISH that is not delivered: v5 acknowledges it with 0x87 [MQTT-3.3.5-2 context]; v3 has
 * no negative acknowledgement, so the message is acknowledged and dropped. */
function refusePublish(c: Client, qos: number, packetId: number, reason: number = RC.NOT_AUTHORIZED): void {
  if (qos === 1) c.write(ack(PUBACK, packetId, c.version, reason));
  else if (qos === 2) c.write(ack(PUBREC, packetId, c.version, reason));
}
