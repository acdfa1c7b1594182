//! The SQL of each operation. Every function runs inside the writer's open transaction and uses
//! cached prepared statements.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::*;

fn check_id(what: &str, v: i64) -> Result<(), StoreError> {
    if v < 0 {
        return Err(StoreError::new(StoreErrorCode::Invalid, format!("{what} must be in 0..2^63, not {v}")));
    }
    Ok(())
}

fn encode_ids(ids: &[u32]) -> Option<Vec<u8>> {
    if ids.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(ids.len() * 4);
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    Some(out)
}

fn decode_ids(blob: Option<Vec<u8>>) -> Vec<u32> {
    match blob {
        None => Vec::new(),
        Some(b) => b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
    }
}

pub(crate) fn apply(conn: &Connection, op: &Op) -> Result<Reply, StoreError> {
    match op {
        Op::SaveSession(s) => save_session(conn, s).map(|_| Reply::None),
        Op::DeleteSession(client_id) => delete_session(conn, client_id).map(|_| Reply::None),
        Op::LoadSessions => load_sessions(conn).map(Reply::Sessions),
        Op::AddSubscription(s) => {
            conn.prepare_cached(
                "INSERT INTO subscriptions (client_id, filter, options, subscription_id) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (client_id, filter) DO UPDATE SET options = excluded.options, subscription_id = excluded.subscription_id",
            )?
            .execute(params![s.client_id, s.filter, s.options, s.subscription_id])?;
            Ok(Reply::None)
        }
        Op::RemoveSubscription { client_id, filter } => {
            conn.prepare_cached("DELETE FROM subscriptions WHERE client_id = ?1 AND filter = ?2")?.execute(params![client_id, filter])?;
            Ok(Reply::None)
        }
        Op::LoadSubscriptions(client_id) => load_subscriptions(conn, client_id.as_deref()).map(Reply::Subscriptions),
        Op::AddMessage(m, deliveries) => add_message(conn, m, deliveries).map(|_| Reply::None),
        Op::UpdateDelivery { client_id, message_id, state, packet_id } => {
            conn.prepare_cached("UPDATE deliveries SET state = ?3, packet_id = ?4 WHERE client_id = ?1 AND message_id = ?2")?
                .execute(params![client_id, message_id, *state as u8, packet_id])?;
            Ok(Reply::None)
        }
        Op::RemoveDelivery { client_id, message_id } => {
            let n = conn
                .prepare_cached("DELETE FROM deliveries WHERE client_id = ?1 AND message_id = ?2")?
                .execute(params![client_id, message_id])?;
            if n > 0 {
                collect_message(conn, *message_id)?;
            }
            Ok(Reply::None)
        }
        Op::LoadDeliveries(client_id) => load_deliveries(conn, client_id).map(Reply::Deliveries),
        Op::AddIncomingQos2 { client_id, packet_id } => {
            conn.prepare_cached("INSERT OR IGNORE INTO incoming_qos2 (client_id, packet_id) VALUES (?1, ?2)")?
                .execute(params![client_id, packet_id])?;
            Ok(Reply::None)
        }
        Op::RemoveIncomingQos2 { client_id, packet_id } => {
            conn.prepare_cached("DELETE FROM incoming_qos2 WHERE client_id = ?1 AND packet_id = ?2")?
                .execute(params![client_id, packet_id])?;
            Ok(Reply::None)
        }
        Op::LoadIncomingQos2(client_id) => {
            let mut stmt = conn.prepare_cached("SELECT packet_id FROM incoming_qos2 WHERE client_id = ?1 ORDER BY packet_id")?;
            let ids = stmt.query_map(params![client_id], |r| r.get::<_, u16>(0))?.collect::<Result<Vec<_>, _>>()?;
            Ok(Reply::PacketIds(ids))
        }
        Op::SetRetained(topic, m) => {
            put_message(conn, m)?;
            let previous: Option<i64> = conn
                .prepare_cached("SELECT message_id FROM retained WHERE topic = ?1")?
                .query_row(params![topic], |r| r.get(0))
                .optional()?;
            conn.prepare_cached(
                "INSERT INTO retained (topic, message_id) VALUES (?1, ?2)
                 ON CONFLICT (topic) DO UPDATE SET message_id = excluded.message_id",
            )?
            .execute(params![topic, m.id])?;
            if let Some(previous) = previous {
                if previous != m.id {
                    collect_message(conn, previous)?;
                }
            }
            Ok(Reply::None)
        }
        Op::DeleteRetained(topic) => {
            let previous: Option<i64> =
                conn.prepare_cached("DELETE FROM retained WHERE topic = ?1 RETURNING message_id")?.query_row(params![topic], |r| r.get(0)).optional()?;
            if let Some(previous) = previous {
                collect_message(conn, previous)?;
            }
            Ok(Reply::None)
        }
        Op::LoadRetained => {
            let mut stmt = conn.prepare_cached(
                "SELECT r.topic, m.id, m.topic, m.payload, m.qos, m.retain, m.properties, m.expires_at
                 FROM retained r JOIN messages m ON m.id = r.message_id ORDER BY r.topic",
            )?;
            let rows = stmt
                .query_map([], |r| Ok(Retained { topic: r.get(0)?, message: message_from_row(r, 1)? }))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Reply::Retained(rows))
        }
        Op::DeleteExpired(now) => delete_expired(conn, *now).map(Reply::Expired),
        Op::PutAdmin { kind, id, doc } => {
            conn.prepare_cached("INSERT INTO admin (kind, id, doc) VALUES (?1, ?2, ?3) ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc")?
                .execute(params![kind, id, doc])?;
            Ok(Reply::None)
        }
        Op::GetAdmin { kind, id } => {
            let doc = conn
                .prepare_cached("SELECT doc FROM admin WHERE kind = ?1 AND id = ?2")?
                .query_row(params![kind, id], |r| r.get(0))
                .optional()?;
            Ok(Reply::Admin(doc))
        }
        Op::DeleteAdmin { kind, id } => {
            let n = conn.prepare_cached("DELETE FROM admin WHERE kind = ?1 AND id = ?2")?.execute(params![kind, id])?;
            Ok(Reply::Bool(n > 0))
        }
        Op::ListAdmin(kind) => {
            let mut stmt = conn.prepare_cached("SELECT id, doc FROM admin WHERE kind = ?1 ORDER BY id")?;
            let rows = stmt.query_map(params![kind], |r| Ok(AdminDoc { id: r.get(0)?, doc: r.get(1)? }))?.collect::<Result<Vec<_>, _>>()?;
            Ok(Reply::AdminList(rows))
        }
        Op::Stats => {
            let stats = conn
                .prepare_cached(
                    "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM messages),
                            (SELECT count(*) FROM deliveries), (SELECT count(*) FROM retained)",
                )?
                .query_row([], |r| {
                    Ok(Stats {
                        sessions: r.get::<_, i64>(0)? as u64,
                        messages: r.get::<_, i64>(1)? as u64,
                        deliveries: r.get::<_, i64>(2)? as u64,
                        retained: r.get::<_, i64>(3)? as u64,
                    })
                })?;
            Ok(Reply::Stats(stats))
        }
        Op::AppendAudit(entries) => append_audit(conn, entries).map(|_| Reply::None),
        Op::QueryAudit(q) => query_audit(conn, q).map(Reply::Audit),
        Op::PruneAudit { before, limit } => {
            // By rowid: this SQLite is built without DELETE ... LIMIT.
            let n = conn
                .prepare_cached("DELETE FROM audit_log WHERE rowid IN (SELECT rowid FROM audit_log WHERE time < ?1 LIMIT ?2)")?
                .execute(params![before, limit])?;
            Ok(Reply::Count(n as u64))
        }
    }
}

