// POSTGRESQL store through postgres.js: schema created and migrated at open(), every call queued
// into the group commit (../sql/group-commit.ts) so concurrent writes share one transaction, and
// addMessage calls queued together become one multi-row INSERT. postgres.js reconnects on the next
// query after the server went away; a batch that fails rejects its callers with a StoreError and
// the next batch tries again after a backoff. `healthy` is false while batches fail.
import postgres from 'postgres';

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
import { classifyPostgres } from './classify.ts';
import { POSTGRES_MIGRATIONS } from './migrations.ts';

type Types = { bigint: bigint };
type Sql = postgres.Sql<Types>;
type Tx = postgres.Sql<Types>;
type Row = Record<string, unknown>;
type NewDelivery = Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>;

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
/** Ids per IN (...) list, well below the 65535 bind parameters of one statement. */
const CHUNK = 10_000;

export class PostgresStore implements Store {
  readonly kind = 'POSTGRESQL' as const;
  private sql: Sql;
  private readonly commit: GroupCommit<Tx>;
  private state: 'new' | 'open' | 'closed' = 'new';

  constructor(private readonly options: PostgresStoreOptions) {
    this.sql = this.connect();
    this.commit = new GroupCommit<Tx>({
      transaction: (body) => this.transaction(body),
      classify: classifyPostgres,
    });
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
  private async transaction(body: (tx: Tx) => Promise<void>): Promise<void> {
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

  /** False while batches fail (server unreachable); true again once one commits. */
  get healthy(): boolean {
    return this.commit.healthy;
  }

  async open(): Promise<void> {
    if (this.state !== 'new') throw new StoreError('STORE_INVALID', `postgresql store cannot open: it is ${this.state}`);
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
      this.state = 'closed';
      if (err instanceof StoreError) throw err;
      const e = classifyPostgres(err);
      throw e.code === 'STORE_UNAVAILABLE' ? e : new StoreError('STORE_MIGRATION', `postgresql schema migration failed: ${e.message}`, { cause: err });
    }
    this.state = 'open';
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    await this.commit.drain();
    await this.sql.end({ timeout: 5 });
  }

  saveSession(s: StoredSession): Promise<void> {
    const w = s.will;
    const row = {
      client_id: s.clientId,
      expiry_interval: s.expiryInterval,
      disconnected_at: s.disconnectedAt,
      expires_at: sessionDeadline(s),
      username: s.username,
      will_topic: w?.message.topic ?? null,
      will_payload: w?.message.payload ?? null,
      will_qos: w?.message.qos ?? null,
      will_retain: w?.message.retain ?? null,
      will_properties: w?.message.properties ?? null,
      will_expires_at: w?.message.expiresAt ?? null,
      will_delay: w?.delay ?? null,
    };
    const cols = Object.keys(row) as (keyof typeof row)[];
    return this.exec(true, (tx) =>
      tx`INSERT INTO spindle_sessions ${tx(row, cols)}
         ON CONFLICT (client_id) DO UPDATE SET ${tx(row, cols.slice(1))}`.execute(),
    );
  }

  deleteSession(clientId: string): Promise<void> {
    return this.exec(false, async (tx) => {
      await tx`DELETE FROM spindle_sessions WHERE client_id = ${clientId}`;
      await dropOwned(tx, [clientId]);
    });
  }

  loadSessions(): Promise<StoredSession[]> {
    return this.read((tx) => tx`SELECT * FROM spindle_sessions`.execute(), (rows) => rows.map(toSession));
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
      (rows) => rows.map((r) => ({ clientId: r.client_id as string, filter: r.filter as string, options: Number(r.options), subscriptionId: Number(r.subscription_id) })),
    );
  }

  addMessage(message: StoredMessage, deliveries: NewDelivery[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submitMerged('addMessage', { message, deliveries }, (tx, items) => insertMessages(tx, items as AddItem[]));
  }

  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    const code = stateCode(state);
    return this.exec(true, (tx) =>
      tx`UPDATE spindle_deliveries SET state = ${code}, packet_id = ${packetId}
         WHERE client_id = ${clientId} AND message_id = ${messageId}`.execute(),
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
        tx`SELECT d.*, m.topic, m.payload, m.qos AS m_qos, m.retain AS m_retain, m.properties, m.expires_at
           FROM spindle_deliveries d JOIN spindle_messages m ON m.id = d.message_id
           WHERE d.client_id = ${clientId} ORDER BY d.seq`.execute(),
      (rows) =>
        rows.map((r) => ({
          clientId: r.client_id as string,
          messageId: r.message_id as bigint,
          seq: r.seq as bigint,
          state: stateName(Number(r.state)),
          packetId: Number(r.packet_id),
          qos: qos(Number(r.qos)),
          retain: r.retain as boolean,
          subscriptionIds: JSON.parse(r.subscription_ids as string) as number[],
          message: toMessage(r.message_id, r, 'm_qos', 'm_retain'),
        })),
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
      if (old.length > 0 && old[0].message_id !== message.id) await collect(tx, [old[0].message_id as bigint]);
    });
  }

  deleteRetained(topic: string): Promise<void> {
    return this.exec(false, async (tx) => {
      const old = await tx`DELETE FROM spindle_retained WHERE topic = ${topic} RETURNING message_id`;
      if (old.length > 0) await collect(tx, [old[0].message_id as bigint]);
    });
  }

  loadRetained(): Promise<StoredRetained[]> {
    return this.read(
      (tx) => tx`SELECT r.topic AS r_topic, m.* FROM spindle_retained r JOIN spindle_messages m ON m.id = r.message_id`.execute(),
      (rows) => rows.map((r) => ({ topic: r.r_topic as string, message: toMessage(r.id, r, 'qos', 'retain') })),
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
      await dropOwned(tx, sessions);
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
      (rows) => rows.map((r) => ({ id: r.id as string, doc: JSON.parse(r.doc as string) as T })),
    );
  }

  stats(): Promise<StoreStats> {
    return this.read(
      (tx) =>
        tx`SELECT (SELECT count(*) FROM spindle_sessions) AS sessions, (SELECT count(*) FROM spindle_messages) AS messages,
                  (SELECT count(*) FROM spindle_deliveries) AS deliveries, (SELECT count(*) FROM spindle_retained) AS retained`.execute(),
      (rows) => ({ sessions: Number(rows[0].sessions), messages: Number(rows[0].messages), deliveries: Number(rows[0].deliveries), retained: Number(rows[0].retained) }),
    );
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
  private read<T>(query: (tx: Tx) => postgres.PendingQuery<postgres.Row[]>, map: (rows: Row[]) => T): Promise<T> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(async (tx) => map(await query(tx)), true);
  }

  private notOpen(): StoreError {
    return new StoreError('STORE_CLOSED', this.state === 'new' ? 'postgresql store is not open yet' : 'postgresql store is closed');
  }
}

