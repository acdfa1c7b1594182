// PostgreSQL schema, as an ordered list of migrations applied at open() (see ../sql/migration.ts).
// Messages are stored once; deliveries, retained entries and the rest refer to them by id.
import type { Migration } from '../sql/migration.ts';

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    statements: [
      `CREATE TABLE spindle_sessions (
        client_id text PRIMARY KEY,
        expiry_interval bigint NOT NULL,
        disconnected_at bigint,
        expires_at bigint,
        username text,
        will_topic text,
        will_payload bytea,
        will_qos smallint,
        will_retain boolean,
        will_properties bytea,
        will_expires_at bigint,
        will_delay bigint
      )`,
      `CREATE INDEX spindle_sessions_expires_at ON spindle_sessions (expires_at) WHERE expires_at IS NOT NULL`,
      `CREATE TABLE spindle_subscriptions (
        client_id text NOT NULL,
        filter text NOT NULL,
        options smallint NOT NULL,
        subscription_id integer NOT NULL,
        PRIMARY KEY (client_id, filter)
      )`,
      `CREATE TABLE spindle_messages (
        id bigint PRIMARY KEY,
        topic text NOT NULL,
        payload bytea NOT NULL,
        qos smallint NOT NULL,
        retain boolean NOT NULL,
        properties bytea,
        expires_at bigint NOT NULL
      )`,
      `CREATE INDEX spindle_messages_expires_at ON spindle_messages (expires_at) WHERE expires_at <> 0`,
      `CREATE TABLE spindle_deliveries (
        client_id text NOT NULL,
        message_id bigint NOT NULL,
        seq bigint NOT NULL,
        state smallint NOT NULL,
        packet_id integer NOT NULL,
        qos smallint NOT NULL,
        retain boolean NOT NULL,
        subscription_ids text NOT NULL,
        PRIMARY KEY (client_id, message_id)
      )`,
      `CREATE INDEX spindle_deliveries_seq ON spindle_deliveries (client_id, seq)`,
      `CREATE INDEX spindle_deliveries_message ON spindle_deliveries (message_id)`,
      `CREATE TABLE spindle_incoming_qos2 (
        client_id text NOT NULL,
        packet_id integer NOT NULL,
        PRIMARY KEY (client_id, packet_id)
      )`,
      `CREATE TABLE spindle_retained (
        topic text PRIMARY KEY,
        message_id bigint NOT NULL
      )`,
      `CREATE INDEX spindle_retained_message ON spindle_retained (message_id)`,
      `CREATE TABLE spindle_admin (
        kind text NOT NULL,
        id text NOT NULL,
        doc text NOT NULL,
        PRIMARY KEY (kind, id)
      )`,
    ],
  },
  {
    // Version 1 kept a will's Message Expiry Interval in will_expires_at as minus the interval
    // (0: none), and never any other value.
    version: 2,
    name: 'will expiry interval column',
    statements: [
      `ALTER TABLE spindle_sessions RENAME COLUMN will_expires_at TO will_expiry_interval`,
      `UPDATE spindle_sessions SET will_expiry_interval = -will_expiry_interval WHERE will_expiry_interval < 0`,
    ],
  },
  {
    // The audit log of the admin APIs: appended, queried newest first by user, resource,
    // organization and time range, pruned by age; never updated. Ids are compared byte-wise
    // (COLLATE "C") so that ties in time order the same in every backend.
    version: 3,
    name: 'audit log',
    statements: [
      `CREATE TABLE spindle_audit_log (
        id text COLLATE "C" PRIMARY KEY,
        time bigint NOT NULL,
        username text NOT NULL,
        role text NOT NULL,
        organization_id text,
        project_id text,
        action text NOT NULL,
        resource text NOT NULL,
        resource_id text,
        method text NOT NULL,
        path text NOT NULL,
        status integer NOT NULL,
        address text NOT NULL,
        before_json text,
        after_json text
      )`,
      `CREATE INDEX spindle_audit_log_time ON spindle_audit_log (time, id)`,
      `CREATE INDEX spindle_audit_log_username ON spindle_audit_log (username, time)`,
      `CREATE INDEX spindle_audit_log_resource ON spindle_audit_log (resource, time)`,
      `CREATE INDEX spindle_audit_log_organization ON spindle_audit_log (organization_id, time)`,
    ],
  },
  {
    // The cluster node holding each session: nodes sharing the database restore only their own,
    // and one adopts the sessions of a node that went down.
    version: 4,
    name: 'session node',
    statements: [`ALTER TABLE spindle_sessions ADD COLUMN node text NOT NULL DEFAULT ''`],
  },
  {
    // Each cluster node sharing the database holds a slot, part of the message ids it makes.
    version: 5,
    name: 'node slots',
    statements: [`CREATE TABLE spindle_node_slots (slot integer PRIMARY KEY, node text NOT NULL UNIQUE)`],
  },
];
