// MYSQL store (MySQL 8 / MariaDB 10.5+) through mysql2: schema created and migrated at open()
// under a named lock (GET_LOCK), every call queued into the group commit (../sql/group-commit.ts)
// on ONE dedicated connection, so concurrent writes share one transaction and reads see every
// write issued before them; addMessage calls queued together become multi-row INSERTs. mysql2
// runs the statements of one connection in order, so pipelined jobs just issue them.
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
import { GroupCommit } from '../sql/group-commit.ts';
import { pending } from '../sql/migration.ts';
import { qos, sessionDeadline, stateCode, stateName } from '../sql/rows.ts';
import type {
  AdminKind,
  DeliveryState,
  LoadedDelivery,
  Store,
  StoredDelivery,
  StoredMessage,
  StoredRetained,
  StoredSession,
  StoredSubscription,
  StoreStats,
} from '../types.ts';
import { classifyMysql } from './classify.ts';
import { KEY_LIMITS, MYSQL_MIGRATIONS } from './migrations.ts';

type Tx = Connection;
type Row = Record<string, unknown>;
type NewDelivery = Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>;

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

/** Ids per IN (...) list. */
const CHUNK = 10_000;
/** Row-value pairs per DELETE: keeps the statement well under max_allowed_packet. */
const REMOVE_CHUNK = 2_000;
/** Bytes of row data per multi-row INSERT at most (escaped; buffers go as hex, twice their size). */
const STATEMENT_BYTES = 4 * 1024 * 1024;

interface AddItem {
  message: StoredMessage;
  deliveries: NewDelivery[];
}

export class MysqlStore implements Store {
  readonly kind = 'MYSQL' as const;
  private conn: Connection | null = null;
  private readonly commit: GroupCommit<Tx>;
  private state: 'new' | 'open' | 'closed' = 'new';
  private readonly config: mysql.ConnectionOptions;
  private readonly database: string;
  /** The server's max_allowed_packet (read at open): a call that cannot fit is refused up front. */
  private maxPacket = 16 * 1024 * 1024;

  constructor(private readonly options: MysqlStoreOptions) {
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
    this.commit = new GroupCommit<Tx>({
      transaction: (body) => this.transaction(body),
      classify: classifyMysql,
    });
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
  private async transaction(body: (tx: Tx) => Promise<void>): Promise<void> {
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

  /** False while batches fail (server unreachable); true again once one commits. */
  get healthy(): boolean {
    return this.commit.healthy;
  }

  async open(): Promise<void> {
    if (this.state !== 'new') throw new StoreError('STORE_INVALID', `mysql store cannot open: it is ${this.state}`);
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
      this.state = 'closed';
      if (err instanceof StoreError) throw err;
      const e = classifyMysql(err);
      throw e.code === 'STORE_UNAVAILABLE' ? e : new StoreError('STORE_MIGRATION', `mysql schema migration failed: ${e.message}`, { cause: err });
    }
    this.conn = conn;
    this.state = 'open';
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

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    await this.commit.drain();
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

  saveSession(s: StoredSession): Promise<void> {
    const bad = this.checkKey('client id', s.clientId, KEY_LIMITS.clientId) ?? (s.will ? this.checkSize(s.will.message.payload, s.will.message.properties) : undefined);
    if (bad) return Promise.reject(bad);
    const w = s.will;
    const row = [
      s.clientId,
      s.expiryInterval,
      s.disconnectedAt,
      sessionDeadline(s),
      s.username,
      w?.message.topic ?? null,
      w?.message.payload ?? null,
      w?.message.qos ?? null,
      w ? w.message.retain : null,
      w?.message.properties ?? null,
      w?.message.expiresAt ?? null,
      w?.delay ?? null,
    ];
    return this.exec(true, (tx) =>
      tx.query(
        `INSERT INTO spindle_sessions (client_id, expiry_interval, disconnected_at, expires_at, username, will_topic,
           will_payload, will_qos, will_retain, will_properties, will_expires_at, will_delay) VALUES (?)
         ON DUPLICATE KEY UPDATE expiry_interval = VALUES(expiry_interval), disconnected_at = VALUES(disconnected_at),
           expires_at = VALUES(expires_at), username = VALUES(username), will_topic = VALUES(will_topic),
           will_payload = VALUES(will_payload), will_qos = VALUES(will_qos), will_retain = VALUES(will_retain),
           will_properties = VALUES(will_properties), will_expires_at = VALUES(will_expires_at), will_delay = VALUES(will_delay)`,
        [row],
      ),
    );
  }

  deleteSession(clientId: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const del = tx.query('DELETE FROM spindle_sessions WHERE client_id = ?', [clientId]);
      await Promise.all([del, dropOwned(tx, [clientId])]);
    });
  }