fn append_audit(conn: &Connection, entries: &[AuditEntry]) -> Result<(), StoreError> {
    // ON CONFLICT, not OR IGNORE: only a repeated id is skipped (a retried append), never a NOT NULL failure.
    let mut stmt = conn.prepare_cached(
        "INSERT INTO audit_log (id, time, username, role, organization_id, project_id, action, resource, resource_id,
             method, path, status, address, before_json, after_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT (id) DO NOTHING",
    )?;
    for e in entries {
        stmt.execute(params![
            e.id,
            e.time,
            e.username,
            e.role,
            e.organization_id,
            e.project_id,
            e.action,
            e.resource,
            e.resource_id,
            e.method,
            e.path,
            e.status,
            e.address,
            e.before,
            e.after,
        ])?;
    }
    Ok(())
}

/// The WHERE clause of an audit query (`1` when it has no filter) and its parameters.
fn audit_filter(q: &AuditQuery) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut terms: Vec<&str> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let texts = [
        ("username = ?", &q.username),
        ("action = ?", &q.action),
        ("resource = ?", &q.resource),
        ("resource_id = ?", &q.resource_id),
        ("organization_id = ?", &q.organization_id),
        ("project_id = ?", &q.project_id),
    ];
    for (term, value) in texts {
        if let Some(v) = value {
            terms.push(term);
            values.push(Value::Text(v.clone()));
        }
    }
    if let Some(from) = q.from {
        terms.push("time >= ?");
        values.push(Value::Integer(from));
    }
    if let Some(to) = q.to {
        terms.push("time <= ?");
        values.push(Value::Integer(to));
    }
    let clause = if terms.is_empty() { "1".to_string() } else { terms.join(" AND ") };
    (clause, values)
}

