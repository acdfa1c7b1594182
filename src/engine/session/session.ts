// Session: the state of one MQTT session, owned by the worker thread whose connection created
// or last resumed it (see SessionTable). It holds the subscriptions (mirrored in the shared
// routing core), the outgoing QoS 1/2 messages in flight and queued, the incoming QoS 2 packet
// ids awaiting PUBREL, the will, and the expiry. It outlives connections when it is persistent.
import type { Message } from '../../broker/message.ts';
import type { Delivery } from '../../router/delivery.ts';
import { BoundedQueue, type DropPolicy } from './queue.ts';
import type { SessionLink } from './link.ts';
import type { ClientIdentity } from '../../auth/types.ts';

export type { Delivery } from '../../router/delivery.ts';

export interface SubscriptionEntry {
  filter: string;
  /** v5 subscription options byte: QoS, No Local, Retain As Published, Retain Handling. */
  options: number;
  subscriptionId: number;
  /** The client's ACL grants this filter only some of its topics (auth/acl-scope.ts): each
   * message delivered to the session is checked for its topic (Outbox). Set per connection. */
  readChecked?: boolean;
}

export interface Inflight extends Delivery {
  packetId: number;
  /** 'publish': waiting for PUBACK/PUBREC; 'pubrel': PUBREL sent, waiting for PUBCOMP. */
  state: 'publish' | 'pubrel';
  /** Epoch ms of its last PUBLISH to the client (0: not sent on this worker yet: restored or
   * handed over, sent again on resume). */
  sentAt: number;
}

export interface Will {
  /** The will as it will be published; its `expiresAt` is set when it is published. */
  message: Message;
  /** Will Delay Interval, seconds [MQTT-3.1.3-9]. */
  delay: number;
  /** Message Expiry Interval of the will, seconds (0: none); counts from its publication. */
  expiryInterval: number;
}

export interface SessionLimits {
  maxQueued: number;
  dropPolicy: DropPolicy;
}

/** v5 SUBSCRIBE option bit No Local [MQTT-3.8.3-3]. */
const NO_LOCAL = 0x04;
/** A session with more subscriptions than this is assumed to have a No Local one (no scan). */
const NO_LOCAL_SCAN_MAX = 16;

/** How long, and how many at most, a session keeps the identities of the cluster messages it
 * took (Session.firstCopy): longer than two copies of one message arrive apart on two nodes
 * (the streams' lag, the old node's forwarding window), and at most ~330 messages a second. */
export const SEEN_MS = 30_000;
export const SEEN_MAX = 10_000;

export class Session {
  // The collections are made when first used: an idle session keeps none (each empty Map costs
  // a few hundred bytes); the *Count getters read without making them.
  private subscriptionMap: Map<string, SubscriptionEntry> | null = null;
  private inflightMap: Map<number, Inflight> | null = null;
  private queueStore: BoundedQueue<Delivery> | null = null;

  /** The subscriptions (mirrored in the shared routing core), by filter. */
  get subscriptions(): Map<string, SubscriptionEntry> {
    return (this.subscriptionMap ??= new Map());
  }

  get subscriptionCount(): number {
    return this.subscriptionMap?.size ?? 0;
  }

  /** Outgoing QoS 1/2 messages in flight, by packet id. */
  get inflight(): Map<number, Inflight> {
    return (this.inflightMap ??= new Map());
  }

  get inflightCount(): number {
    return this.inflightMap?.size ?? 0;
  }

  /** Deliveries waiting for the client (offline, or beyond the inflight window). */
  get queue(): BoundedQueue<Delivery> {
    return (this.queueStore ??= new BoundedQueue(this.limits.maxQueued, this.limits.dropPolicy));
  }

  get queuedCount(): number {
    return this.queueStore?.length ?? 0;
  }

  /** Incoming QoS 2 packet ids received but not yet released [MQTT-4.3.3-10]. */
  get incomingQos2(): Set<number> {
    return (this.incomingQos2Set ??= new Set());
  }
  /** Made when first used (QoS 2 publishers): idle sessions stay small. */
  private incomingQos2Set: Set<number> | null = null;
  /** Subscriptions marked readChecked: while any is, every delivery's topic is checked against
   * the client's ACL before it is sent (Outbox). */
  readChecks = 0;
  /** A read check waits for the ACL policies (Outbox.hold): deliveries queue behind it. */
  readHold: { d: Delivery; allowed?: boolean } | null = null;
  /** The connection the session is attached to; null while the client is away. */
  connection: SessionLink | null = null;
  /** The routing clock's tick when the current connection was attached (see Outbox.deliver). */
  attachedTick = 0;
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
  /** Who the last connection was (superuser, granted ACL rules): its will is checked as that
   * client. Not stored: a session restored after a restart checks its will by client id and username. */
  identity: ClientIdentity | null = null;
  private nextPacketId = 1;
  /** The cluster messages this session took lately, by identity (Message.origin, or this node's
   * tag and the routing tick), and when (ms): see firstCopy. Made when first used. */
  private seenMap: Map<string, number> | null = null;

  constructor(readonly handle: number, readonly clientId: string, private readonly limits: SessionLimits, public username: string | undefined = undefined) {}

  /** A packet identifier not used by any message in flight [MQTT-2.2.1-2]; 0 when all 65535 are. */
  allocatePacketId(): number {
    if (this.inflightCount >= 65535) return 0;
    for (;;) {
      const id = this.nextPacketId;
      this.nextPacketId = id === 65535 ? 1 : id + 1;
      if (!this.inflight.has(id)) return id;
    }
  }

  /** Whether a subscription of this session may have No Local (its matches depend on it). */
  mayHaveNoLocal(): boolean {
    const n = this.subscriptionCount;
    if (n === 0) return false;
    if (n > NO_LOCAL_SCAN_MAX) return true;
    for (const sub of this.subscriptions.values()) if (sub.options & NO_LOCAL) return true;
    return false;
  }

  /**
   * Whether the cluster message `key` is new to this session (and notes it): false for a copy
   * that came before. A session that moves between nodes can be sent two copies of one message:
   * the node it left forwards what reached it after the move, and another node may have sent a
   * copy to both nodes, one routed before the move and one after. Identities are kept
   * SEEN_MS and SEEN_MAX at most (the oldest go first: a copy later than that is taken again).
   */
  firstCopy(key: string, now: number): boolean {
    const seen = (this.seenMap ??= new Map());
    if (seen.has(key)) return false;
    for (const [k, at] of seen) {
      if (at > now - SEEN_MS && seen.size < SEEN_MAX) break;
      seen.delete(k);
    }
    seen.set(key, now);
    return true;
  }

  /** The identities noted by firstCopy, oldest first (they move with the session). */
  get seen(): [string, number][] {
    return this.seenMap === null ? [] : [...this.seenMap];
  }

  set seen(entries: readonly [string, number][]) {
    this.seenMap = entries.length === 0 ? null : new Map(entries);
  }

  clearTimers(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.willTimer) clearTimeout(this.willTimer);
    this.expiryTimer = this.willTimer = null;
  }
}