  loadSessions(): Promise<StoredSession[]> {
    return this.read((tx) => tx.query('SELECT * FROM spindle_sessions'), (rows) => rows.map(toSession));
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
      (rows) => rows.map((r) => ({ clientId: text(r.client_id), filter: text(r.filter), options: Number(r.options), subscriptionId: Number(r.subscription_id) })),
    );
  }

  addMessage(message: StoredMessage, deliveries: NewDelivery[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    let bad = this.checkSize(message.payload, message.properties);
    for (const d of deliveries) bad ??= this.checkKey('client id', d.clientId, KEY_LIMITS.clientId);
    if (bad) return Promise.reject(bad);
    return this.commit.submitMerged('addMessage', { message, deliveries }, (tx, items) => insertMessages(tx, items as AddItem[]));
  }

  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    const code = stateCode(state);
    return this.exec(true, (tx) =>
      tx.query('UPDATE spindle_deliveries SET state = ?, packet_id = ? WHERE client_id = ? AND message_id = ?', [code, packetId, clientId, messageId]),
    );
  }

  removeDelivery(clientId: string, messageId: bigint): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    // Acknowledgements arrive in streams while a subscriber drains: queued ones become one DELETE.
    return this.commit.submitMerged('removeDelivery', { clientId, messageId }, (tx, items) => removeDeliveries(tx, items as RemoveItem[]));
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
      (rows) =>
        rows.map((r) => ({
          clientId: text(r.client_id),
          messageId: BigInt(r.message_id as string),
          seq: BigInt(r.seq as string),
          state: stateName(Number(r.state)),
          packetId: Number(r.packet_id),
          qos: qos(Number(r.qos)),
          retain: Number(r.retain) !== 0,
          subscriptionIds: JSON.parse(r.subscription_ids as string) as number[],
          message: toMessage(r.message_id, r, 'm_qos', 'm_retain'),
        })),
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
      const ins = tx.query(`INSERT INTO spindle_messages (id, topic, payload, qos, retain, properties, expires_at) VALUES (?)
                            ON DUPLICATE KEY UPDATE id = id`, [messageRow(message)]);
      const old = tx.query<RowDataPacket[]>('SELECT message_id FROM spindle_retained WHERE topic = ? FOR UPDATE', [topic]);
      const up = tx.query(`INSERT INTO spindle_retained (topic, message_id) VALUES (?, ?)
                           ON DUPLICATE KEY UPDATE message_id = VALUES(message_id)`, [topic, message.id]);
      const [, [oldRows]] = await Promise.all([ins, old, up]);
      if (oldRows.length > 0) {
        const oldId = BigInt(oldRows[0].message_id as string);
        if (oldId !== message.id) await collect(tx, [oldId]);
      }
    });
  }

  deleteRetained(topic: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const old = tx.query<RowDataPacket[]>('SELECT message_id FROM spindle_retained WHERE topic = ? FOR UPDATE', [topic]);
      const del = tx.query('DELETE FROM spindle_retained WHERE topic = ?', [topic]);
      const [[oldRows]] = await Promise.all([old, del]);
      if (oldRows.length > 0) await collect(tx, [BigInt(oldRows[0].message_id as string)]);
    });
  }

  loadRetained(): Promise<StoredRetained[]> {
    return this.read(
      (tx) => tx.query('SELECT r.topic AS r_topic, m.* FROM spindle_retained r JOIN spindle_messages m ON m.id = r.message_id'),
      (rows) => rows.map((r) => ({ topic: text(r.r_topic), message: toMessage(r.id, r, 'qos', 'retain') })),
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
      await dropOwned(tx, sessions);
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
      (rows) => rows.map((r) => ({ id: text(r.id), doc: JSON.parse(r.doc as string) as T })),
    );
  }

  stats(): Promise<StoreStats> {
    return this.read(
      (tx) =>
        tx.query(`SELECT (SELECT COUNT(*) FROM spindle_sessions) AS sessions, (SELECT COUNT(*) FROM spindle_messages) AS messages,
                         (SELECT COUNT(*) FROM spindle_deliveries) AS deliveries, (SELECT COUNT(*) FROM spindle_retained) AS retained`),
      (rows) => ({ sessions: Number(rows[0].sessions), messages: Number(rows[0].messages), deliveries: Number(rows[0].deliveries), retained: Number(rows[0].retained) }),
    );
  }

  /** The MySQL connection id of the dedicated connection (null when not connected), for tests and diagnostics. */
  get connectionId(): number | null {
    return this.conn?.threadId ?? null;
  }

  /** Queues a write whose result is not returned. */
  private exec(pipelined: boolean, run: (tx: Tx) => Promise<unknown>): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(async (tx) => {
      await run(tx);
    }, pipelined);
  }

  /** Queues a write; `pipelined` jobs must issue every statement before their first await. */
  private write<T>(pipelined: boolean, run: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(run, pipelined);
  }

  /** Reads go through the same queue, so they see every write issued before them. */
  private read<T>(query: (tx: Tx) => Promise<[unknown, unknown]>, map: (rows: Row[]) => T): Promise<T> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(async (tx) => map((await query(tx))[0] as Row[]), true);
  }

  private notOpen(): StoreError {
    return new StoreError('STORE_CLOSED', this.state === 'new' ? 'mysql store is not open yet' : 'mysql store is closed');
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
}

