// The meters features hang on the data path of a worker: topic metrics
// (src/features/topic-metrics) count per configured topic filter what is received, sent and
// dropped; slow subscribers (src/features/slow-subs) time each QoS 1/2 delivery until its
// acknowledgement. Each has an `on` flag the data path reads first: while it is off nothing more
// is asked (one property read per message).

/** Per-topic-filter counts: asked only while `on` (some filter configured). */
export interface TopicMeter {
  readonly on: boolean;
  /** An accepted PUBLISH about to be routed: its topic, QoS and payload bytes. */
  received(topic: string, qos: 0 | 1 | 2, bytes: number): void;
  /** A PUBLISH written to a subscriber (first sends and resends). */
  sent(topic: string, qos: 0 | 1 | 2, bytes: number): void;
  /** A message not delivered: to no subscriber at all, or dropped for one subscriber. */
  dropped(topic: string): void;
}

/** Delivery latency of QoS 1/2 messages: asked only while `on`. */
export interface AckMeter {
  readonly on: boolean;
  /** A QoS 1 PUBACK or QoS 2 PUBCOMP (or a refusing PUBREC) for a message the broker received at
   * `receivedAt` and last sent at `sentAt` (epoch ms). */
  acked(clientId: string, topic: string, receivedAt: number, sentAt: number, now: number): void;
}

export const NO_TOPIC_METER: TopicMeter = { on: false, received() {}, sent() {}, dropped() {} };
export const NO_ACK_METER: AckMeter = { on: false, acked() {} };