interface AddItem {
  message: StoredMessage;
  deliveries: NewDelivery[];
}

function messageRow(m: StoredMessage) {
  return { id: m.id, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, properties: m.properties, expires_at: m.expiresAt };
}

/** Many addMessage calls as two multi-row INSERTs, issued at once (pipelined). */
function insertMessages(tx: Tx, items: AddItem[]): Promise<unknown> {
  const messages = items.map((i) => messageRow(i.message));
  // One row per (client, message): a later call for the same pair replaces the earlier one.
  const deliveries = new Map<string, Row>();
  for (const { message, deliveries: ds } of items) {
    for (const d of ds) {
      deliveries.set(`${d.clientId}\u0000${message.id}`, {
        client_id: d.clientId,
        message_id: message.id,
        seq: d.seq,
        state: 0,
        packet_id: 0,
        qos: d.qos,
        retain: d.retain,
        subscription_ids: JSON.stringify(d.subscriptionIds),
      });
    }
  }
  const done: Promise<unknown>[] = [tx`INSERT INTO spindle_messages ${tx(messages)} ON CONFLICT (id) DO NOTHING`.execute()];
  const rows = [...deliveries.values()];
  for (let i = 0; i < rows.length; i += 5_000) {
    done.push(
      tx`INSERT INTO spindle_deliveries ${tx(rows.slice(i, i + 5_000))}
         ON CONFLICT (client_id, message_id) DO UPDATE SET seq = EXCLUDED.seq, state = 0, packet_id = 0,
           qos = EXCLUDED.qos, retain = EXCLUDED.retain, subscription_ids = EXCLUDED.subscription_ids`.execute(),
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
  for (let i = 0; i < items.length; i += CHUNK) {
    const chunk = items.slice(i, i + CHUNK);
    const clients = chunk.map((d) => d.clientId);
    const ids = chunk.map((d) => d.messageId.toString());
    await tx`DELETE FROM spindle_deliveries d
             USING unnest(${clients}::text[], ${ids}::bigint[]) AS x(client_id, message_id)
             WHERE d.client_id = x.client_id AND d.message_id = x.message_id`.execute();
  }
  await collect(tx, [...new Set(items.map((d) => d.messageId))]);
}

function collect(tx: Tx, ids: bigint[]): Promise<unknown> {
  const done: Promise<unknown>[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    done.push(
      tx`DELETE FROM spindle_messages m WHERE m.id IN ${tx(ids.slice(i, i + CHUNK))}
         AND NOT EXISTS (SELECT 1 FROM spindle_deliveries d WHERE d.message_id = m.id)
         AND NOT EXISTS (SELECT 1 FROM spindle_retained r WHERE r.message_id = m.id)`.execute(),
    );
  }
  return Promise.all(done);
}

/** Removes what sessions own (subscriptions, incoming QoS 2 ids, deliveries) and the messages left unreferenced. */
async function dropOwned(tx: Tx, clientIds: string[]): Promise<void> {
  for (let i = 0; i < clientIds.length; i += CHUNK) {
    const ids = clientIds.slice(i, i + CHUNK);
    await tx`DELETE FROM spindle_subscriptions WHERE client_id IN ${tx(ids)}`;
    await tx`DELETE FROM spindle_incoming_qos2 WHERE client_id IN ${tx(ids)}`;
    const dropped = await tx`DELETE FROM spindle_deliveries WHERE client_id IN ${tx(ids)} RETURNING message_id`;
    const messageIds = [...new Set(dropped.map((r) => r.message_id as bigint))];
    if (messageIds.length > 0) await collect(tx, messageIds);
  }
}

function toMessage(id: unknown, r: Row, qosCol: string, retainCol: string): StoredMessage {
  return {
    id: id as bigint,
    topic: r.topic as string,
    payload: r.payload as Buffer,
    qos: qos(Number(r[qosCol])),
    retain: r[retainCol] as boolean,
    properties: (r.properties as Buffer | null) ?? null,
    expiresAt: Number(r.expires_at),
  };
}

function toSession(r: Row): StoredSession {
  return {
    clientId: r.client_id as string,
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
              retain: r.will_retain as boolean,
              properties: (r.will_properties as Buffer | null) ?? null,
              expiresAt: Number(r.will_expires_at),
            },
          },
  };
}