function messageRow(m: StoredMessage): unknown[] {
  return [m.id, m.topic, m.payload, m.qos, m.retain, m.properties, m.expiresAt];
}

/** Rough escaped size of a message row (buffers are sent as hex). */
function rowBytes(m: StoredMessage): number {
  return 2 * (m.payload.length + (m.properties?.length ?? 0)) + 3 * m.topic.length + 64;
}

/** Many addMessage calls as multi-row INSERTs (split to stay well below max_allowed_packet), issued at once. */
function insertMessages(tx: Tx, items: AddItem[]): Promise<unknown> {
  const done: Promise<unknown>[] = [];
  let batch: unknown[][] = [];
  let bytes = 0;
  const flush = () => {
    if (batch.length === 0) return;
    done.push(
      tx.query(`INSERT INTO spindle_messages (id, topic, payload, qos, retain, properties, expires_at) VALUES ?
                ON DUPLICATE KEY UPDATE id = id`, [batch]),
    );
    batch = [];
    bytes = 0;
  };
  for (const { message } of items) {
    const n = rowBytes(message);
    if (bytes + n > STATEMENT_BYTES) flush();
    batch.push(messageRow(message));
    bytes += n;
  }
  flush();
  // One row per (client, message): a later call for the same pair replaces the earlier one.
  const deliveries = new Map<string, unknown[]>();
  for (const { message, deliveries: ds } of items) {
    for (const d of ds) {
      deliveries.set(`${d.clientId}\u0000${message.id}`, [d.clientId, message.id, d.seq, 0, 0, d.qos, d.retain, JSON.stringify(d.subscriptionIds)]);
    }
  }
  const rows = [...deliveries.values()];
  for (let i = 0; i < rows.length; i += 5_000) {
    done.push(
      tx.query(
        `INSERT INTO spindle_deliveries (client_id, message_id, seq, state, packet_id, qos, retain, subscription_ids) VALUES ?
         ON DUPLICATE KEY UPDATE seq = VALUES(seq), state = 0, packet_id = 0, qos = VALUES(qos), retain = VALUES(retain),
           subscription_ids = VALUES(subscription_ids)`,
        [rows.slice(i, i + 5_000)],
      ),
    );
  }
  // A message given no delivery is referred to by nothing and is not kept.
  const orphans = items.filter((i) => i.deliveries.length === 0).map((i) => i.message.id);
  if (orphans.length > 0) done.push(collect(tx, orphans));
  return Promise.all(done);
}

