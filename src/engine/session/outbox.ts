// Outbox: the way out of a session towards its client, for one worker thread. It sends a
// delivery now or queues it (offline, or the inflight window is full), allocates packet ids and
// records QoS 1/2 messages in flight, resends what was in flight when a session resumes, drains
// the queue as acknowledgements free the window, and counts every message it drops by reason.
// It writes through the session's SessionLink and tells Persistence what changed. For a session
// with a subscription its client's ACL grants only in part (Session.readChecks), each message's
// topic is checked before it is sent, in order: a check waiting for the ACL policies holds the
// messages behind it in the queue.
import { isExpired, routedBefore } from '../../broker/message.ts';
import { ack, packetIdOffset, PUBREL } from '../../protocol/send.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import { endpointStatsOfSlot } from '../../stats/endpoint-stats.ts';
import type { Delivery } from '../../router/delivery.ts';
import type { Persistence } from './persistence.ts';
import type { Inflight, Session } from './session.ts';
import type { SessionLink } from './link.ts';
import { EV, NO_EVENTS, type EngineEvents } from './events.ts';
import type { Message } from '../../broker/message.ts';
import { NO_ACK_METER, NO_TOPIC_METER, type AckMeter, type TopicMeter } from './meters.ts';
import { NO_TRACER, type MessageTracer } from '../../broker/trace-context.ts';

export interface OutboxLimits {
  /** QoS 1/2 messages in flight to a client at most (also bounded by its Receive Maximum). */
  readonly maxInflight: number;
  /** Queue QoS 0 messages for offline sessions. */
  readonly queueQos0: boolean;
}

/** QoS 0 shedding while the worker is overloaded (src/features/overload): `on` is set by the
 * worker's overload monitor; a QoS 0 delivery to a client with more than SHED_BACKLOG bytes
 * waiting is dropped then, and counted in `shed`. */
export interface Shedding {
  on: boolean;
  shed: number;
}

/** Bytes waiting for a client above which it is slow, for shedding. */
export const SHED_BACKLOG = 64 * 1024;

const NO_SHEDDING: Shedding = { on: false, shed: 0 };

export class Outbox {
  constructor(
    private readonly limits: OutboxLimits,
    private readonly stats: WorkerStats,
    private readonly persistence: Persistence | null,
    /** Rule events: DELIVERED, ACK and DROP happen here. */
    private readonly events: EngineEvents = NO_EVENTS,
    private readonly shedding: Shedding = NO_SHEDDING,
    /** Topic metrics: what is sent and dropped per configured filter (src/features/topic-metrics). */
    private readonly topics: TopicMeter = NO_TOPIC_METER,
    /** Slow subscribers: each QoS 1/2 delivery timed until acknowledged (src/features/slow-subs). */
    private readonly acks: AckMeter = NO_ACK_METER,
    /** OpenTelemetry traces: deliveries and acknowledgements of sampled messages. */
    private readonly tracer: MessageTracer = NO_TRACER,
  ) {}

  /** $EVENT.DROP: a message not delivered to `session`, with why. */
  private dropEvent(session: Session, m: Message, reason: string): void {
    this.events.emit('DROP', { reason, clientid: session.clientId, username: session.username ?? null, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, timestamp: Date.now(), publish_received_at: m.receivedAt });
  }

  /** The QoS 1/2 window towards the session's client. */
  window(link: SessionLink): number {
    return Math.min(link.receiveMaximum, this.limits.maxInflight);
  }

