// MySQL / MariaDB schema, as an ordered list of migrations applied at open() (see ../sql/migration.ts).
// Same tables as the PostgreSQL backend. Keys (client ids, filters, topics, admin ids) are
// VARBINARY: byte-wise, case-sensitive and without PAD SPACE, as MQTT compares them (a utf8mb4
// collation would make "a" equal "A" or "a "). InnoDB caps an index at 3072 bytes, hence the
// length limits below (checked by the store before a call is queued, see KEY_LIMITS). DDL commits
// implicitly in MySQL, so every statement is idempotent (IF NOT EXISTS): a migration interrupted
// half-way is simply run again.
import { AUDIT_LIMITS } from '../audit.ts';
import type { Migration } from '../sql/migration.ts';

/** Byte lengths of the VARBINARY key columns (client_id + filter = 3072, InnoDB's index limit). */
export const KEY_LIMITS = { clientId: 1024, filter: 2048, topic: 3072, adminKind: 255, adminId: 2048 } as const;

const TABLE = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin ROW_FORMAT=DYNAMIC';

/** Renames a column unless that was done already, so that the migration can run again. MySQL 8
 * has no RENAME COLUMN IF EXISTS (MariaDB has), hence a statement prepared from the catalog. */
function renameColumnOnce(table: string, from: string, to: string): string[] {
  return [
    `SET @spindle_rename = IF(EXISTS(SELECT 1 FROM information_schema.columns
       WHERE table_schema = DATABASE() AND table_name = '${table}' AND column_name = '${from}'),
       'ALTER TABLE ${table} RENAME COLUMN ${from} TO ${to}', 'DO 0')`,
    'PREPARE spindle_rename FROM @spindle_rename',
    'EXECUTE spindle_rename',
    'DEALLOCATE PREPARE spindle_rename',
  ];
}

export const MYSQL_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    statements: [
      `CREATE TABLE IF NOT EXISTS spindle_sessions (
        client_id VARBINARY(${KEY_LIMITS.clientId}) NOT NULL PRIMARY KEY,
        expiry_interval INT UNSIGNED NOT NULL,
        disconnected_at BIGINT NULL,
        expires_at BIGINT NULL,
        username TEXT NULL,
        will_topic TEXT NULL,
        will_payload LONGBLOB NULL,
        will_qos TINYINT UNSIGNED NULL,
        will_retain TINYINT(1) NULL,
        will_properties LONGBLOB NULL,
        will_expires_at BIGINT NULL,
        will_delay BIGINT UNSIGNED NULL,
        KEY spindle_sessions_expires_at (expires_at)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_subscriptions (
        client_id VARBINARY(${KEY_LIMITS.clientId}) NOT NULL,
        filter VARBINARY(${KEY_LIMITS.filter}) NOT NULL,
        options TINYINT UNSIGNED NOT NULL,
        subscription_id INT UNSIGNED NOT NULL,
        PRIMARY KEY (client_id, filter)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_messages (
        id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
        topic TEXT NOT NULL,
        payload LONGBLOB NOT NULL,
        qos TINYINT UNSIGNED NOT NULL,
        retain TINYINT(1) NOT NULL,
        properties LONGBLOB NULL,
        expires_at BIGINT NOT NULL,
        KEY spindle_messages_expires_at (expires_at)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_deliveries (
        client_id VARBINARY(${KEY_LIMITS.clientId}) NOT NULL,
        message_id BIGINT UNSIGNED NOT NULL,
        seq BIGINT UNSIGNED NOT NULL,
        state TINYINT UNSIGNED NOT NULL,
        packet_id SMALLINT UNSIGNED NOT NULL,
        qos TINYINT UNSIGNED NOT NULL,
        retain TINYINT(1) NOT NULL,
        subscription_ids TEXT NOT NULL,
        PRIMARY KEY (client_id, message_id),
        KEY spindle_deliveries_seq (client_id, seq),
        KEY spindle_deliveries_message (message_id)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_incoming_qos2 (
        client_id VARBINARY(${KEY_LIMITS.clientId}) NOT NULL,
        packet_id SMALLINT UNSIGNED NOT NULL,
        PRIMARY KEY (client_id, packet_id)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_retained (
        topic VARBINARY(${KEY_LIMITS.topic}) NOT NULL PRIMARY KEY,
        message_id BIGINT UNSIGNED NOT NULL,
        KEY spindle_retained_message (message_id)
      ) ${TABLE}`,
      `CREATE TABLE IF NOT EXISTS spindle_admin (
        kind VARBINARY(${KEY_LIMITS.adminKind}) NOT NULL,
        id VARBINARY(${KEY_LIMITS.adminId}) NOT NULL,
        doc LONGTEXT NOT NULL,
        PRIMARY KEY (kind, id)
      ) ${TABLE}`,
    ],
  },
  {
    // Version 1 kept a will's Message Expiry Interval in will_expires_at as minus the interval
    // (0: none), and never any other value. Run again after an interruption, the rename is
    // skipped and the UPDATE finds nothing negative left.
    version: 2,
    name: 'will expiry interval column',
    statements: [
      ...renameColumnOnce('spindle_sessions', 'will_expires_at', 'will_expiry_interval'),
      'UPDATE spindle_sessions SET will_expiry_interval = -will_expiry_interval WHERE will_expiry_interval < 0',
    ],
  },
  {
    // The audit log of the admin APIs: appended, queried newest first by user, resource,
    // organization and time range, pruned by age; never updated. The columns a query filters on
    // are VARBINARY (byte-wise equality, as in the other backends), sized by AUDIT_LIMITS
    // (../audit.ts), which every backend checks before an entry is queued.
    version: 3,
    name: 'audit log',
    statements: [
      `CREATE TABLE IF NOT EXISTS spindle_audit_log (
        id VARBINARY(${AUDIT_LIMITS.id}) NOT NULL PRIMARY KEY,
        time BIGINT NOT NULL,
        username VARBINARY(${AUDIT_LIMITS.username}) NOT NULL,
        role TEXT NOT NULL,
        organization_id VARBINARY(${AUDIT_LIMITS.organizationId}) NULL,
        project_id VARBINARY(${AUDIT_LIMITS.projectId}) NULL,
        action VARBINARY(${AUDIT_LIMITS.action}) NOT NULL,
        resource VARBINARY(${AUDIT_LIMITS.resource}) NOT NULL,
        resource_id VARBINARY(${AUDIT_LIMITS.resourceId}) NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        status SMALLINT UNSIGNED NOT NULL,
        address TEXT NOT NULL,
        before_json MEDIUMTEXT NULL,
        after_json MEDIUMTEXT NULL,
        KEY spindle_audit_log_time (time, id),
        KEY spindle_audit_log_username (username, time),
        KEY spindle_audit_log_resource (resource, time),
        KEY spindle_audit_log_organization (organization_id, time)
      ) ${TABLE}`,
    ],
  },
  {
    // The cluster node holding each session: nodes sharing the database restore only their own,
    // and one adopts the sessions of a node that went down.
    version: 4,
    name: 'session node',
    statements: [`ALTER TABLE spindle_sessions ADD COLUMN node VARBINARY(255) NOT NULL DEFAULT ''`],
  },
  {
    // Each cluster node sharing the database holds a slot, part of the message ids it makes.
    version: 5,
    name: 'node slots',
    statements: [`CREATE TABLE spindle_node_slots (slot INT PRIMARY KEY, node VARBINARY(255) NOT NULL UNIQUE) ENGINE=InnoDB`],
  },
];
