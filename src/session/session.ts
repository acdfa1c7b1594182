// Session: the state of one MQTT session, owned by the worker thread whose connection created
// or last resumed it (see SessionTable). It holds the subscriptions (mirrored in the shared
// routing core), the outgoing QoS 1/2 messages in flight and queued, the incoming QoS 2 packet
// ids awaiting PUBREL, the will, and the expiry. It outlives connections when it is persistent.
import type { Message } from '../broker/message.ts';
import { BoundedQueue, type DropPolicy } from './queue.ts';
import type { Connection } from './connection.ts';

export interface SubscriptionEntry {
  filter: string;
  /** v5 subscription options byte: QoS, No Local, Retain As Published, Retain Handling. */
  options: number;
  subscriptionId: number;
}

/** One message on its way to this session's client. */
export interface Delivery {
  message: Message;
  qos: 0 | 1 | 2;
  /** The RETAIN flag to send: the message's own with Retain As Published or for retained
   * messages sent on subscribe, else 0 [MQTT-3.3.1-12 .. MQTT-3.3.1-13]. */
  retain: boolean;
  subscriptionIds: number[] | null;
}

export interface Inflight extends Delivery {
  packetId: number;
  /** 'publish': waiting for PUBACK/PUBREC; 'pubrel': PUBREL sent, waiting for PUBCOMP. */
  state: 'publish' | 'pubrel';
}

export interface Will {
  message: Message;
  /** Will Delay Interval, seconds [MQTT-3.1.3-9]. */
  delay: number;
}

export interface SessionLimits {
  maxQueued: number;
  dropPolicy: DropPolicy;
}

/** Session Expiry Interval meaning "never". */
export const NEVER_EXPIRES = 0xffffffff;

export class Session {
  readonly subscriptions = new Map<string, SubscriptionEntry>();
  readonly inflight = new Map<number, Inflight>();
  readonly queue: BoundedQueue<Delivery>;
  /** Incoming QoS 2 packet ids received but not yet released [MQTT-4.3.3-10]. */
  get incomingQos2(): Set<number> {
    return (this.incomingQos2Set ??= new Set());
  }
  /** Made when first used (QoS 2 publishers): idle sessions stay small. */
  private incomingQos2Set: Set<number> | null = null;
  /** The connection the session is attached to; null while the client is away. */
  connection: Connection | null = null;
  will: Will | null = null;
  /** Seconds the session outlives its connection; 0 = it ends with the connection. */
  expiryInterval = 0;
  expiryTimer: NodeJS.Timeout | null = null;
  willTimer: NodeJS.Timeout | null = null;
  /** The session is in the store (it was persistent when last saved). */
  stored = false;
  /** A drain is waiting for the store to catch up. */
  drainScheduled = false;
  /** When the session last lost its connection (ms), for the remaining expiry on hand-over. */
  disconnectedAt = 0;
  /** The endpoint counter slot this session is counted in (maxSessionSize); -1: none. */
  endpointSlot = -1;
  /** An internal session of the broker (a local subscription): deliveries go to this function
   * instead of a connection or the queue. Null for client sessions. */
  sink: ((d: Delivery) => void) | null = null;
  private nextPacketId = 1;

  constructor(readonly handle: number, readonly clientId: string, limits: SessionLimits, public username: string | undefined = undefined) {
    this.queue = new BoundedQueue(limits.maxQueued, limits.dropPolicy);
  }

  /** A packet identifier not used by any message in flight [MQTT-2.2.1-2]; 0 when all 65535 are. */
  allocatePacketId(): number {
    if (this.inflight.size >= 65535) return 0;
    for (;;) {
      const id = this.nextPacketId;
      this.nextPacketId = id === 65535 ? 1 : id + 1;
      if (!this.inflight.has(id)) return id;
    }
  }

  clearTimers(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.willTimer) clearTimeout(this.willTimer);
    this.expiryTimer = this.willTimer = null;
  }
}