  /**
   * A delivery for a session of this thread: to its connection, or to its queue. `frameCache`
   * holds the frames of this message already encoded for other subscribers, by variant.
   */
  deliver(session: Session, d: Delivery, frameCache: Map<string, Buffer> | null): void {
    if (session.sink !== null) {
      session.sink(d);
      return;
    }
    const link = session.connection;
    if (link === null || !link.connected) {
      this.enqueue(session, d);
      return;
    }
    // QoS 0 routed before this connection was attached went to a session that was offline (or to
    // the connection before it): not queued, so not delivered either [MQTT-3.1.2-5 context].
    if (d.qos === 0 && routedBefore(d.message, session.attachedTick)) {
      this.dropQos0Offline(session, d.message);
      return;
    }
    // Read access per message, as Mosquitto checks it: only for sessions with a subscription the
    // ACL grants in part (a deny of secret/# under a granted #); one branch for the others.
    if (session.readChecks > 0 || session.readHold !== null) {
      if (session.readHold !== null) {
        this.enqueue(session, d);
        return;
      }
      const verdict = this.readVerdict(session, link, d);
      if (verdict === 'drop') return;
      if (verdict === 'wait') {
        this.enqueue(session, d);
        return;
      }
    }
    // Behind what already waits: a QoS 1/2 message never passes an older one [MQTT-4.6.0-6] (the
    // queue fills while the store is congested or the client slow, and drains later).
    if (d.qos > 0 && session.queuedCount > 0) {
      this.enqueue(session, d);
      this.drain(session);
      return;
    }
    // A stored message waits in the queue while the store is congested (drain resumes it).
    if (d.message.storeId !== undefined && session.stored && this.persistence?.congested) {
      this.enqueue(session, d);
      this.drain(session);
      return;
    }
    if (d.qos > 0 && session.inflightCount >= this.window(link)) {
      this.enqueue(session, d);
      return;
    }
    if (d.qos === 0 && this.shedding.on && link.outboundBacklog > SHED_BACKLOG) {
      // Overloaded: a slow client's QoS 0 goes first.
      this.shedding.shed++;
      this.stats.dropped.slowConsumer++;
      if (this.topics.on) this.topics.dropped(d.message.topic);
      link.endpointStats.dropped.buffer_full++;
      if (this.events.wants[EV.DROP]) this.dropEvent(session, d.message, 'overload_shed');
      return;
    }
    if (!link.writable) {
      // A client that does not take what is written: QoS 0 is dropped, QoS 1/2 wait in the
      // session queue (bounded; drained when the client catches up).
      link.congested();
      if (d.qos === 0) {
        this.stats.dropped.slowConsumer++;
        if (this.topics.on) this.topics.dropped(d.message.topic);
        link.endpointStats.dropped.buffer_full++;
        if (this.events.wants[EV.DROP]) this.dropEvent(session, d.message, 'slow_consumer');
      } else {
        this.enqueue(session, d);
      }
      return;
    }
    let frame: Buffer | undefined;
    if (frameCache !== null && link.sharesFrames) {
      // One encoding per variant of the message for this tick's subscribers.
      const key = `${link.version}${d.qos}${d.retain ? 1 : 0}${d.subscriptionIds ?? ''}`;
      frame = frameCache.get(key);
      if (!frame) {
        frame = link.encodePublish(d, Date.now(), false);
        frameCache.set(key, frame);
      }
    }
    this.send(session, link, d, frame, false, 0);
  }

