// The part of a SQL store that does not depend on the dialect, shared by ../postgres and ../mysql:
// the lifecycle (new -> open -> closed), every call queued into the group commit (./group-commit.ts)
// so concurrent writes share one transaction and reads see every write issued before them,
// addMessage and removeDelivery calls queued together merged into multi-row statements, and the
// removal of messages that nothing refers to any more. A dialect extends SqlStore with its driver
// (connection, transaction, migrations, error classification) and its SQL: the Store methods that
// are a statement or two, and the few statements the shared flows are built from (the abstract
// methods under "Statements"). The audit log's flows are here too (./audit-rows.ts holds its SQL):
// entries checked before they are queued, appends sharing the group commit, a query's page and
// count issued together, pruning in bounded transactions.
import { AUDIT_PRUNE_CHUNK, checkAuditQuery, checkPruneBefore, encodeAudit } from '../audit.ts';
import { StoreError } from '../errors.ts';
import type { AuditEntry, AuditQuery, NewDelivery, StoredMessage } from '../types.ts';
import { auditRow, auditStatements, toAuditEntry, type AuditRow } from './audit-rows.ts';
import { GroupCommit } from './group-commit.ts';
import { deliveryRow, type DeliveryRow, type Row } from './rows.ts';

/** Ids per IN (...) list, well below the 65535 bind parameters of one PostgreSQL statement. */
export const ID_CHUNK = 10_000;
/** Delivery rows per multi-row INSERT (8 columns: 40 000 bind parameters). */
const DELIVERY_ROWS = 5_000;

/** One addMessage call waiting to be merged with its neighbours in the queue. */
interface AddItem {
  message: StoredMessage;
  deliveries: NewDelivery[];
}

/** One removeDelivery call waiting to be merged with its neighbours in the queue. */
export interface DeliveryKey {
  clientId: string;
  messageId: bigint;
}

/** `Tx` is the driver's handle on the open transaction, `Result` what one of its queries resolves to. */
export abstract class SqlStore<Tx, Result> {
  private state: 'new' | 'open' | 'closed' = 'new';
  private readonly commit: GroupCommit<Tx>;

  /** `backend` names the store in error messages; `classify` maps the driver's errors. */
  protected constructor(
    private readonly backend: string,
    private readonly classify: (err: unknown) => StoreError,
  ) {
    this.commit = new GroupCommit<Tx>({ transaction: (body) => this.transaction(body), classify });
  }

  // Driver specifics.

  /** Runs `body` in one transaction: resolves after COMMIT, rejects after ROLLBACK or when the connection is gone. */
  protected abstract transaction(body: (tx: Tx) => Promise<void>): Promise<void>;
  /** Connects and creates or migrates the schema; leaves no connection behind when it throws. */
  protected abstract connectAndMigrate(): Promise<void>;
  /** Releases the connections; the queue has drained. */
  protected abstract disconnect(): Promise<void>;
  /** The rows of a query's result. */
  protected abstract rows(result: Result): Row[];

  // Statements the shared flows are built from.

  /** INSERTs the messages, keeping a message already stored; issues every statement at once (the
   * merged addMessage job is pipelined) and returns one promise per statement. */
  protected abstract insertMessageRows(tx: Tx, messages: StoredMessage[]): Promise<unknown>[];
  /** INSERTs deliveries (at most DELIVERY_ROWS) in one statement, issued at once, replacing the row
   * of a (client, message) pair already stored. */
  protected abstract upsertDeliveryRows(tx: Tx, rows: DeliveryRow[]): Promise<unknown>;
  /** DELETEs the deliveries (any number of them). */
  protected abstract deleteDeliveryRows(tx: Tx, keys: DeliveryKey[]): Promise<void>;
  /** DELETEs those of the messages (at most ID_CHUNK) that no delivery and no retained entry refers to. */
  protected abstract deleteMessagesUnlessReferenced(tx: Tx, ids: bigint[]): Promise<unknown>;
  /** DELETEs what the clients (at most ID_CHUNK) own: subscriptions, incoming QoS 2 ids and
   * deliveries; resolves with the distinct ids of the messages those deliveries referred to. */
  protected abstract deleteOwnedRows(tx: Tx, clientIds: string[]): Promise<bigint[]>;

  /** The dialect's n-th (1-based) bind parameter in raw SQL: `$1` or `?`. */
  protected abstract placeholder(n: number): string;
  /** Issues raw SQL with bind parameters at once (pipelined jobs) and resolves with its rows. */
  protected abstract selectRows(tx: Tx, sql: string, params: unknown[]): Promise<Row[]>;
  /** INSERTs audit rows, skipping an id already stored; issues every statement at once and
   * returns one promise per statement (split as the dialect's limits need). */
  protected abstract insertAuditRows(tx: Tx, rows: AuditRow[]): Promise<unknown>[];
  /** DELETEs at most `limit` audit rows older than `before`; resolves with how many. */
  protected abstract deleteAuditRows(tx: Tx, before: number, limit: number): Promise<number>;

  /** A reason to refuse an addMessage call before it is queued (where it would fail its whole batch). */
  protected refuseMessage(_message: StoredMessage, _deliveries: NewDelivery[]): StoreError | undefined {
    return undefined;
  }

  /** False while batches fail (server unreachable); true again once one commits. */
  get healthy(): boolean {
    return this.commit.healthy;
  }

  async open(): Promise<void> {
    if (this.state !== 'new') throw new StoreError('STORE_INVALID', `${this.backend} store cannot open: it is ${this.state}`);
    try {
      await this.connectAndMigrate();
    } catch (err) {
      this.state = 'closed';
      if (err instanceof StoreError) throw err;
      const e = this.classify(err);
      throw e.code === 'STORE_UNAVAILABLE' ? e : new StoreError('STORE_MIGRATION', `${this.backend} schema migration failed: ${e.message}`, { cause: err });
    }
    this.state = 'open';
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    await this.commit.drain();
    await this.disconnect();
  }

