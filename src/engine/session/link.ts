// SessionLink: what the session layer needs from the network connection a session is attached
// to (the connection layer implements it; sessions never see sockets, framing or handlers).
import type { CloseReason } from '../../protocol/reason-codes.ts';
import type { Version } from '../../protocol/send.ts';
import type { EndpointStats } from '../../stats/endpoint-stats.ts';
import type { Delivery } from '../../router/delivery.ts';

export interface SessionLink {
  /** CONNACK was sent and the connection is not closed. */
  readonly connected: boolean;
  readonly version: Version;
  /** The client's Receive Maximum: QoS 1/2 PUBLISH we may have unacknowledged [MQTT-3.3.4-9]. */
  readonly receiveMaximum: number;
  /** The client's Maximum Packet Size [MQTT-3.1.2-24]. */
  readonly maxPacketSize: number;
  /** A PUBLISH encoded for another client of the same variant can be sent as it is (false when the
   * connection assigns topic aliases, which differ per connection). */
  readonly sharesFrames: boolean;
  /** The connection ended with a DISCONNECT that keeps the will from being published. */
  readonly normalDisconnect: boolean;
  /** The client takes what is written (below limits.maxOutboundBytes): deliveries may go out. */
  readonly writable: boolean;
  /** Bytes written for the client and not yet taken by it (overload shedding reads it). */
  readonly outboundBacklog: number;
  /** A delivery was held back or dropped for a client that does not read (slow consumer). */
  congested(): void;
  /** The counters of the endpoint that accepted the connection, and its slot. */
  readonly endpointStats: EndpointStats;
  readonly endpointSlot: number;
  /** Encodes a PUBLISH of `d` for this connection (version, topic alias, remaining expiry). */
  encodePublish(d: Delivery, now: number, dup: boolean): Buffer;
  write(frame: Buffer): void;
  /** A PUBLISH frame of `bytes` went out (per-connection and endpoint counters). */
  published(bytes: number): void;
  /** May the client read a message on `topic` (its ACL, asked as a subscribe to the topic name)?
   * Asked only for sessions with a subscription its ACL grants in part (Session.readChecks). */
  canRead(topic: string): boolean | Promise<boolean>;
  /** Server-initiated close: DISCONNECT with `reason` to a connected v5 client, then close. */
  kick(reason: number, why: CloseReason, message?: string): void;
}