fn query_audit(conn: &Connection, q: &AuditQuery) -> Result<AuditPage, StoreError> {
    if q.offset < 0 || q.limit < 0 {
        return Err(StoreError::new(StoreErrorCode::Invalid, "audit query offset and limit must not be negative"));
    }
    let (clause, values) = audit_filter(q);
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM audit_log WHERE {clause}"))?
        .query_row(rusqlite::params_from_iter(values.iter()), |r| r.get(0))?;
    let mut page = values;
    page.push(rusqlite::types::Value::Integer(q.limit));
    page.push(rusqlite::types::Value::Integer(q.offset));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, time, username, role, organization_id, project_id, action, resource, resource_id,
                method, path, status, address, before_json, after_json
         FROM audit_log WHERE {clause} ORDER BY time DESC, id DESC LIMIT ? OFFSET ?"
    ))?;
    let entries = stmt
        .query_map(rusqlite::params_from_iter(page.iter()), |r| {
            Ok(AuditEntry {
                id: r.get(0)?,
                time: r.get(1)?,
                username: r.get(2)?,
                role: r.get(3)?,
                organization_id: r.get(4)?,
                project_id: r.get(5)?,
                action: r.get(6)?,
                resource: r.get(7)?,
                resource_id: r.get(8)?,
                method: r.get(9)?,
                path: r.get(10)?,
                status: r.get(11)?,
                address: r.get(12)?,
                before: r.get(13)?,
                after: r.get(14)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AuditPage { entries, total: total as u64 })
}

fn save_session(conn: &Connection, s: &Session) -> Result<(), StoreError> {
    let w = s.will.as_ref();
    conn.prepare_cached(
        "INSERT OR REPLACE INTO sessions (client_id, expiry_interval, disconnected_at, username,
             will_topic, will_payload, will_qos, will_retain, will_properties, will_expiry_interval, will_delay)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        s.client_id,
        s.expiry_interval,
        s.disconnected_at,
        s.username,
        w.map(|w| &w.topic),
        w.map(|w| &w.payload),
        w.map(|w| w.qos),
        w.map(|w| w.retain),
        w.and_then(|w| w.properties.as_ref()),
        w.map(|w| w.expiry_interval),
        w.map(|w| w.delay),
    ])?;
    Ok(())
}

fn delete_session(conn: &Connection, client_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM sessions WHERE client_id = ?1")?.execute(params![client_id])?;
    conn.prepare_cached("DELETE FROM subscriptions WHERE client_id = ?1")?.execute(params![client_id])?;
    conn.prepare_cached("DELETE FROM incoming_qos2 WHERE client_id = ?1")?.execute(params![client_id])?;
    let ids = {
        let mut stmt = conn.prepare_cached("DELETE FROM deliveries WHERE client_id = ?1 RETURNING message_id")?;
        let ids = stmt.query_map(params![client_id], |r| r.get::<_, i64>(0))?.collect::<Result<Vec<_>, _>>()?;
        ids
    };
    for id in ids {
        collect_message(conn, id)?;
    }
    Ok(())
}

fn load_sessions(conn: &Connection) -> Result<Vec<Session>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT client_id, expiry_interval, disconnected_at, username, will_topic, will_payload, will_qos,
                will_retain, will_properties, will_expiry_interval, will_delay
         FROM sessions ORDER BY client_id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            let will_qos: Option<u8> = r.get(6)?;
            let will = match will_qos {
                None => None,
                Some(qos) => Some(Will {
                    topic: r.get(4)?,
                    payload: r.get(5)?,
                    qos,
                    retain: r.get(7)?,
                    properties: r.get(8)?,
                    expiry_interval: r.get(9)?,
                    delay: r.get(10)?,
                }),
            };
            Ok(Session { client_id: r.get(0)?, expiry_interval: r.get(1)?, disconnected_at: r.get(2)?, username: r.get(3)?, will })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

fn load_subscriptions(conn: &Connection, client_id: Option<&str>) -> Result<Vec<Subscription>, StoreError> {
    let map = |r: &Row<'_>| -> rusqlite::Result<Subscription> {
        Ok(Subscription { client_id: r.get(0)?, filter: r.get(1)?, options: r.get(2)?, subscription_id: r.get(3)? })
    };
    let rows = match client_id {
        Some(c) => conn
            .prepare_cached("SELECT client_id, filter, options, subscription_id FROM subscriptions WHERE client_id = ?1 ORDER BY filter")?
            .query_map(params![c], map)?
            .collect::<Result<Vec<_>, _>>()?,
        None => conn
            .prepare_cached("SELECT client_id, filter, options, subscription_id FROM subscriptions ORDER BY client_id, filter")?
            .query_map([], map)?
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(rows)
}

