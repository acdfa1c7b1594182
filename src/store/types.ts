// The Store interface: everything Spindle persists, split by entity the way Mosquitto's
// persistence events are (session, subscription, message stored once, per-client delivery state,
// retained message, will inside the session), plus admin objects. Every backend (memory, local,
// postgres, mysql) implements exactly this, and one abstract test suite runs against all of them.
//
// Durability contract: a returned Promise resolves only once the change is durable (for the
// backends that persist). Backends batch the writes made while a commit is in progress into the
// next transaction (group commit), so many concurrent calls cost one fsync / round trip.
// Calls made in order by one caller are applied in that order.

/** A stored application message (written once, referenced by every delivery of it). */
export interface StoredMessage {
  /** Store-wide unique id chosen by the broker (milliseconds, worker, counter; see Persistence.nextMessageId). */
  id: bigint;
  topic: string;
  payload: Buffer;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** v5 properties forwarded with the message (raw property block), or null. */
  properties: Buffer | null;
  /** Absolute expiry, ms since the epoch; 0 = never. */
  expiresAt: number;
}

export interface StoredWill {
  /** The will message; it has no id and no absolute expiry until it is published. */
  message: Omit<StoredMessage, 'id' | 'expiresAt'>;
  /** Will Delay Interval, seconds. */
  delay: number;
  /** Message Expiry Interval, seconds, counted from the will's publication; 0 = never expires. */
  expiryInterval: number;
}

/** Session Expiry Interval meaning the session never expires (MQTT 5, 3.1.2.11.2). */
export const NEVER_EXPIRES = 0xffffffff;

export interface StoredSession {
  clientId: string;
  /** The cluster node that holds the session (kept by the SQL stores, which nodes may share; a
   * node restores only its own, and adopts those of a node that went down). Absent: unknown. */
  node?: string;
  /** Seconds the session outlives its connection (NEVER_EXPIRES: it never does). */
  expiryInterval: number;
  /** When the client went away (ms since the epoch), or null while it is connected. */
  disconnectedAt: number | null;
  username: string | null;
  will: StoredWill | null;
}

export interface StoredSubscription {
  clientId: string;
  filter: string;
  /** v5 SUBSCRIBE options byte (QoS bits 0-1, No Local 2, Retain As Published 3, Retain Handling 4-5). */
  options: number;
  subscriptionId: number;
}

/** Where one message stands for one client. */
export type DeliveryState = 'queued' | 'inflight' | 'pubrel';

export interface StoredDelivery {
  clientId: string;
  messageId: bigint;
  /** Order of deliveries within a client: ascending seq is delivery order. */
  seq: bigint;
  state: DeliveryState;
  /** Packet identifier once in flight; 0 while queued. */
  packetId: number;
  qos: 0 | 1 | 2;
  retain: boolean;
  subscriptionIds: number[];
}

/** A delivery as addMessage creates it: queued, its message id that of the message stored with it. */
export type NewDelivery = Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>;

/** A delivery with its message, as a restart reads it back. */
export interface LoadedDelivery extends StoredDelivery {
  message: StoredMessage;
}

export interface StoredRetained {
  topic: string;
  message: StoredMessage;
}

/** Kinds of admin objects kept as JSON documents (endpoints, users, secrets, rules, ...). */
export type AdminKind = string;

/** One audit record: who did what to which resource, when, from where. Written once, never changed. */
export interface AuditEntry {
  /** Unique, chosen by the caller (a UUID). */
  id: string;
  /** ms since the epoch. */
  time: number;
  username: string;
  /** The caller's role when it acted (admin, viewer, SystemAdmin, OrganizationAdmin, ...). */
  role: string;
  /** Tenant scope of the resource (null: the broker's own, or the whole platform). */
  organizationId: string | null;
  projectId: string | null;
  /** create | update | delete | login | login_failed | state | action (a verb, short) */
  action: string;
  /** The kind of resource: endpoint, rule, organization, application, ... */
  resource: string;
  resourceId: string | null;
  method: string; // HTTP method
  path: string; // HTTP path
  status: number; // HTTP status answered
  address: string; // caller's IP address
  /** Small JSON values (the caller keeps them small, <= 4 KB each serialized); null when none. */
  before: unknown | null;
  after: unknown | null;
}

export interface AuditQuery {
  username?: string;
  action?: string;
  resource?: string;
  resourceId?: string;
  organizationId?: string;
  projectId?: string;
  /** inclusive ms bounds */
  from?: number;
  to?: number;
  offset: number;
  limit: number;
}