/** Deletes the given messages that no delivery and no retained entry refers to any more. */
interface RemoveItem {
  clientId: string;
  messageId: bigint;
}

/** Deletes many deliveries in one statement per chunk, then the messages they leave unreferenced. */
async function removeDeliveries(tx: Tx, items: RemoveItem[]): Promise<void> {
  // Grouped by client: `client_id = ? AND message_id IN (...)` uses the primary key, where
  // MariaDB plans a row-value `(client_id, message_id) IN (...)` list as a scan.
  const byClient = new Map<string, bigint[]>();
  for (const d of items) {
    const ids = byClient.get(d.clientId);
    if (ids) ids.push(d.messageId);
    else byClient.set(d.clientId, [d.messageId]);
  }
  for (const [clientId, ids] of byClient) {
    for (let i = 0; i < ids.length; i += REMOVE_CHUNK) {
      await tx.query('DELETE FROM spindle_deliveries WHERE client_id = ? AND message_id IN (?)', [clientId, ids.slice(i, i + REMOVE_CHUNK)]);
    }
  }
  await collect(tx, [...new Set(items.map((d) => d.messageId))]);
}

function collect(tx: Tx, ids: bigint[]): Promise<unknown> {
  const done: Promise<unknown>[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    done.push(
      tx.query(
        `DELETE FROM spindle_messages WHERE id IN (?)
         AND NOT EXISTS (SELECT 1 FROM spindle_deliveries d WHERE d.message_id = spindle_messages.id)
         AND NOT EXISTS (SELECT 1 FROM spindle_retained r WHERE r.message_id = spindle_messages.id)`,
        [ids.slice(i, i + CHUNK)],
      ),
    );
  }
  return Promise.all(done);
}

/** Removes what sessions own (subscriptions, incoming QoS 2 ids, deliveries) and the messages left unreferenced. */
async function dropOwned(tx: Tx, clientIds: string[]): Promise<void> {
  for (let i = 0; i < clientIds.length; i += CHUNK) {
    const ids = clientIds.slice(i, i + CHUNK);
    const subs = tx.query('DELETE FROM spindle_subscriptions WHERE client_id IN (?)', [ids]);
    const qos2 = tx.query('DELETE FROM spindle_incoming_qos2 WHERE client_id IN (?)', [ids]);
    const owned = tx.query<RowDataPacket[]>('SELECT DISTINCT message_id FROM spindle_deliveries WHERE client_id IN (?) FOR UPDATE', [ids]);
    const del = tx.query('DELETE FROM spindle_deliveries WHERE client_id IN (?)', [ids]);
    const [, , [ownedRows]] = await Promise.all([subs, qos2, owned, del]);
    const messageIds = ownedRows.map((r) => BigInt(r.message_id as string));
    if (messageIds.length > 0) await collect(tx, messageIds);
  }
}

/** VARBINARY key columns come back as Buffers. */
function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
}

function toMessage(id: unknown, r: Row, qosCol: string, retainCol: string): StoredMessage {
  return {
    id: BigInt(id as string),
    topic: r.topic as string,
    payload: r.payload as Buffer,
    qos: qos(Number(r[qosCol])),
    retain: Number(r[retainCol]) !== 0,
    properties: (r.properties as Buffer | null) ?? null,
    expiresAt: Number(r.expires_at),
  };
}

function toSession(r: Row): StoredSession {
  return {
    clientId: text(r.client_id),
    expiryInterval: Number(r.expiry_interval),
    disconnectedAt: r.disconnected_at === null ? null : Number(r.disconnected_at),
    username: (r.username as string | null) ?? null,
    will:
      r.will_topic === null
        ? null
        : {
            delay: Number(r.will_delay),
            message: {
              topic: r.will_topic as string,
              payload: r.will_payload as Buffer,
              qos: qos(Number(r.will_qos)),
              retain: Number(r.will_retain) !== 0,
              properties: (r.will_properties as Buffer | null) ?? null,
              expiresAt: Number(r.will_expires_at),
            },
          },
  };
}
