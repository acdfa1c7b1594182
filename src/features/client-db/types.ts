// Owns the shapes of the built-in client database: its clients, its roles and its settings, as
// stored (admin kinds 'client-db-client', 'client-db-role', 'client-db-settings'), replicated,
// sent to every worker and answered by the admin API. A client's password is only ever a hash, and
// SCRAM salted keys; its TLS-PSK key is a shared secret, kept as given (the handshake needs the key
// itself).
import type { RateLimit } from '../../broker/rate-limit.ts';

/** What a rule of a role is asked about.
 * - publish: a PUBLISH (and a will) to a topic name.
 * - subscribe: reading: a SUBSCRIBE's filter (what it may read: all, some, none) and each message
 *   delivered through a subscription granted only in part (its topic name).
 * - all: publish and subscribe.
 * - subscribe-filter: only the SUBSCRIBE filter itself, never a delivered message (Mosquitto
 *   dynamic security's subscribePattern and, with `literal`, subscribeLiteral). */
export type RuleAction = 'publish' | 'subscribe' | 'all' | 'subscribe-filter';
export const RULE_ACTIONS: readonly RuleAction[] = ['publish', 'subscribe', 'all', 'subscribe-filter'];

export interface RoleRule {
  action: RuleAction;
  permission: 'allow' | 'deny';
  /** An ACL pattern: a topic filter whose levels may hold %u (username) and %c (client id). */
  topic: string;
  /** subscribe-filter only: the SUBSCRIBE filter must equal `topic` as text (no wildcard matching). */
  literal?: boolean;
}

export interface RoleDoc {
  name: string;
  description?: string;
  /** Tried in order: the first rule that applies decides. */
  rules: RoleRule[];
  /** The inbound rate limit of its clients (over their endpoint's), unless the client has its
   * own or a role of higher priority has one. */
  rateLimit?: RateLimit;
  createTime: string;
  updateTime: string;
}

/** A role given to a client: roles are tried by priority, highest first; equal priorities keep
 * the order listed. */
export interface RoleRef {
  name: string;
  priority?: number;
}

export interface ClientDoc {
  username: string;
  /** An argon2 or bcrypt hash, or a Mosquitto PBKDF2-SHA512 hash `$7$<iterations>$<salt>$<hash>`
   * (imported from a dynamic-security.json). Absent for a client with SCRAM credentials only
   * (it signs in with SCRAM, never with a password). */
  passwordHash?: string;
  /** SCRAM credentials, at most one per mechanism, in RFC 5803 form
   * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (salted keys, never the password):
   * made from the password when it is set in plain through the API, or given ready. */
  scram?: string[];
  /** When set, the client must connect with this client id. */
  clientId?: string;
  enabled: boolean;
  textName?: string;
  description?: string;
  roles: RoleRef[];
  /** Its inbound rate limit, over its roles' and its endpoint's. */
  rateLimit?: RateLimit;
  /** Its TLS-PSK key in hex (Mosquitto's form: `mosquitto_pub --psk`), its username the identity,
   * on endpoints with sslConfig.psk.fromClientDb. Kept as given: never answered but by the export. */
  pskKey?: string;
  createTime: string;
  updateTime: string;
}

/** What the database answers when none of a client's rules applies; a field left out: the next
 * ACL of the chain decides (ACL policies, auth.acl, the Mosquitto ACL file, auth.aclDefault). */
export interface DefaultAccess {
  publish?: 'allow' | 'deny';
  subscribe?: 'allow' | 'deny';
  /** The SUBSCRIBE filter check when no subscribe-filter rule applies (dynamic security's
   * `subscribe` default). Left out: no filter check unless a subscribe-filter rule applies. */
  subscribeFilter?: 'allow' | 'deny';
}

export interface SettingsDoc {
  /** The roles of clients that connect without a username, in order; null: the database says
   * nothing about anonymous clients (the rest of the chain decides). */
  anonymousRoles: string[] | null;
  defaultAccess: DefaultAccess;
}

/** Until changed: a built-in client may publish and read only what its roles allow. */
export const DEFAULT_SETTINGS: SettingsDoc = Object.freeze({ anonymousRoles: null, defaultAccess: Object.freeze({ publish: 'deny', subscribe: 'deny' }) }) as SettingsDoc;

/** The database as exported and imported (GET /api/client-db/export). */
export interface ClientDbExport {
  clients: ClientDoc[];
  roles: RoleDoc[];
  settings: SettingsDoc;
}

/** A change sent to every worker: clients and roles put or removed, the settings replaced, or
 * everything replaced (`full`: what is not listed is removed). */
export interface ClientDbDelta {
  full?: boolean;
  clients?: WorkerClient[];
  removeClients?: string[];
  roles?: WorkerRole[];
  removeRoles?: string[];
  settings?: SettingsDoc;
  /** The key (base64) SCRAM derives the salt shown for unknown usernames from (src/auth/scram). */
  scramMockKey?: string;
}

/** A client as a worker holds it (no names or times). */
export interface WorkerClient {
  username: string;
  passwordHash?: string;
  scram?: string[];
  clientId?: string;
  enabled: boolean;
  /** Role names, already ordered by priority. */
  roles: string[];
  rateLimit?: RateLimit;
  /** Its TLS-PSK key in hex. */
  pskKey?: string;
}

export interface WorkerRole {
  name: string;
  rules: RoleRule[];
  rateLimit?: RateLimit;
}

/** Limits of the database (documented in docs/features/client-db.md). */
export const LIMITS = {
  nameLength: 256,
  textLength: 1024,
  rulesPerRole: 1000,
  rolesPerClient: 100,
  clients: 1_000_000,
  roles: 10_000,
} as const;