export interface StoreStats {
  sessions: number;
  messages: number;
  deliveries: number;
  retained: number;
}

export interface Store {
  /** Connects, creates or migrates the schema (versioned migrations), and is ready for use. */
  open(): Promise<void>;
  /**
   * This node's slot (0..max-1) in a store the nodes of a cluster share, held by its name (the
   * same one at every start): message ids carry it, so two nodes never make the same id
   * (store/message-id.ts). Only the SQL stores, which nodes may share, have it. Rejects when
   * every slot is taken.
   */
  claimNodeSlot?(node: string, max: number): Promise<number>;
  /**
   * Moves the sessions stored as held by node `from` to node `to` (all of them, or those of
   * `clientIds`), atomically per session: answers the client ids it moved. Two nodes taking the
   * same session: one gets it. Only the SQL stores, which nodes may share, have it.
   */
  takeSessions?(from: string, to: string, clientIds?: readonly string[]): Promise<string[]>;
  /** Flushes pending writes and releases the connection / files. */
  close(): Promise<void>;
  readonly kind: 'MEMORY' | 'LOCAL' | 'POSTGRESQL' | 'MYSQL';

  // Sessions: keyed by client id.
  saveSession(session: StoredSession): Promise<void>;
  /** Deletes the session and everything that belongs to it: subscriptions, deliveries, incoming QoS 2 ids. */
  deleteSession(clientId: string): Promise<void>;
  loadSessions(): Promise<StoredSession[]>;

  addSubscription(sub: StoredSubscription): Promise<void>;
  removeSubscription(clientId: string, filter: string): Promise<void>;
  loadSubscriptions(clientId?: string): Promise<StoredSubscription[]>;

  /**
   * Stores a message once and a queued delivery of it for each given client, atomically.
   * `deliveries` carry their own seq, qos, retain and subscription ids.
   */
  addMessage(message: StoredMessage, deliveries: NewDelivery[]): Promise<void>;
  /** Moves a delivery to `state` (queued -> inflight with a packet id -> pubrel). */
  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void>;
  /** Removes a delivery (acknowledged, expired or dropped); the message goes when no delivery and
   * no retained entry refers to it. */
  removeDelivery(clientId: string, messageId: bigint): Promise<void>;
  /** A client's deliveries in seq order, with their messages. */
  loadDeliveries(clientId: string): Promise<LoadedDelivery[]>;

  /** QoS 2 packet ids received from a client and not yet released by PUBREL [MQTT-4.3.3-10]. */
  addIncomingQos2(clientId: string, packetId: number): Promise<void>;
  removeIncomingQos2(clientId: string, packetId: number): Promise<void>;
  loadIncomingQos2(clientId: string): Promise<number[]>;

  setRetained(topic: string, message: StoredMessage): Promise<void>;
  deleteRetained(topic: string): Promise<void>;
  loadRetained(): Promise<StoredRetained[]>;

  /** Removes expired messages (and their deliveries and retained entries) and sessions whose
   * expiry has passed; returns what it removed. */
  deleteExpired(now: number): Promise<{ sessions: string[]; messages: number }>;

  putAdmin(kind: AdminKind, id: string, doc: unknown): Promise<void>;
  getAdmin<T = unknown>(kind: AdminKind, id: string): Promise<T | undefined>;
  deleteAdmin(kind: AdminKind, id: string): Promise<boolean>;
  listAdmin<T = unknown>(kind: AdminKind): Promise<{ id: string; doc: T }[]>;

  stats(): Promise<StoreStats>;

  // Audit log (limits in ./audit.ts: AUDIT_LIMITS, MAX_AUDIT_PAGE; an entry or query beyond them,
  // or holding a NUL character, is refused with STORE_INVALID before anything is written).
  /** Appends audit entries (one transaction; durable when it resolves). An entry whose id is
   * already stored is skipped, the stored one kept: a retried append does not duplicate. */
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  /** Entries matching every given filter, newest first (time desc, then id desc), with the total matching. */
  queryAudit(q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }>;
  /** Removes entries older than `before` (ms); returns how many. Retention only: there is no update or single delete. */
  pruneAudit(before: number): Promise<number>;
}

/** Thrown when the store cannot do what was asked (connection lost, constraint, I/O). */
export { StoreError } from './errors.ts';
