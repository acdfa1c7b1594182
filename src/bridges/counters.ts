// The counters of one bridge (main thread): messages in and out, and drops by reason. Owned by the
// manager's entry, so they keep counting across a stop and a start (Prometheus counters only grow).

/** Why a message did not cross the bridge. */
export type DropReason =
  /** Outbound: the queue was at queueLimit; the oldest waiting message went. */
  | 'queue_full'
  /** A topic no mapping of the bridge takes (e.g. a subscription of an older configuration still
   * on the remote session). */
  | 'unmapped'
  /** The mapped topic is not a valid topic name, or would be one of the broker's own `$` topics. */
  | 'topic'
  /** Outbound: it expired (MQTT 5 Message Expiry) while waiting. */
  | 'expired'
  /** Outbound: waiting when the bridge was stopped, deleted or changed. */
  | 'stopped'
  /** Outbound: the remote refused it (an MQTT 5 PUBACK/PUBREC reason code of 0x80 or more, e.g.
   * not authorized), or mqtt.js refused to send it. Not retried: it would be refused again. */
  | 'refused';

export const DROP_REASONS: readonly DropReason[] = ['queue_full', 'unmapped', 'topic', 'expired', 'stopped', 'refused'];

export class BridgeCounters {
  /** Remote -> local, published here. */
  in = 0;
  /** Local -> remote, taken by the remote (acknowledged for QoS 1/2). */
  out = 0;
  readonly dropped: Record<DropReason, number> = { queue_full: 0, unmapped: 0, topic: 0, expired: 0, stopped: 0, refused: 0 };

  drop(reason: DropReason, n = 1): void {
    this.dropped[reason] += n;
  }
}