fn put_message(conn: &Connection, m: &Message) -> Result<(), StoreError> {
    check_id("message id", m.id)?;
    conn.prepare_cached(
        "INSERT INTO messages (id, topic, payload, qos, retain, properties, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (id) DO UPDATE SET topic = excluded.topic, payload = excluded.payload, qos = excluded.qos,
             retain = excluded.retain, properties = excluded.properties, expires_at = excluded.expires_at",
    )?
    .execute(params![m.id, m.topic, m.payload, m.qos, m.retain, m.properties, m.expires_at])?;
    Ok(())
}

fn add_message(conn: &Connection, m: &Message, deliveries: &[NewDelivery]) -> Result<(), StoreError> {
    for d in deliveries {
        check_id("delivery seq", d.seq)?;
    }
    put_message(conn, m)?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO deliveries (client_id, message_id, seq, state, packet_id, qos, retain, subscription_ids)
         VALUES (?1, ?2, ?3, 0, 0, ?4, ?5, ?6)
         ON CONFLICT (client_id, message_id) DO UPDATE SET seq = excluded.seq, state = 0, packet_id = 0,
             qos = excluded.qos, retain = excluded.retain, subscription_ids = excluded.subscription_ids",
    )?;
    for d in deliveries {
        stmt.execute(params![d.client_id, m.id, d.seq, d.qos, d.retain, encode_ids(&d.subscription_ids)])?;
    }
    Ok(())
}

/// Deletes message `id` when no delivery and no retained entry refers to it any more.
fn collect_message(conn: &Connection, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "DELETE FROM messages WHERE id = ?1
           AND NOT EXISTS (SELECT 1 FROM deliveries WHERE message_id = ?1)
           AND NOT EXISTS (SELECT 1 FROM retained WHERE message_id = ?1)",
    )?
    .execute(params![id])?;
    Ok(())
}

fn message_from_row(r: &Row<'_>, at: usize) -> rusqlite::Result<Message> {
    Ok(Message {
        id: r.get(at)?,
        topic: r.get(at + 1)?,
        payload: r.get(at + 2)?,
        qos: r.get(at + 3)?,
        retain: r.get(at + 4)?,
        properties: r.get(at + 5)?,
        expires_at: r.get(at + 6)?,
    })
}

fn load_deliveries(conn: &Connection, client_id: &str) -> Result<Vec<LoadedDelivery>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.client_id, d.message_id, d.seq, d.state, d.packet_id, d.qos, d.retain, d.subscription_ids,
                m.id, m.topic, m.payload, m.qos, m.retain, m.properties, m.expires_at
         FROM deliveries d JOIN messages m ON m.id = d.message_id
         WHERE d.client_id = ?1 ORDER BY d.seq",
    )?;
    let rows = stmt
        .query_map(params![client_id], |r| {
            let state: u8 = r.get(3)?;
            Ok(LoadedDelivery {
                delivery: Delivery {
                    client_id: r.get(0)?,
                    message_id: r.get(1)?,
                    seq: r.get(2)?,
                    state: DeliveryState::from_u8(state).unwrap_or(DeliveryState::Queued),
                    packet_id: r.get(4)?,
                    qos: r.get(5)?,
                    retain: r.get(6)?,
                    subscription_ids: decode_ids(r.get(7)?),
                },
                message: message_from_row(r, 8)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

fn delete_expired(conn: &Connection, now: i64) -> Result<Expired, StoreError> {
    conn.prepare_cached("DELETE FROM deliveries WHERE message_id IN (SELECT id FROM messages WHERE expires_at > 0 AND expires_at <= ?1)")?
        .execute(params![now])?;
    conn.prepare_cached("DELETE FROM retained WHERE message_id IN (SELECT id FROM messages WHERE expires_at > 0 AND expires_at <= ?1)")?
        .execute(params![now])?;
    let messages = conn.prepare_cached("DELETE FROM messages WHERE expires_at > 0 AND expires_at <= ?1")?.execute(params![now])? as u64;
    let sessions = {
        let mut stmt = conn.prepare_cached(
            "SELECT client_id FROM sessions
             WHERE disconnected_at IS NOT NULL AND expiry_interval <> 4294967295
               AND disconnected_at + expiry_interval * 1000 <= ?1
             ORDER BY client_id",
        )?;
        let ids = stmt.query_map(params![now], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        ids
    };
    for client_id in &sessions {
        delete_session(conn, client_id)?;
    }
    Ok(Expired { sessions, messages })
}