  /**
   * Encodes (or reuses `frame`, shared with other subscribers: copied before its packet id is
   * patched) and writes one PUBLISH; records it in flight for QoS > 0. `packetId` is given for a
   * resend of a message already in flight.
   */
  private send(session: Session, link: SessionLink, d: Delivery, frame: Buffer | undefined, dup: boolean, packetId: number): void {
    const m = d.message;
    const now = Date.now();
    if (isExpired(m, now)) {
      // [MQTT-3.3.2-5] an expired message is not delivered.
      this.stats.dropped.expired++;
      if (this.topics.on) this.topics.dropped(m.topic);
      link.endpointStats.dropped.others++;
      if (this.events.wants[EV.DROP]) this.dropEvent(session, m, 'expired');
      if (packetId !== 0) session.inflight.delete(packetId);
      this.persistence?.delivered(session, m);
      return;
    }
    const resend = packetId !== 0;
    if (d.qos > 0 && packetId === 0) {
      packetId = session.allocatePacketId();
      if (packetId === 0) {
        this.enqueue(session, d);
        return;
      }
    }
    if (!frame || dup) frame = link.encodePublish(d, now, dup);
    else if (d.qos > 0) frame = Buffer.from(frame);
    if (frame.length > link.maxPacketSize) {
      // [MQTT-3.1.2-25] too big for this client: dropped for it, as if sent.
      this.stats.dropped.tooLarge++;
      if (this.topics.on) this.topics.dropped(m.topic);
      link.endpointStats.dropped.others++;
      if (this.events.wants[EV.DROP]) this.dropEvent(session, m, 'too_large');
      if (resend) session.inflight.delete(packetId);
      this.persistence?.delivered(session, m);
      return;
    }
    let entry: Inflight | null = null;
    if (d.qos > 0) {
      frame.writeUInt16BE(packetId, packetIdOffset(frame));
      if (resend) {
        // A resend (DUP) after the session resumed: its latency counts from now.
        const resent = session.inflight.get(packetId);
        if (resent !== undefined) resent.sentAt = now;
      } else {
        entry = { message: m, qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds, packetId, state: 'publish', sentAt: now };
        session.inflight.set(packetId, entry);
        this.persistence?.deliveryState(session, m, 'inflight', packetId);
      }
    }
    this.stats.messagesSent++;
    this.stats.publishSent[d.qos]++;
    this.stats.publishBytesSent[d.qos] += frame.length;
    if (this.topics.on) this.topics.sent(m.topic, d.qos, m.payload.length);
    link.published(frame.length);
    if (!resend) this.stats.recordDelivery(now - m.receivedAt);
    link.write(frame);
    if (m.trace !== undefined && !resend) this.tracer.delivered(m.trace, session.clientId, d.qos, packetId, entry);
    if (this.events.wants[EV.DELIVERED]) {
      this.events.emit('DELIVERED', { clientid: session.clientId, username: session.username ?? null, topic: m.topic, payload: m.payload, qos: d.qos, retain: d.retain, dup: resend, packet_id: packetId, timestamp: now, publish_received_at: m.receivedAt });
    }
  }

  enqueue(session: Session, d: Delivery): void {
    if (d.qos === 0 && !this.limits.queueQos0 && !session.connection?.connected) {
      this.dropQos0Offline(session, d.message);
      return;
    }
    const dropped = session.queue.push(d);
    if (dropped !== undefined) {
      this.stats.dropped.queueFull++;
      if (this.topics.on) this.topics.dropped(dropped.message.topic);
      const es = session.connection?.endpointStats ?? endpointStatsOfSlot(session.endpointSlot);
      if (es) es.dropped.buffer_full++;
      if (this.events.wants[EV.DROP]) this.dropEvent(session, dropped.message, 'queue_full');
      this.persistence?.delivered(session, dropped.message);
    }
  }

  /** A message the client may not read (its ACL denies the topic under a wildcard it granted). */
  private dropUnreadable(session: Session, link: SessionLink, m: Message): void {
    this.stats.dropped.readDenied++;
    if (this.topics.on) this.topics.dropped(m.topic);
    link.endpointStats.dropped.others++;
    if (this.events.wants[EV.DROP]) this.dropEvent(session, m, 'not_authorized');
    this.persistence?.delivered(session, m);
  }

  /** `d` (queued) waits for the ACL policies' answer about its topic; so does what follows it. */
  private hold(session: Session, d: Delivery, answer: Promise<boolean>): void {
    const hold: { d: Delivery; allowed?: boolean } = { d };
    session.readHold = hold;
    const settle = (allowed: boolean) => {
      if (session.readHold !== hold) return;
      hold.allowed = allowed;
      this.drain(session);
    };
    answer.then(settle, () => settle(false));
  }