  addMessage(message: StoredMessage, deliveries: NewDelivery[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    const refused = this.refuseMessage(message, deliveries);
    if (refused) return Promise.reject(refused);
    return this.commit.submitMerged('addMessage', { message, deliveries }, (tx, items) => this.insertMessages(tx, items as AddItem[]));
  }

  removeDelivery(clientId: string, messageId: bigint): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    // Acknowledgements arrive in streams while a subscriber drains: queued ones become one DELETE.
    return this.commit.submitMerged('removeDelivery', { clientId, messageId }, (tx, items) => this.removeDeliveries(tx, items as DeliveryKey[]));
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    let rows: AuditRow[];
    try {
      // Checked here, not in the transaction: a bad entry must not fail the other callers' batch.
      rows = encodeAudit(entries).map(auditRow);
    } catch (err) {
      return Promise.reject(err);
    }
    if (rows.length === 0) return Promise.resolve();
    return this.exec(true, (tx) => Promise.all(this.insertAuditRows(tx, rows)));
  }

  queryAudit(q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }> {
    try {
      checkAuditQuery(q);
    } catch (err) {
      return Promise.reject(err);
    }
    const s = auditStatements(q, (n) => this.placeholder(n));
    // A read of two statements (read() maps one): queued like any call, both issued at once.
    return this.write(true, async (tx) => {
      const page = this.selectRows(tx, s.select, s.selectParams);
      const count = this.selectRows(tx, s.count, s.countParams);
      const [rows, [counted]] = await Promise.all([page, count]);
      return { entries: rows.map(toAuditEntry), total: Number(counted.total) };
    });
  }

  /** One transaction per AUDIT_PRUNE_CHUNK entries removed, so other writes go in between. */
  async pruneAudit(before: number): Promise<number> {
    checkPruneBefore(before);
    let removed = 0;
    for (;;) {
      const n = await this.write(true, (tx) => this.deleteAuditRows(tx, before, AUDIT_PRUNE_CHUNK));
      removed += n;
      if (n < AUDIT_PRUNE_CHUNK) return removed;
    }
  }

  /** Queues a write whose result is not returned. */
  protected exec(pipelined: boolean, run: (tx: Tx) => Promise<unknown>): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(async (tx) => {
      await run(tx);
    }, pipelined);
  }

  /** Queues a write; `pipelined` jobs must issue every statement before their first await. */
  protected write<T>(pipelined: boolean, run: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(run, pipelined);
  }

  /** Reads go through the same queue, so they see every write issued before them. */
  protected read<T>(query: (tx: Tx) => Promise<Result>, map: (rows: Row[]) => T): Promise<T> {
    if (this.state !== 'open') return Promise.reject(this.notOpen());
    return this.commit.submit(async (tx) => map(this.rows(await query(tx))), true);
  }

  /** Deletes those of the given messages that no delivery and no retained entry refers to any
   * more: a message is stored once and goes with the last reference to it. */
  protected deleteUnreferencedMessages(tx: Tx, ids: bigint[]): Promise<unknown> {
    const done: Promise<unknown>[] = [];
    for (let i = 0; i < ids.length; i += ID_CHUNK) done.push(this.deleteMessagesUnlessReferenced(tx, ids.slice(i, i + ID_CHUNK)));
    return Promise.all(done);
  }

  /** Removes what sessions own (subscriptions, incoming QoS 2 ids, deliveries) and the messages left unreferenced. */
  protected async dropOwned(tx: Tx, clientIds: string[]): Promise<void> {
    for (let i = 0; i < clientIds.length; i += ID_CHUNK) {
      const messageIds = await this.deleteOwnedRows(tx, clientIds.slice(i, i + ID_CHUNK));
      if (messageIds.length > 0) await this.deleteUnreferencedMessages(tx, messageIds);
    }
  }

  /** Many addMessage calls as multi-row INSERTs, every statement issued at once (pipelined). */
  private insertMessages(tx: Tx, items: AddItem[]): Promise<unknown> {
    const done = this.insertMessageRows(tx, items.map((i) => i.message));
    // One row per (client, message): a later call for the same pair replaces the earlier one.
    const deliveries = new Map<string, DeliveryRow>();
    for (const { message, deliveries: ds } of items) {
      for (const d of ds) deliveries.set(`${d.clientId}\u0000${message.id}`, deliveryRow(message.id, d));
    }
    const rows = [...deliveries.values()];
    for (let i = 0; i < rows.length; i += DELIVERY_ROWS) done.push(this.upsertDeliveryRows(tx, rows.slice(i, i + DELIVERY_ROWS)));
    // A message given no delivery is referred to by nothing and is not kept.
    const orphans = items.filter((i) => i.deliveries.length === 0).map((i) => i.message.id);
    if (orphans.length > 0) done.push(this.deleteUnreferencedMessages(tx, orphans));
    return Promise.all(done);
  }

  /** Many removeDelivery calls: the deliveries, then the messages they leave unreferenced. */
  private async removeDeliveries(tx: Tx, items: DeliveryKey[]): Promise<void> {
    await this.deleteDeliveryRows(tx, items);
    await this.deleteUnreferencedMessages(tx, [...new Set(items.map((d) => d.messageId))]);
  }

  private notOpen(): StoreError {
    return new StoreError('STORE_CLOSED', this.state === 'new' ? `${this.backend} store is not open yet` : `${this.backend} store is closed`);
  }
}
