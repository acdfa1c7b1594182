// POSTGRESQL store through postgres.js: its SQL and its driver on the shared SQL store skeleton
// (../sql/sql-store.ts: every call queued into the group commit so concurrent writes share one
// transaction, addMessage calls queued together become one multi-row INSERT). Schema created and
// migrated at open(). postgres.js reconnects on the next query after the server went away; a batch
// that fails rejects its callers with a StoreError and the next batch tries again after a backoff.
// `healthy` is false while batches fail.
import postgres from 'postgres';

import { StoreError } from '../errors.ts';
import { AUDIT_COLUMNS, type AuditRow } from '../sql/audit-rows.ts';
import { pending } from '../sql/migration.ts';
import {
  SESSION_COLUMNS,
  messageRow,
  sessionRow,
  stateCode,
  toAdminDoc,
  toDelivery,
  toRetained,
  toSession,
  toStats,
  toSubscription,
  type DeliveryRow,
} from '../sql/rows.ts';
import { ID_CHUNK, SqlStore, type DeliveryKey } from '../sql/sql-store.ts';
import type {
  AdminKind,
  DeliveryState,
  LoadedDelivery,
  Store,
  StoredMessage,
  StoredRetained,
  StoredSession,
  StoredSubscription,
  StoreStats,
} from '../types.ts';
import { classifyPostgres } from './classify.ts';
import { POSTGRES_MIGRATIONS } from './migrations.ts';

type Types = { bigint: bigint };
type Sql = postgres.Sql<Types>;
type Tx = postgres.Sql<Types>;

/** Audit rows per multi-row INSERT (15 columns: 15 000 bind parameters, of 65 535). */
const AUDIT_ROWS = 1_000;

export interface PostgresStoreOptions {
  url: string;
  username?: string;
  password?: string;
  /** Schema to keep the tables in (created when missing); the server's default search_path when absent. */
  schema?: string;
  /** Connections in the pool (the group commit uses one at a time). */
  maxConnections?: number;
}

/** Serialises the schema migration between Spindle nodes sharing a database. */
const MIGRATION_LOCK = 0x5350_494e; // "SPIN"

export class PostgresStore extends SqlStore<Tx, postgres.Row[]> implements Store {
  readonly kind = 'POSTGRESQL' as const;
  private sql: Sql;

  constructor(private readonly options: PostgresStoreOptions) {
    super('postgresql', classifyPostgres);
    this.sql = this.connect();
  }

  private connect(): Sql {
    const o = this.options;
    return postgres(o.url, {
      ...(o.username ? { username: o.username } : {}),
      ...(o.password ? { password: o.password } : {}),
      max: o.maxConnections ?? 2,
      connect_timeout: 5,
      idle_timeout: 0,
      onnotice: () => {},
      // fetch_types stays on: the statements take arrays, and with it off postgres.js 3.4.9 never
      // resolves reserve() on a reconnected connection. Its dropped array-types promise
      // (porsager/postgres#1192) is logged by the worker's unhandledRejection handler.
      types: { bigint: postgres.BigInt },
      ...(o.schema ? { connection: { search_path: o.schema } } : {}),
    }) as unknown as Sql;
  }

  /**
   * One transaction on a reserved connection. Not sql.begin(): after the server kills the
   * connection it writes a ROLLBACK that races the socket close and crashes the process from a
   * setImmediate in postgres.js 3.4.9 (porsager/postgres#1154, #1208). When the connection is
   * gone, the server has rolled back already, so no ROLLBACK is sent then.
   */
  protected async transaction(body: (tx: Tx) => Promise<void>): Promise<void> {
    const tx = await this.sql.reserve();
    try {
      await tx`BEGIN`;
      await body(tx as unknown as Tx);
      await tx`COMMIT`;
    } catch (err) {
      if (classifyPostgres(err).code === 'STORE_UNAVAILABLE') {
        // The dead connection stays in postgres.js' pool and crashes on its next write (same
        // issues): replace the whole client; the next batch connects afresh.
        const dead = this.sql;
        this.sql = this.connect();
        tx.release();
        await dead.end({ timeout: 0 });
        throw err;
      } else {
        try {
          await tx`ROLLBACK`;
        } catch (rollbackErr) {
          throw new AggregateError([err, rollbackErr], 'postgresql: batch failed and so did its ROLLBACK', { cause: err });
        }
      }
      tx.release();
      throw err;
    }
    tx.release();
  }