  /** Whether `d` (queued, or not yet: the caller queues it on 'wait') may be sent ('send'), was
   * dropped as unreadable ('drop'), or waits for an answer ('wait'). */
  private readVerdict(session: Session, link: SessionLink, d: Delivery): 'send' | 'drop' | 'wait' {
    const hold = session.readHold;
    if (hold !== null) {
      if (hold.allowed === undefined) return 'wait';
      session.readHold = null;
      // The held message itself (unless the bounded queue dropped it meanwhile).
      if (hold.d === d) {
        if (hold.allowed) return 'send';
        this.dropUnreadable(session, link, d.message);
        return 'drop';
      }
    }
    if (session.readChecks === 0) return 'send';
    const allowed = link.canRead(d.message.topic);
    if (allowed === true) return 'send';
    if (allowed === false) {
      this.dropUnreadable(session, link, d.message);
      return 'drop';
    }
    this.hold(session, d, allowed);
    return 'wait';
  }

  private dropQos0Offline(session: Session, m: Message): void {
    this.stats.dropped.qos0Offline++;
    if (this.topics.on) this.topics.dropped(m.topic);
    if (this.events.wants[EV.DROP]) this.dropEvent(session, m, 'client_disconnected');
    const es = endpointStatsOfSlot(session.endpointSlot) ?? session.connection?.endpointStats;
    if (es) es.dropped.client_disconnected++;
  }

  /** Sends queued deliveries while the client's window has room (and the store keeps up). */
  drain(session: Session): void {
    const link = session.connection;
    if (!link || !link.connected) return;
    const persistence = this.persistence;
    if (persistence?.congested && session.stored) {
      if (!session.drainScheduled) {
        session.drainScheduled = true;
        persistence.whenClear(() => {
          session.drainScheduled = false;
          this.drain(session);
        });
      }
      return;
    }
    const window = this.window(link);
    while (session.queuedCount > 0) {
      const next = session.queue.peek()!;
      if (session.readChecks > 0 || session.readHold !== null) {
        const verdict = this.readVerdict(session, link, next);
        if (verdict === 'wait') return;
        if (verdict === 'drop') {
          session.queue.shift();
          continue;
        }
      }
      if (next.qos > 0 && session.inflightCount >= window) return;
      if (!link.writable) {
        link.congested();
        return;
      }
      session.queue.shift();
      this.send(session, link, next, undefined, false, 0);
    }
  }

  /** After CONNACK: resend what was in flight (PUBLISH with DUP, or PUBREL) [MQTT-4.4.0-1], then
   * what was queued. */
  resume(session: Session): void {
    const link = session.connection!;
    if (session.inflightCount > 0) for (const entry of [...session.inflight.values()]) {
      if (entry.state === 'pubrel') link.write(ack(PUBREL, entry.packetId, link.version));
      else this.send(session, link, entry, undefined, true, entry.packetId);
    }
    this.drain(session);
  }

  /** A QoS 1 message or a QoS 2 flow towards the client completed (or was refused): free its
   * packet id and send what waits. */
  completed(session: Session, entry: Inflight): void {
    session.inflight.delete(entry.packetId);
    if (this.acks.on && entry.sentAt > 0) this.acks.acked(session.clientId, entry.message.topic, entry.message.receivedAt, entry.sentAt, Date.now());
    if (entry.message.trace !== undefined) this.tracer.acknowledged(entry.message.trace, session.clientId, entry);
    if (this.events.wants[EV.ACK]) {
      const m = entry.message;
      this.events.emit('ACK', { clientid: session.clientId, username: session.username ?? null, topic: m.topic, payload: m.payload, qos: entry.qos, packet_id: entry.packetId, timestamp: Date.now(), publish_received_at: m.receivedAt });
    }
    this.persistence?.delivered(session, entry.message);
    this.drain(session);
  }
}
