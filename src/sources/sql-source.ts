// Owns what the two SQL sources share (main thread): one pool per source, bounded by poolSize;
// every operation under the per-operation deadline (requestTimeout) and counted in the health
// (up/down from its outcome, a probe while down); `insert` as one multi-row INSERT with quoted,
// validated identifiers and every value a parameter (split only when the rows exceed the
// protocol's parameter limit); `check` on a separate connection. The dialect's driver (mysql.ts,
// postgresql.ts) brings the pool, the placeholders and the error classification.
import type { Logger } from '../log/index.ts';
import { HealthTracker, isUnreachable } from './health.ts';
import { Limiter, type Ticket } from './limiter.ts';
import type { SqlConfig } from './sql-config.ts';
import { quoteIdentifier, quoteTable, type Dialect } from './sql-identifier.ts';
import { withTimeout } from './timeout.ts';
import { SourceError, type CheckResult, type Row, type SourceHealth, type SqlResult, type SqlSource } from './types.ts';

/** The deadline of an operation while the source is down, ms (at most its requestTimeout). */
const DOWN_DEADLINE_MS = 2000;

/** A statement handed to the pool, with a way to abandon it at its deadline. */
export interface RunningQuery {
  result: Promise<SqlResult>;
  cancel(): void;
}

export interface SqlDriver {
  readonly dialect: Dialect;
  /** Most parameters one statement may carry. */
  readonly maxParams: number;
  /** The placeholder of the `n`th parameter (1-based). */
  placeholder(n: number): string;
  /** Runs one statement on the pool; `prepare`: the text repeats (worth a server-side plan). */
  run(sql: string, params: unknown[], prepare: boolean): RunningQuery;
  /** The driver's error as a SourceError (kind, transient). */
  classify(err: unknown): SourceError;
  /** Connects a separate connection, runs SELECT 1, closes it. */
  checkOnce(timeoutMs: number): Promise<void>;
  /** Replaces the pool with a new one and ends the old at once: its pending work fails. */
  reset(): void;
  end(): Promise<void>;
}

export class PooledSqlSource implements SqlSource {
  private readonly tracker: HealthTracker;
  private readonly limiter: Limiter;
  private readonly log: Logger;
  private closed = false;

  constructor(
    readonly id: string,
    readonly type: 'mysql' | 'postgresql',
    private readonly config: SqlConfig,
    private readonly driver: SqlDriver,
    log: Logger,
  ) {
    this.log = log.child({ source: id, type });
    this.limiter = new Limiter(config.poolSize);
    this.tracker = new HealthTracker({ log: this.log, probe: () => this.probe(), inFlight: () => this.limiter.active });
    // Open the pool in the background: a server that is down at start shows in the health.
    void this.probe().then(
      () => this.tracker.succeeded(),
      (err: unknown) => this.tracker.wentDown(err),
    );
  }

  health(): SourceHealth {
    return this.tracker.snapshot();
  }

  async check(timeoutMs = this.config.connectTimeout): Promise<CheckResult> {
    const started = performance.now();
    try {
      await withTimeout(this.driver.checkOnce(timeoutMs), timeoutMs + 500, 'check');
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (err) {
      const e = err instanceof SourceError ? err : this.driver.classify(err);
      return { ok: false, latencyMs: Math.round(performance.now() - started), failure: e.kind, message: e.message };
    }
  }

  async insert(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void> {
    if (rows.length === 0) return;
    if (columns.length === 0) throw new SourceError('insert without columns', 'database', false);
    const d = this.driver.dialect;
    const head = `INSERT INTO ${quoteTable(table, d)} (${columns.map((c) => quoteIdentifier(c, d)).join(', ')}) VALUES `;
    const perStatement = Math.max(1, Math.floor(this.driver.maxParams / columns.length));
    for (let start = 0; start < rows.length; start += perStatement) {
      const chunk = rows.slice(start, start + perStatement);
      const params: unknown[] = [];
      const tuples: string[] = [];
      for (const row of chunk) {
        if (row.length !== columns.length) {
          throw new SourceError(`a row has ${row.length} values for ${columns.length} columns`, 'database', false);
        }
        const marks: string[] = [];
        for (const value of row) {
          params.push(value === undefined ? null : value);
          marks.push(this.driver.placeholder(params.length));
        }
        tuples.push(`(${marks.join(', ')})`);
      }
      // Unprepared: the text changes with the row count, and a plan per count is not worth keeping.
      await this.execute(head + tuples.join(', '), params, false);
    }
  }

  async query(sql: string, params: readonly unknown[]): Promise<Row[]> {
    return (await this.queryWithColumns(sql, params)).rows;
  }

  queryWithColumns(sql: string, params: readonly unknown[]): Promise<SqlResult> {
    return this.execute(sql, params.map((v) => (v === undefined ? null : v)), true);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tracker.close();
    try {
      await this.driver.end();
    } catch (err) {
      // mysql2 rejects end() with the error of a connection that was failing: the pool is ended anyway.
      this.log.debug('pool ended with an error', { error: err });
    }
  }

  private execute(sql: string, params: unknown[], prepare: boolean): Promise<SqlResult> {
    if (this.closed) return Promise.reject(new SourceError(`source ${this.id} is closed`, 'other', false));
    const ticket: Ticket & { cancel?: () => void } = { expired: false };
    const work = this.limiter.run(() => {
      const running = this.driver.run(sql, params, prepare);
      ticket.cancel = running.cancel;
      return running.result;
    }, ticket);
    // While the server is unreachable an attempt may sit in a connect that a server shutting down
    // or starting up neither accepts nor refuses: it is given up on sooner, so the caller's next
    // attempt (a pipeline retries every second at most) finds the server as soon as it is back.
    const deadline = this.tracker.current === 'down' ? Math.min(this.config.requestTimeout, DOWN_DEADLINE_MS) : this.config.requestTimeout;
    const down = deadline !== this.config.requestTimeout;
    const bounded = withTimeout(work, deadline, `${this.type} query`, () => {
      ticket.expired = true;
      ticket.cancel?.();
      // A pool whose connects hang (a server shutting down or starting up) holds every slot:
      // it is replaced, and its stuck work fails and frees the slots.
      if (down) this.resetPool();
    }).catch((err: unknown) => {
      throw err instanceof SourceError ? err : this.driver.classify(err);
    });
    // The work itself may still fail after its deadline answered the caller: nobody awaits it then.
    work.catch(() => {});
    return this.tracker.track(bounded, isUnreachable);
  }

  private lastReset = 0;

  private resetPool(): void {
    const now = Date.now();
    if (now - this.lastReset < DOWN_DEADLINE_MS) return;
    this.lastReset = now;
    this.log.debug('pool replaced while the server is unreachable', { source: this.id });
    this.driver.reset();
  }

  /** SELECT 1 through the pool (reconnecting it), under the connect deadline. */
  private async probe(): Promise<void> {
    const running = this.driver.run('SELECT 1', [], true);
    try {
      await withTimeout(running.result, this.config.connectTimeout + this.config.requestTimeout, 'probe', () => running.cancel());
    } catch (err) {
      throw err instanceof SourceError ? err : this.driver.classify(err);
    }
  }
}