  /** Creates the schema when asked to, then applies pending migrations under an advisory lock. */
  protected async connectAndMigrate(): Promise<void> {
    try {
      if (this.options.schema) await this.sql`CREATE SCHEMA IF NOT EXISTS ${this.sql(this.options.schema)}`;
      await this.sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
        await tx`CREATE TABLE IF NOT EXISTS spindle_schema_version (
          version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
        const [{ v }] = await tx`SELECT coalesce(max(version), 0)::int AS v FROM spindle_schema_version`;
        for (const m of pending(POSTGRES_MIGRATIONS, Number(v), 'postgresql')) {
          for (const statement of m.statements) await tx.unsafe(statement);
          await tx`INSERT INTO spindle_schema_version (version, name) VALUES (${m.version}, ${m.name})`;
        }
      });
    } catch (err) {
      await this.sql.end({ timeout: 1 });
      throw err;
    }
  }

  protected async disconnect(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }

  protected rows(result: postgres.Row[]): postgres.Row[] {
    return result;
  }

  saveSession(s: StoredSession): Promise<void> {
    const row = sessionRow(s);
    return this.exec(true, (tx) =>
      tx`INSERT INTO spindle_sessions ${tx(row, SESSION_COLUMNS)}
         ON CONFLICT (client_id) DO UPDATE SET ${tx(row, SESSION_COLUMNS.slice(1))}`.execute(),
    );
  }

  deleteSession(clientId: string): Promise<void> {
    return this.exec(false, async (tx) => {
      await tx`DELETE FROM spindle_sessions WHERE client_id = ${clientId}`;
      await this.dropOwned(tx, [clientId]);
    });
  }

  loadSessions(): Promise<StoredSession[]> {
    return this.read((tx) => tx`SELECT * FROM spindle_sessions`.execute(), (rows) => rows.map(toSession));
  }

  async takeSessions(from: string, to: string, clientIds?: readonly string[]): Promise<string[]> {
    let taken: string[] = [];
    await this.exec(false, async (tx) => {
      const rows = clientIds === undefined
        ? await tx`UPDATE spindle_sessions SET node = ${to} WHERE node = ${from} RETURNING client_id`
        : clientIds.length === 0 ? [] : await tx`UPDATE spindle_sessions SET node = ${to} WHERE node = ${from} AND client_id IN ${tx(clientIds as string[])} RETURNING client_id`;
      taken = rows.map((r) => r.client_id as string);
    });
    return taken;
  }

  async claimNodeSlot(node: string, max: number): Promise<number> {
    let slot = -1;
    await this.exec(false, async (tx) => {
      // The node's own slot; else the first free one (a slot or name taken meanwhile by another
      // node is skipped: nothing fails inside the transaction).
      for (let s = -1; s < max && slot < 0; s++) {
        if (s >= 0) await tx`INSERT INTO spindle_node_slots (slot, node) VALUES (${s}, ${node}) ON CONFLICT DO NOTHING`;
        const [own] = await tx`SELECT slot FROM spindle_node_slots WHERE node = ${node}`;
        if (own) slot = Number(own.slot);
      }
    });
    if (slot < 0) throw new Error(`every one of the ${max} node slots of the shared store is taken: remove rows of nodes that are gone from spindle_node_slots`);
    return slot;
  }

  addSubscription(sub: StoredSubscription): Promise<void> {
    return this.exec(true, (tx) =>
      tx`INSERT INTO spindle_subscriptions (client_id, filter, options, subscription_id)
         VALUES (${sub.clientId}, ${sub.filter}, ${sub.options}, ${sub.subscriptionId})
         ON CONFLICT (client_id, filter) DO UPDATE SET options = EXCLUDED.options, subscription_id = EXCLUDED.subscription_id`.execute(),
    );
  }

  removeSubscription(clientId: string, filter: string): Promise<void> {
    return this.exec(true, (tx) => tx`DELETE FROM spindle_subscriptions WHERE client_id = ${clientId} AND filter = ${filter}`.execute());
  }

  loadSubscriptions(clientId?: string): Promise<StoredSubscription[]> {
    return this.read(
      (tx) =>
        clientId === undefined
          ? tx`SELECT * FROM spindle_subscriptions`.execute()
          : tx`SELECT * FROM spindle_subscriptions WHERE client_id = ${clientId}`.execute(),
      (rows) => rows.map(toSubscription),
    );
  }

  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    const code = stateCode(state);
    return this.exec(true, (tx) =>
      tx`UPDATE spindle_deliveries SET state = ${code}, packet_id = ${packetId}
         WHERE client_id = ${clientId} AND message_id = ${messageId}`.execute(),
    );
  }

  loadDeliveries(clientId: string): Promise<LoadedDelivery[]> {
    return this.read(
      (tx) =>
        tx`SELECT d.*, m.topic, m.payload, m.qos AS m_qos, m.retain AS m_retain, m.properties, m.expires_at
           FROM spindle_deliveries d JOIN spindle_messages m ON m.id = d.message_id
           WHERE d.client_id = ${clientId} ORDER BY d.seq`.execute(),
      (rows) => rows.map(toDelivery),
    );
  }

  addIncomingQos2(clientId: string, packetId: number): Promise<void> {
    return this.exec(true, (tx) =>
      tx`INSERT INTO spindle_incoming_qos2 (client_id, packet_id) VALUES (${clientId}, ${packetId}) ON CONFLICT DO NOTHING`.execute(),
    );
  }

  removeIncomingQos2(clientId: string, packetId: number): Promise<void> {
    return this.exec(true, (tx) => tx`DELETE FROM spindle_incoming_qos2 WHERE client_id = ${clientId} AND packet_id = ${packetId}`.execute());
  }

  loadIncomingQos2(clientId: string): Promise<number[]> {
    return this.read(
      (tx) => tx`SELECT packet_id FROM spindle_incoming_qos2 WHERE client_id = ${clientId} ORDER BY packet_id`.execute(),
      (rows) => rows.map((r) => Number(r.packet_id)),
    );
  }

  setRetained(topic: string, message: StoredMessage): Promise<void> {
    return this.exec(false, async (tx) => {
      await tx`INSERT INTO spindle_messages ${tx(messageRow(message))} ON CONFLICT (id) DO NOTHING`;
      const old = await tx`SELECT message_id FROM spindle_retained WHERE topic = ${topic}`;
      await tx`INSERT INTO spindle_retained (topic, message_id) VALUES (${topic}, ${message.id})
               ON CONFLICT (topic) DO UPDATE SET message_id = EXCLUDED.message_id`;
      if (old.length > 0 && old[0].message_id !== message.id) await this.deleteUnreferencedMessages(tx, [old[0].message_id as bigint]);
    });
  }

  deleteRetained(topic: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const old = await tx`DELETE FROM spindle_retained WHERE topic = ${topic} RETURNING message_id`;
      if (old.length > 0) await this.deleteUnreferencedMessages(tx, [old[0].message_id as bigint]);
    });
  }

  loadRetained(): Promise<StoredRetained[]> {
    return this.read(
      (tx) => tx`SELECT r.topic AS r_topic, m.* FROM spindle_retained r JOIN spindle_messages m ON m.id = r.message_id`.execute(),
      (rows) => rows.map(toRetained),
    );
  }

  deleteExpired(now: number): Promise<{ sessions: string[]; messages: number }> {
    return this.write(false, async (tx) => {
      await tx`DELETE FROM spindle_deliveries d USING spindle_messages m
               WHERE d.message_id = m.id AND m.expires_at <> 0 AND m.expires_at <= ${now}`;
      await tx`DELETE FROM spindle_retained r USING spindle_messages m
               WHERE r.message_id = m.id AND m.expires_at <> 0 AND m.expires_at <= ${now}`;
      const gone = await tx`DELETE FROM spindle_messages WHERE expires_at <> 0 AND expires_at <= ${now}`;
      const expired = await tx`DELETE FROM spindle_sessions WHERE expires_at IS NOT NULL AND expires_at <= ${now} RETURNING client_id`;
      const sessions = expired.map((r) => r.client_id as string);
      await this.dropOwned(tx, sessions);
      return { sessions, messages: gone.count };
    });
  }

  putAdmin(kind: AdminKind, id: string, doc: unknown): Promise<void> {
    const text = JSON.stringify(doc);
    if (text === undefined) return Promise.reject(new StoreError('STORE_INVALID', `admin document ${kind}/${id} is not JSON`));
    return this.exec(true, (tx) =>
      tx`INSERT INTO spindle_admin (kind, id, doc) VALUES (${kind}, ${id}, ${text})
         ON CONFLICT (kind, id) DO UPDATE SET doc = EXCLUDED.doc`.execute(),
    );
  }

  getAdmin<T = unknown>(kind: AdminKind, id: string): Promise<T | undefined> {
    return this.read(
      (tx) => tx`SELECT doc FROM spindle_admin WHERE kind = ${kind} AND id = ${id}`.execute(),
      (rows) => (rows.length === 0 ? undefined : (JSON.parse(rows[0].doc as string) as T)),
    );
  }

  deleteAdmin(kind: AdminKind, id: string): Promise<boolean> {
    return this.write(true, async (tx) => (await tx`DELETE FROM spindle_admin WHERE kind = ${kind} AND id = ${id}`.execute()).count > 0);
  }

  listAdmin<T = unknown>(kind: AdminKind): Promise<{ id: string; doc: T }[]> {
    return this.read(
      (tx) => tx`SELECT id, doc FROM spindle_admin WHERE kind = ${kind} ORDER BY id`.execute(),
      (rows) => rows.map((r) => toAdminDoc<T>(r)),
    );
  }

  stats(): Promise<StoreStats> {
    return this.read(
      (tx) =>
        tx`SELECT (SELECT count(*) FROM spindle_sessions) AS sessions, (SELECT count(*) FROM spindle_messages) AS messages,
                  (SELECT count(*) FROM spindle_deliveries) AS deliveries, (SELECT count(*) FROM spindle_retained) AS retained`.execute(),
      (rows) => toStats(rows[0]),
    );
  }

  protected placeholder(n: number): string {
    return `$${n}`;
  }

  protected selectRows(tx: Tx, sql: string, params: unknown[]): Promise<postgres.Row[]> {
    return tx.unsafe(sql, params as postgres.ParameterOrJSON<never>[]).execute();
  }

  protected insertAuditRows(tx: Tx, rows: AuditRow[]): Promise<unknown>[] {
    const done: Promise<unknown>[] = [];
    for (let i = 0; i < rows.length; i += AUDIT_ROWS) {
      done.push(tx`INSERT INTO spindle_audit_log ${tx(rows.slice(i, i + AUDIT_ROWS), AUDIT_COLUMNS)} ON CONFLICT (id) DO NOTHING`.execute());
    }
    return done;
  }

  protected async deleteAuditRows(tx: Tx, before: number, limit: number): Promise<number> {
    const res = await tx`DELETE FROM spindle_audit_log WHERE id IN
                           (SELECT id FROM spindle_audit_log WHERE time < ${before} LIMIT ${limit})`.execute();
    return res.count;
  }

  protected insertMessageRows(tx: Tx, messages: StoredMessage[]): Promise<unknown>[] {
    return [tx`INSERT INTO spindle_messages ${tx(messages.map(messageRow))} ON CONFLICT (id) DO NOTHING`.execute()];
  }

  protected upsertDeliveryRows(tx: Tx, rows: DeliveryRow[]): Promise<unknown> {
    return tx`INSERT INTO spindle_deliveries ${tx(rows)}
              ON CONFLICT (client_id, message_id) DO UPDATE SET seq = EXCLUDED.seq, state = 0, packet_id = 0,
                qos = EXCLUDED.qos, retain = EXCLUDED.retain, subscription_ids = EXCLUDED.subscription_ids`.execute();
  }

  protected async deleteDeliveryRows(tx: Tx, keys: DeliveryKey[]): Promise<void> {
    for (let i = 0; i < keys.length; i += ID_CHUNK) {
      const chunk = keys.slice(i, i + ID_CHUNK);
      const clients = chunk.map((d) => d.clientId);
      const ids = chunk.map((d) => d.messageId.toString());
      await tx`DELETE FROM spindle_deliveries d
               USING unnest(${clients}::text[], ${ids}::bigint[]) AS x(client_id, message_id)
               WHERE d.client_id = x.client_id AND d.message_id = x.message_id`.execute();
    }
  }

  protected deleteMessagesUnlessReferenced(tx: Tx, ids: bigint[]): Promise<unknown> {
    return tx`DELETE FROM spindle_messages m WHERE m.id IN ${tx(ids)}
              AND NOT EXISTS (SELECT 1 FROM spindle_deliveries d WHERE d.message_id = m.id)
              AND NOT EXISTS (SELECT 1 FROM spindle_retained r WHERE r.message_id = m.id)`.execute();
  }

  protected async deleteOwnedRows(tx: Tx, clientIds: string[]): Promise<bigint[]> {
    await tx`DELETE FROM spindle_subscriptions WHERE client_id IN ${tx(clientIds)}`;
    await tx`DELETE FROM spindle_incoming_qos2 WHERE client_id IN ${tx(clientIds)}`;
    const dropped = await tx`DELETE FROM spindle_deliveries WHERE client_id IN ${tx(clientIds)} RETURNING message_id`;
    return [...new Set(dropped.map((r) => r.message_id as bigint))];
  }
}
