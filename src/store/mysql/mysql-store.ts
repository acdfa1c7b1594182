// MYSQL store (MySQL 8 / MariaDB 10.5+) through mysql2: its SQL and its driver on the shared SQL
// store skeleton (../sql/sql-store.ts: every call queued into the group commit so concurrent writes
// share one transaction and reads see every write issued before them; addMessage calls queued
// together become multi-row INSERTs; the audit log's flows and SQL are shared too). Schema
// created and migrated at open() under a named lock (GET_LOCK). The group commit runs on ONE
// dedicated connection; mysql2 runs the statements of one connection in order, so pipelined jobs
// just issue them.
//
// The connection runs with autocommit off: should InnoDB roll a batch back on its own (deadlock),
// the statements after it still belong to a transaction that the failed batch rolls back, never
// autocommitted halves. When the connection dies (server restart, KILL, network), the batch
// rejects its callers with STORE_UNAVAILABLE, the connection is dropped, and the next batch
// (after the group commit's backoff) connects afresh. `healthy` is false while batches fail.
import { createHash } from 'node:crypto';

import mysql from 'mysql2/promise';
import type { Connection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';

import { StoreError } from '../errors.ts';
import { AUDIT_COLUMNS, type AuditRow } from '../sql/audit-rows.ts';
import { pending } from '../sql/migration.ts';
import {
  DELIVERY_COLUMNS,
  MESSAGE_COLUMNS,
  SESSION_COLUMNS,
  messageRow,
  sessionRow,
  stateCode,
  text,
  toAdminDoc,
  toDelivery,
  toRetained,
  toSession,
  toStats,
  toSubscription,
  values,
  type DeliveryRow,
  type Row,
} from '../sql/rows.ts';
import { SqlStore, type DeliveryKey } from '../sql/sql-store.ts';
import type {
  AdminKind,
  DeliveryState,
  LoadedDelivery,
  NewDelivery,
  Store,
  StoredMessage,
  StoredRetained,
  StoredSession,
  StoredSubscription,
  StoreStats,
} from '../types.ts';
import { classifyMysql } from './classify.ts';
import { KEY_LIMITS, MYSQL_MIGRATIONS } from './migrations.ts';

type Tx = Connection;

export interface MysqlStoreOptions {
  /** mysql://user:password@host:port/database */
  url: string;
  /** Override the URL's user and password. */
  username?: string;
  password?: string;
  /** Database to keep the tables in (created when missing); the URL's database when absent. */
  database?: string;
  /** Seconds open() waits for another node's migration (GET_LOCK); default 60. */
  migrationLockTimeout?: number;
}

/** Row-value pairs per DELETE: keeps the statement well under max_allowed_packet. */
const REMOVE_CHUNK = 2_000;
/** Bytes of row data per multi-row INSERT at most (escaped; buffers go as hex, twice their size). */
const STATEMENT_BYTES = 4 * 1024 * 1024;

const INSERT_AUDIT = `INSERT INTO spindle_audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`;
const INSERT_MESSAGES = `INSERT INTO spindle_messages (${MESSAGE_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`;
const SAVE_SESSION = `INSERT INTO spindle_sessions (${SESSION_COLUMNS.join(', ')}) VALUES (?)
  ON DUPLICATE KEY UPDATE ${SESSION_COLUMNS.slice(1).map((c) => `${c} = VALUES(${c})`).join(', ')}`;
const UPSERT_DELIVERIES = `INSERT INTO spindle_deliveries (${DELIVERY_COLUMNS.join(', ')}) VALUES ?
  ON DUPLICATE KEY UPDATE seq = VALUES(seq), state = 0, packet_id = 0, qos = VALUES(qos), retain = VALUES(retain),
    subscription_ids = VALUES(subscription_ids)`;

export class MysqlStore extends SqlStore<Tx, [unknown, unknown]> implements Store {
  readonly kind = 'MYSQL' as const;
  private conn: Connection | null = null;
  private readonly config: mysql.ConnectionOptions;
  private readonly database: string;
  /** The server's max_allowed_packet (read at open): a call that cannot fit is refused up front. */
  private maxPacket = 16 * 1024 * 1024;

  constructor(private readonly options: MysqlStoreOptions) {
    super('mysql', classifyMysql);
    const url = new URL(options.url);
    if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
      throw new StoreError('STORE_INVALID', `mysql store: unsupported URL scheme ${url.protocol}`);
    }
    const database = options.database ?? decodeURIComponent(url.pathname.replace(/^\//, ''));
    if (!database) throw new StoreError('STORE_INVALID', 'mysql store: no database in the URL or the options');
    this.database = database;
    this.config = {
      host: url.hostname || '127.0.0.1',
      port: url.port ? Number(url.port) : 3306,
      user: options.username ?? decodeURIComponent(url.username),
      password: options.password ?? decodeURIComponent(url.password),
      supportBigNumbers: true,
      bigNumberStrings: true,
      charset: 'UTF8MB4_UNICODE_CI',
      connectTimeout: 5_000,
      enableKeepAlive: true,
      multipleStatements: false,
    };
  }

  /** A new connection in our session settings; `useDatabase` false for the one that creates it. */
  private async connect(useDatabase: boolean): Promise<Connection> {
    const conn = await mysql.createConnection({ ...this.config, ...(useDatabase ? { database: this.database } : {}) });
    // A connection the server closes while idle reports it here (no query to reject): forget it,
    // the next batch connects again. Without a listener the error would crash the process.
    conn.on('error', () => {
      if (this.conn === conn) this.conn = null;
    });
    try {
      await conn.query(`SET SESSION autocommit = 0, SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'`);
    } catch (err) {
      conn.destroy();
      throw err;
    }
    return conn;
  }

  private drop(conn: Connection): void {
    if (this.conn === conn) this.conn = null;
    conn.destroy();
  }

  /** One transaction on the dedicated connection (connected first when there is none). */
  protected async transaction(body: (tx: Tx) => Promise<void>): Promise<void> {
    const conn = this.conn ?? (this.conn = await this.connect(true));
    try {
      // Not awaited on its own: the body's statements queue behind it on the same connection.
      const begin = conn.query('START TRANSACTION');
      begin.catch(() => {});
      await body(conn);
      await begin;
      await conn.query('COMMIT');
    } catch (err) {
      if (classifyMysql(err).code === 'STORE_UNAVAILABLE') {
        // The server rolled back when the connection went; nothing to send. Replace it.
        this.drop(conn);
        throw err;
      }
      try {
        await conn.query('ROLLBACK');
      } catch (rollbackErr) {
        this.drop(conn);
        throw new AggregateError([err, rollbackErr], 'mysql: batch failed and so did its ROLLBACK', { cause: err });
      }
      throw err;
    }
  }

  /** Creates the database when missing, migrates it, and keeps the connection for the group commit. */
  protected async connectAndMigrate(): Promise<void> {
    let conn: Connection | null = null;
    try {
      conn = await this.connect(false);
      await conn.query('CREATE DATABASE IF NOT EXISTS ?? CHARACTER SET utf8mb4 COLLATE utf8mb4_bin', [this.database]);
      await conn.query('USE ??', [this.database]);
      await this.migrate(conn);
      const [rows] = await conn.query<RowDataPacket[]>('SELECT @@max_allowed_packet AS p');
      this.maxPacket = Number(rows[0].p);
      await conn.query('COMMIT');
    } catch (err) {
      if (conn) conn.destroy();
      throw err;
    }
    this.conn = conn;
  }

  /** Applies pending migrations under a server-wide named lock (one per database). */
  private async migrate(conn: Connection): Promise<void> {
    const lock = `spindle_migrate_${createHash('sha1').update(this.database).digest('hex')}`;
    const [got] = await conn.query<RowDataPacket[]>('SELECT GET_LOCK(?, ?) AS got', [lock, this.options.migrationLockTimeout ?? 60]);
    if (Number(got[0].got) !== 1) throw new StoreError('STORE_MIGRATION', `mysql: timed out waiting for the migration lock of ${this.database}`);
    try {
      await conn.query(`CREATE TABLE IF NOT EXISTS spindle_schema_version (
        version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
        applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
      const [rows] = await conn.query<RowDataPacket[]>('SELECT COALESCE(MAX(version), 0) AS v FROM spindle_schema_version');
      for (const m of pending(MYSQL_MIGRATIONS, Number(rows[0].v), 'mysql')) {
        for (const statement of m.statements) await conn.query(statement);
        await conn.query('INSERT INTO spindle_schema_version (version, name) VALUES (?, ?)', [m.version, m.name]);
        await conn.query('COMMIT');
      }
      await conn.query('COMMIT');
    } finally {
      await conn.query('SELECT RELEASE_LOCK(?)', [lock]);
    }
  }

  protected async disconnect(): Promise<void> {
    const conn = this.conn;
    this.conn = null;
    if (conn) {
      try {
        await conn.end();
      } catch {
        conn.destroy();
      }
    }
  }

  protected rows(result: [unknown, unknown]): Row[] {
    return result[0] as Row[];
  }

  saveSession(s: StoredSession): Promise<void> {
    const bad = this.checkKey('client id', s.clientId, KEY_LIMITS.clientId) ?? (s.will ? this.checkSize(s.will.message.payload, s.will.message.properties) : undefined);
    if (bad) return Promise.reject(bad);
    const row = values(sessionRow(s), SESSION_COLUMNS);
    return this.exec(true, (tx) => tx.query(SAVE_SESSION, [row]));
  }

  deleteSession(clientId: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const del = tx.query('DELETE FROM spindle_sessions WHERE client_id = ?', [clientId]);
      await Promise.all([del, this.dropOwned(tx, [clientId])]);
    });
  }

  loadSessions(): Promise<StoredSession[]> {
    return this.read((tx) => tx.query('SELECT * FROM spindle_sessions'), (rows) => rows.map(toSession));
  }

  async takeSessions(from: string, to: string, clientIds?: readonly string[]): Promise<string[]> {
    if (clientIds !== undefined && clientIds.length === 0) return [];
    let taken: string[] = [];
    await this.exec(false, async (tx) => {
      // Locked, then moved: a session another node moves at the same time is moved once.
      const where = clientIds === undefined ? 'node = ?' : 'node = ? AND client_id IN (?)';
      const args = clientIds === undefined ? [from] : [from, clientIds];
      const rows = this.rows(await tx.query(`SELECT client_id FROM spindle_sessions WHERE ${where} FOR UPDATE`, args));
      taken = rows.map((r) => String((r as { client_id: Buffer | string }).client_id));
      if (taken.length > 0) await tx.query('UPDATE spindle_sessions SET node = ? WHERE node = ? AND client_id IN (?)', [to, from, taken]);
    });
    return taken;
  }

  async claimNodeSlot(node: string, max: number): Promise<number> {
    let slot = -1;
    await this.exec(false, async (tx) => {
      // The node's own slot; else the first free one (a slot or name taken meanwhile by another
      // node is skipped: nothing fails inside the transaction).
      for (let s = -1; s < max && slot < 0; s++) {
        if (s >= 0) await tx.query('INSERT IGNORE INTO spindle_node_slots (slot, node) VALUES (?, ?)', [s, node]);
        const rows = this.rows(await tx.query('SELECT slot FROM spindle_node_slots WHERE node = ?', [node]));
        if (rows.length > 0) slot = Number((rows[0] as { slot: number }).slot);
      }
    });
    if (slot < 0) throw new Error(`every one of the ${max} node slots of the shared store is taken: remove rows of nodes that are gone from spindle_node_slots`);
    return slot;
  }

  addSubscription(sub: StoredSubscription): Promise<void> {
    const bad = this.checkKey('client id', sub.clientId, KEY_LIMITS.clientId) ?? this.checkKey('topic filter', sub.filter, KEY_LIMITS.filter);
    if (bad) return Promise.reject(bad);
    return this.exec(true, (tx) =>
      tx.query(
        `INSERT INTO spindle_subscriptions (client_id, filter, options, subscription_id) VALUES (?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE options = VALUES(options), subscription_id = VALUES(subscription_id)`,
        [sub.clientId, sub.filter, sub.options, sub.subscriptionId],
      ),
    );
  }

  removeSubscription(clientId: string, filter: string): Promise<void> {
    return this.exec(true, (tx) => tx.query('DELETE FROM spindle_subscriptions WHERE client_id = ? AND filter = ?', [clientId, filter]));
  }

  loadSubscriptions(clientId?: string): Promise<StoredSubscription[]> {
    return this.read(
      (tx) =>
        clientId === undefined
          ? tx.query('SELECT * FROM spindle_subscriptions')
          : tx.query('SELECT * FROM spindle_subscriptions WHERE client_id = ?', [clientId]),
      (rows) => rows.map(toSubscription),
    );
  }

  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    const code = stateCode(state);
    return this.exec(true, (tx) =>
      tx.query('UPDATE spindle_deliveries SET state = ?, packet_id = ? WHERE client_id = ? AND message_id = ?', [code, packetId, clientId, messageId]),
    );
  }

  loadDeliveries(clientId: string): Promise<LoadedDelivery[]> {
    return this.read(
      (tx) =>
        tx.query(
          `SELECT d.*, m.topic, m.payload, m.qos AS m_qos, m.retain AS m_retain, m.properties, m.expires_at
           FROM spindle_deliveries d JOIN spindle_messages m ON m.id = d.message_id
           WHERE d.client_id = ? ORDER BY d.seq`,
          [clientId],
        ),
      (rows) => rows.map(toDelivery),
    );
  }

  addIncomingQos2(clientId: string, packetId: number): Promise<void> {
    const bad = this.checkKey('client id', clientId, KEY_LIMITS.clientId);
    if (bad) return Promise.reject(bad);
    return this.exec(true, (tx) =>
      tx.query('INSERT INTO spindle_incoming_qos2 (client_id, packet_id) VALUES (?, ?) ON DUPLICATE KEY UPDATE packet_id = packet_id', [clientId, packetId]),
    );
  }

  removeIncomingQos2(clientId: string, packetId: number): Promise<void> {
    return this.exec(true, (tx) => tx.query('DELETE FROM spindle_incoming_qos2 WHERE client_id = ? AND packet_id = ?', [clientId, packetId]));
  }

  loadIncomingQos2(clientId: string): Promise<number[]> {
    return this.read(
      (tx) => tx.query('SELECT packet_id FROM spindle_incoming_qos2 WHERE client_id = ? ORDER BY packet_id', [clientId]),
      (rows) => rows.map((r) => Number(r.packet_id)),
    );
  }

  setRetained(topic: string, message: StoredMessage): Promise<void> {
    const bad = this.checkKey('retained topic', topic, KEY_LIMITS.topic) ?? this.checkSize(message.payload, message.properties);
    if (bad) return Promise.reject(bad);
    return this.exec(false, async (tx) => {
      // Issued together (one connection runs them in order): the old entry is read before the upsert.
      const ins = tx.query(INSERT_MESSAGES, [[values(messageRow(message), MESSAGE_COLUMNS)]]);
      const old = tx.query<RowDataPacket[]>('SELECT message_id FROM spindle_retained WHERE topic = ? FOR UPDATE', [topic]);
      const up = tx.query(`INSERT INTO spindle_retained (topic, message_id) VALUES (?, ?)
                           ON DUPLICATE KEY UPDATE message_id = VALUES(message_id)`, [topic, message.id]);
      const [, [oldRows]] = await Promise.all([ins, old, up]);
      if (oldRows.length > 0) {
        const oldId = BigInt(oldRows[0].message_id as string);
        if (oldId !== message.id) await this.deleteUnreferencedMessages(tx, [oldId]);
      }
    });
  }

  deleteRetained(topic: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const old = tx.query<RowDataPacket[]>('SELECT message_id FROM spindle_retained WHERE topic = ? FOR UPDATE', [topic]);
      const del = tx.query('DELETE FROM spindle_retained WHERE topic = ?', [topic]);
      const [[oldRows]] = await Promise.all([old, del]);
      if (oldRows.length > 0) await this.deleteUnreferencedMessages(tx, [BigInt(oldRows[0].message_id as string)]);
    });
  }

  loadRetained(): Promise<StoredRetained[]> {
    return this.read(
      (tx) => tx.query('SELECT r.topic AS r_topic, m.* FROM spindle_retained r JOIN spindle_messages m ON m.id = r.message_id'),
      (rows) => rows.map(toRetained),
    );
  }

  deleteExpired(now: number): Promise<{ sessions: string[]; messages: number }> {
    return this.write(false, async (tx) => {
      const d = tx.query(`DELETE d FROM spindle_deliveries d JOIN spindle_messages m ON m.id = d.message_id
                          WHERE m.expires_at <> 0 AND m.expires_at <= ?`, [now]);
      const r = tx.query(`DELETE r FROM spindle_retained r JOIN spindle_messages m ON m.id = r.message_id
                          WHERE m.expires_at <> 0 AND m.expires_at <= ?`, [now]);
      const gone = tx.query<ResultSetHeader>('DELETE FROM spindle_messages WHERE expires_at <> 0 AND expires_at <= ?', [now]);
      const expired = tx.query<RowDataPacket[]>('SELECT client_id FROM spindle_sessions WHERE expires_at IS NOT NULL AND expires_at <= ? FOR UPDATE', [now]);
      const del = tx.query('DELETE FROM spindle_sessions WHERE expires_at IS NOT NULL AND expires_at <= ?', [now]);
      const [, , [goneRes], [expiredRows]] = await Promise.all([d, r, gone, expired, del]);
      const sessions = expiredRows.map((row) => text(row.client_id));
      await this.dropOwned(tx, sessions);
      return { sessions, messages: goneRes.affectedRows };
    });
  }

  putAdmin(kind: AdminKind, id: string, doc: unknown): Promise<void> {
    const json = JSON.stringify(doc);
    if (json === undefined) return Promise.reject(new StoreError('STORE_INVALID', `admin document ${kind}/${id} is not JSON`));
    const bad = this.checkKey('admin kind', kind, KEY_LIMITS.adminKind) ?? this.checkKey('admin id', id, KEY_LIMITS.adminId);
    if (bad) return Promise.reject(bad);
    return this.exec(true, (tx) =>
      tx.query('INSERT INTO spindle_admin (kind, id, doc) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE doc = VALUES(doc)', [kind, id, json]),
    );
  }

  getAdmin<T = unknown>(kind: AdminKind, id: string): Promise<T | undefined> {
    return this.read(
      (tx) => tx.query('SELECT doc FROM spindle_admin WHERE kind = ? AND id = ?', [kind, id]),
      (rows) => (rows.length === 0 ? undefined : (JSON.parse(rows[0].doc as string) as T)),
    );
  }

  deleteAdmin(kind: AdminKind, id: string): Promise<boolean> {
    return this.write(true, async (tx) => {
      const [res] = await tx.query<ResultSetHeader>('DELETE FROM spindle_admin WHERE kind = ? AND id = ?', [kind, id]);
      return res.affectedRows > 0;
    });
  }

  listAdmin<T = unknown>(kind: AdminKind): Promise<{ id: string; doc: T }[]> {
    return this.read(
      (tx) => tx.query('SELECT id, doc FROM spindle_admin WHERE kind = ? ORDER BY id', [kind]),
      (rows) => rows.map((r) => toAdminDoc<T>(r)),
    );
  }

  stats(): Promise<StoreStats> {
    return this.read(
      (tx) =>
        tx.query(`SELECT (SELECT COUNT(*) FROM spindle_sessions) AS sessions, (SELECT COUNT(*) FROM spindle_messages) AS messages,
                         (SELECT COUNT(*) FROM spindle_deliveries) AS deliveries, (SELECT COUNT(*) FROM spindle_retained) AS retained`),
      (rows) => toStats(rows[0]),
    );
  }

  /** The MySQL connection id of the dedicated connection (null when not connected), for tests and diagnostics. */
  get connectionId(): number | null {
    return this.conn?.threadId ?? null;
  }

  protected override refuseMessage(message: StoredMessage, deliveries: NewDelivery[]): StoreError | undefined {
    let bad = this.checkSize(message.payload, message.properties);
    for (const d of deliveries) bad ??= this.checkKey('client id', d.clientId, KEY_LIMITS.clientId);
    return bad;
  }

  /** A key longer than its VARBINARY column is refused before it can fail a whole batch. */
  private checkKey(what: string, value: string, max: number): StoreError | undefined {
    const n = Buffer.byteLength(value);
    return n <= max ? undefined : new StoreError('STORE_INVALID', `mysql store: ${what} is ${n} bytes, more than the ${max} it can keep`);
  }

  /** A message whose escaped statement would exceed max_allowed_packet is refused up front. */
  private checkSize(payload: Buffer, properties: Buffer | null): StoreError | undefined {
    const n = 2 * (payload.length + (properties?.length ?? 0)) + 64 * 1024;
    return n <= this.maxPacket ? undefined : new StoreError('STORE_INVALID', `mysql store: message of ${payload.length} bytes does not fit the server's max_allowed_packet (${this.maxPacket})`);
  }

  protected placeholder(): string {
    return '?';
  }

  protected async selectRows(tx: Tx, sql: string, params: unknown[]): Promise<Row[]> {
    const [rows] = await tx.query<RowDataPacket[]>(sql, params);
    return rows;
  }

  /** Multi-row INSERTs, split to stay well below max_allowed_packet. */
  protected insertAuditRows(tx: Tx, rows: AuditRow[]): Promise<unknown>[] {
    const done: Promise<unknown>[] = [];
    let batch: unknown[][] = [];
    let bytes = 0;
    for (const row of rows) {
      const values = AUDIT_COLUMNS.map((c) => row[c]);
      // Escaping at most doubles a string; 3 bytes per UTF-16 unit is UTF-8's worst case.
      const n = 64 + values.reduce<number>((sum, v) => sum + (typeof v === 'string' ? 6 * v.length : 24), 0);
      if (batch.length > 0 && bytes + n > STATEMENT_BYTES) {
        done.push(tx.query(INSERT_AUDIT, [batch]));
        batch = [];
        bytes = 0;
      }
      batch.push(values);
      bytes += n;
    }
    if (batch.length > 0) done.push(tx.query(INSERT_AUDIT, [batch]));
    return done;
  }

  protected async deleteAuditRows(tx: Tx, before: number, limit: number): Promise<number> {
    const [res] = await tx.query<ResultSetHeader>('DELETE FROM spindle_audit_log WHERE time < ? LIMIT ?', [before, limit]);
    return res.affectedRows;
  }

  /** Multi-row INSERTs, split to stay well below max_allowed_packet. */
  protected insertMessageRows(tx: Tx, messages: StoredMessage[]): Promise<unknown>[] {
    const done: Promise<unknown>[] = [];
    let batch: unknown[][] = [];
    let bytes = 0;
    const flush = () => {
      if (batch.length === 0) return;
      done.push(tx.query(INSERT_MESSAGES, [batch]));
      batch = [];
      bytes = 0;
    };
    for (const message of messages) {
      const n = rowBytes(message);
      if (bytes + n > STATEMENT_BYTES) flush();
      batch.push(values(messageRow(message), MESSAGE_COLUMNS));
      bytes += n;
    }
    flush();
    return done;
  }

  protected upsertDeliveryRows(tx: Tx, rows: DeliveryRow[]): Promise<unknown> {
    return tx.query(UPSERT_DELIVERIES, [rows.map((r) => values(r, DELIVERY_COLUMNS))]);
  }

  protected async deleteDeliveryRows(tx: Tx, keys: DeliveryKey[]): Promise<void> {
    // Grouped by client: `client_id = ? AND message_id IN (...)` uses the primary key, where
    // MariaDB plans a row-value `(client_id, message_id) IN (...)` list as a scan.
    const byClient = new Map<string, bigint[]>();
    for (const d of keys) {
      const ids = byClient.get(d.clientId);
      if (ids) ids.push(d.messageId);
      else byClient.set(d.clientId, [d.messageId]);
    }
    for (const [clientId, ids] of byClient) {
      for (let i = 0; i < ids.length; i += REMOVE_CHUNK) {
        await tx.query('DELETE FROM spindle_deliveries WHERE client_id = ? AND message_id IN (?)', [clientId, ids.slice(i, i + REMOVE_CHUNK)]);
      }
    }
  }

  protected deleteMessagesUnlessReferenced(tx: Tx, ids: bigint[]): Promise<unknown> {
    return tx.query(
      `DELETE FROM spindle_messages WHERE id IN (?)
       AND NOT EXISTS (SELECT 1 FROM spindle_deliveries d WHERE d.message_id = spindle_messages.id)
       AND NOT EXISTS (SELECT 1 FROM spindle_retained r WHERE r.message_id = spindle_messages.id)`,
      [ids],
    );
  }

  protected async deleteOwnedRows(tx: Tx, clientIds: string[]): Promise<bigint[]> {
    const subs = tx.query('DELETE FROM spindle_subscriptions WHERE client_id IN (?)', [clientIds]);
    const qos2 = tx.query('DELETE FROM spindle_incoming_qos2 WHERE client_id IN (?)', [clientIds]);
    const owned = tx.query<RowDataPacket[]>('SELECT DISTINCT message_id FROM spindle_deliveries WHERE client_id IN (?) FOR UPDATE', [clientIds]);
    const del = tx.query('DELETE FROM spindle_deliveries WHERE client_id IN (?)', [clientIds]);
    const [, , [ownedRows]] = await Promise.all([subs, qos2, owned, del]);
    return ownedRows.map((r) => BigInt(r.message_id as string));
  }
}

/** Rough escaped size of a message row (buffers are sent as hex). */
function rowBytes(m: StoredMessage): number {
  return 2 * (m.payload.length + (m.properties?.length ?? 0)) + 3 * m.topic.length + 64;
}
