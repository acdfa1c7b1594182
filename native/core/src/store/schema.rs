//! Versioned schema migrations. `PRAGMA user_version` holds the number of migrations applied;
//! migration `i` (0-based) takes the schema from version `i` to `i + 1` and runs in one transaction
//! together with the version bump, so a crash during a migration leaves the previous version.
//! Never edit a released migration: append a new one.

use rusqlite::Connection;

use super::{StoreError, StoreErrorCode};

pub const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    "
    CREATE TABLE sessions (
        client_id TEXT PRIMARY KEY NOT NULL,
        expiry_interval INTEGER NOT NULL,
        disconnected_at INTEGER,
        username TEXT,
        -- the will, present when will_qos is not null
        will_topic TEXT,
        will_payload BLOB,
        will_qos INTEGER,
        will_retain INTEGER,
        will_properties BLOB,
        will_expires_at INTEGER,
        will_delay INTEGER
    ) WITHOUT ROWID;

    CREATE TABLE subscriptions (
        client_id TEXT NOT NULL,
        filter TEXT NOT NULL,
        options INTEGER NOT NULL,
        subscription_id INTEGER NOT NULL,
        PRIMARY KEY (client_id, filter)
    ) WITHOUT ROWID;

    -- a message is stored once; deliveries and retained entries refer to it, and it is deleted
    -- when the last of them goes
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY NOT NULL,
        topic TEXT NOT NULL,
        payload BLOB NOT NULL,
        qos INTEGER NOT NULL,
        retain INTEGER NOT NULL,
        properties BLOB,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX messages_expiry ON messages (expires_at) WHERE expires_at > 0;

    CREATE TABLE deliveries (
        client_id TEXT NOT NULL,
        message_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        state INTEGER NOT NULL,       -- 0 queued, 1 inflight, 2 pubrel
        packet_id INTEGER NOT NULL,
        qos INTEGER NOT NULL,
        retain INTEGER NOT NULL,
        subscription_ids BLOB,        -- u32 little-endian each, null when none
        PRIMARY KEY (client_id, message_id)
    ) WITHOUT ROWID;
    CREATE INDEX deliveries_seq ON deliveries (client_id, seq);
    CREATE INDEX deliveries_message ON deliveries (message_id);

    CREATE TABLE retained (
        topic TEXT PRIMARY KEY NOT NULL,
        message_id INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX retained_message ON retained (message_id);

    CREATE TABLE incoming_qos2 (
        client_id TEXT NOT NULL,
        packet_id INTEGER NOT NULL,
        PRIMARY KEY (client_id, packet_id)
    ) WITHOUT ROWID;

    CREATE TABLE admin (
        kind TEXT NOT NULL,
        id TEXT NOT NULL,
        doc TEXT NOT NULL,            -- JSON
        PRIMARY KEY (kind, id)
    ) WITHOUT ROWID;
    ",
    // 2: a will's Message Expiry Interval gets its own column. Version 1 kept it in
    // will_expires_at as minus the interval (0: none), and never held any other value there.
    "
    ALTER TABLE sessions RENAME COLUMN will_expires_at TO will_expiry_interval;
    UPDATE sessions SET will_expiry_interval = -will_expiry_interval WHERE will_expiry_interval < 0;
    ",
    // 3: the audit log of the admin APIs: appended, queried newest first by user, resource,
    // organization and time range, pruned by age; never updated.
    "
    CREATE TABLE audit_log (
        id TEXT PRIMARY KEY NOT NULL,
        time INTEGER NOT NULL,        -- ms since the epoch
        username TEXT NOT NULL,
        role TEXT NOT NULL,
        organization_id TEXT,
        project_id TEXT,
        action TEXT NOT NULL,
        resource TEXT NOT NULL,
        resource_id TEXT,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        status INTEGER NOT NULL,
        address TEXT NOT NULL,
        before_json TEXT,             -- JSON, null when none
        after_json TEXT
    );
    CREATE INDEX audit_log_time ON audit_log (time, id);
    CREATE INDEX audit_log_username ON audit_log (username, time);
    CREATE INDEX audit_log_resource ON audit_log (resource, time);
    CREATE INDEX audit_log_organization ON audit_log (organization_id, time);
    ",
];

pub fn schema_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

pub(crate) fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<(), StoreError> {
    let mig = |e: rusqlite::Error, what: &str| StoreError::new(StoreErrorCode::Migration, format!("{what}: {e}"));
    let current = schema_version(conn).map_err(|e| StoreError::new(StoreErrorCode::Migration, e.message))?;
    let target = migrations.len() as i64;
    if current > target {
        return Err(StoreError::new(
            StoreErrorCode::Migration,
            format!("the database has schema version {current}, newer than this build knows ({target}); refusing to open it"),
        ));
    }
    for version in current..target {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| mig(e, "cannot begin a migration"))?;
        tx.execute_batch(migrations[version as usize]).map_err(|e| mig(e, &format!("migration to version {}", version + 1)))?;
        tx.pragma_update(None, "user_version", version + 1).map_err(|e| mig(e, "cannot set user_version"))?;
        tx.commit().map_err(|e| mig(e, &format!("cannot commit migration to version {}", version + 1)))?;
    }
    Ok(())
}
