// Owns the connections of one `ldap` policy to its directory (main thread): at most `size` of
// them, each used by one operation sequence at a time (a bind changes the whole connection), kept
// between uses. A connection remembers whom it is bound as: a search runs on one bound as the
// service account (bound again when it is not), a user's bind preferably on one that is not, so
// searches and binds do not keep rebinding the same socket. Waiting for a connection is bounded
// in time (`timeout`) and in number (MAX_POOL_WAITERS; past it a question fails at once, counted).
//
// Opening a connection tries the urls in order, starting from the last that answered; with
// StartTLS the upgrade happens before anything else is sent. ldapts would reconnect a dropped
// socket by itself on the next operation, in clear and unbound: here a client gets exactly one
// socket, and one whose socket is gone, or whose operation failed other than with an LDAP result
// code (a timeout, a reset), is closed and never used again.
import net from 'node:net';
import tls from 'node:tls';

import type { Client } from 'ldapts';

import { lazyImport } from '../lazy/lazy-import.ts';
import type { LdapStats } from './ldap-stats.ts';

/** ldapts, loaded with the first connection an LDAP policy opens (or its first dry run). */
export const loadLdapts = lazyImport('ldapts', () => import('ldapts'));

/** Questions that may wait for a connection at once; more fail at once (and are counted). */
export const MAX_POOL_WAITERS = 1000;

export interface LdapPoolOptions {
  urls: readonly string[];
  startTls: boolean;
  /** null: plain ldap://, or ldaps:// and StartTLS verified against the system's CAs. */
  tls: { rejectUnauthorized: boolean; ca?: string } | null;
  connectTimeout: number;
  timeout: number;
  size: number;
  service: { dn: string; password: string } | null;
  stats: LdapStats;
}

/** Whom a connection is bound as now. */
export type Identity = 'anonymous' | 'service' | 'user';

export interface Lease {
  readonly client: Client;
  /** Set by whoever binds on it (a user's bind). */
  as: Identity;
}

interface Conn extends Lease {
  url: string;
  /** The client has used its socket (before that, ldapts does not call itself connected). */
  used: boolean;
  socketClosed: boolean;
  socket: net.Socket;
}

interface Waiter {
  resolve(conn: Conn): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** search: bound as the service account (or anonymous without one); bind: for a user's bind. */
export type Purpose = 'search' | 'bind';

/** No connection could be had: none free in time, too many waiting, none could be opened, the
 * policy is closing. */
export class LdapPoolError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LdapPoolError';
  }
}

/** The service account's bind was refused: the policy's config is wrong, not the client. */
export class ServiceBindError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ServiceBindError';
  }
}

/** The LDAP result code of an error the directory answered (ldapts' ResultCodeError), or
 * undefined for anything else (a socket error, a timeout, TLS). */
export function resultCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'number' ? code : undefined;
}

export class LdapPool {
  private readonly idle: Conn[] = [];
  private busy = 0;
  private opening = 0;
  private readonly waiters: Waiter[] = [];
  /** The url tried first: the last that answered. */
  private first = 0;
  private closed = false;

  constructor(private readonly options: LdapPoolOptions) {}

  /** Connections now: idle (those the directory closed meanwhile dropped first), in use, and
   * being opened. */
  get counts(): { idle: number; busy: number; opening: number; waiting: number } {
    this.dropDead();
    return { idle: this.idle.length, busy: this.busy, opening: this.opening, waiting: this.waiters.length };
  }

  /**
   * Runs `fn` on a connection of its own: for a search, bound as the service account (or
   * anonymous without one). A failure of `fn` other than an LDAP result code closes the
   * connection. Rejects with LdapPoolError when no connection could be had in time.
   */
  async use<T>(purpose: Purpose, fn: (lease: Lease) => Promise<T>): Promise<T> {
    const conn = await this.acquire(purpose);
    let broken = false;
    try {
      if (purpose === 'search') await this.bindForSearch(conn);
      return await fn(conn);
    } catch (err) {
      if (resultCodeOf(err) === undefined && !(err instanceof ServiceBindError)) broken = true;
      throw err;
    } finally {
      conn.used = true;
      this.release(conn, broken);
    }
  }

  /** Opens one connection outside the pool (the dry run), with StartTLS when configured. */
  async probe<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    const conn = await this.open();
    try {
      return await fn(conn.client);
    } finally {
      this.destroy(conn);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new LdapPoolError('the policy is closing'));
    }
    for (const conn of this.idle.splice(0)) this.destroy(conn);
  }

  private async bindForSearch(conn: Conn): Promise<void> {
    const service = this.options.service;
    if (service !== null) {
      if (conn.as === 'service') return;
      try {
        await conn.client.bind(service.dn, service.password);
      } catch (err) {
        conn.as = 'anonymous';
        const code = resultCodeOf(err);
        this.options.stats.count('service-bind', code === 49 ? 'refused' : 'error');
        if (code === undefined) throw err;
        throw new ServiceBindError(`the service account's bind was refused: ${(err as Error).message}`, { cause: err });
      }
      this.options.stats.count('service-bind', 'ok');
      conn.as = 'service';
      return;
    }
    if (conn.as !== 'user') return;
    // Back to anonymous after a user's bind: searches must not run with a client's rights.
    await conn.client.bind('', '');
    conn.as = 'anonymous';
  }

  private acquire(purpose: Purpose): Promise<Conn> {
    if (this.closed) return Promise.reject(new LdapPoolError('the policy is closing'));
    // A user's bind would undo an idle connection's service binding (the next search binds
    // again): while the pool may grow, it gets a connection of its own instead.
    let conn = this.takeIdle(purpose, true);
    if (conn === undefined && (purpose === 'search' || this.total() >= this.options.size)) conn = this.takeIdle(purpose, false);
    if (conn !== undefined) {
      this.busy++;
      return Promise.resolve(conn);
    }
    if (this.total() < this.options.size) return this.openBusy();
    if (this.waiters.length >= MAX_POOL_WAITERS) {
      this.options.stats.waits.full++;
      return Promise.reject(new LdapPoolError(`all ${this.options.size} connections are busy and ${MAX_POOL_WAITERS} questions wait`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          this.options.stats.waits.timeout++;
          reject(new LdapPoolError(`no connection was free within ${this.options.timeout} ms (all ${this.options.size} busy)`));
        }, this.options.timeout),
      };
      this.waiters.push(waiter);
    });
  }

  /** An idle connection still alive: one already bound right for `purpose`, or (unless `only`)
   * any. */
  private takeIdle(purpose: Purpose, only: boolean): Conn | undefined {
    this.dropDead();
    if (this.idle.length === 0) return undefined;
    const wanted = (c: Conn) => (purpose === 'search' ? c.as === (this.options.service === null ? 'anonymous' : 'service') : c.as !== 'service');
    const i = this.idle.findIndex(wanted);
    if (i < 0 && only) return undefined;
    return this.idle.splice(i >= 0 ? i : this.idle.length - 1, 1)[0];
  }

  private async openBusy(): Promise<Conn> {
    this.opening++;
    try {
      const conn = await this.open();
      this.busy++;
      return conn;
    } finally {
      this.opening--;
    }
  }

  private release(conn: Conn, broken: boolean): void {
    this.busy--;
    if (broken || this.closed || !alive(conn)) {
      this.destroy(conn);
      this.serveWaiterWithNew();
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter === undefined) {
      this.idle.push(conn);
      return;
    }
    clearTimeout(waiter.timer);
    this.options.stats.waits.served++;
    this.busy++;
    waiter.resolve(conn);
  }

  /** Closes the idle connections whose socket is gone (the directory's idle timeout, a restart). */
  private dropDead(): void {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      if (!alive(this.idle[i])) this.destroy(this.idle.splice(i, 1)[0]);
    }
  }

  /** A connection closed while questions wait: a new one for the first of them. */
  private serveWaiterWithNew(): void {
    if (this.closed || this.waiters.length === 0 || this.total() >= this.options.size) return;
    const waiter = this.waiters.shift()!;
    clearTimeout(waiter.timer);
    this.openBusy().then(
      (conn) => {
        this.options.stats.waits.served++;
        waiter.resolve(conn);
      },
      (err: Error) => waiter.reject(err),
    );
  }

  private total(): number {
    return this.idle.length + this.busy + this.opening;
  }

  /** A connection to the first url that answers (from the last that did), upgraded with
   * StartTLS when configured. */
  private async open(): Promise<Conn> {
    const { urls, stats } = this.options;
    const { Client } = await loadLdapts();
    const failures: string[] = [];
    let last: unknown;
    for (let i = 0; i < urls.length; i++) {
      const index = (this.first + i) % urls.length;
      const url = urls[index];
      let socket: net.Socket | undefined;
      try {
        socket = await this.connect(url);
        const conn = this.clientOn(Client, url, socket);
        if (this.options.startTls) {
          await withDeadline(conn.client.startTLS(this.tlsOptions(new URL(url).hostname)), this.options.connectTimeout, 'StartTLS');
          conn.used = true;
        }
        this.first = index;
        stats.count('connect', 'ok');
        return conn;
      } catch (err) {
        socket?.destroy();
        stats.count('connect', 'error');
        failures.push(`${url}: ${errorText(err)}`);
        last = err;
      }
    }
    // The cause: the last url's failure (a TLS one names its certificate problem in its code).
    throw new LdapPoolError(`cannot connect: ${failures.join('; ')}`, { cause: last });
  }

  /** The TCP (ldap://) or TLS (ldaps://) socket, connected within connectTimeout. */
  private connect(url: string): Promise<net.Socket> {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    const secure = u.protocol === 'ldaps:';
    const port = u.port === '' ? (secure ? 636 : 389) : Number(u.port);
    return new Promise((resolve, reject) => {
      const socket = secure ? tls.connect({ host, port, ...this.tlsOptions(host) }) : net.connect({ host, port });
      const timer = setTimeout(() => fail(new Error(`no connection within ${this.options.connectTimeout} ms`)), this.options.connectTimeout);
      const fail = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      socket.once('error', fail);
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', fail);
        resolve(socket);
      });
    });
  }

  /** An ldapts client on `socket`, which it may use once: a second connection attempt (ldapts
   * reconnecting a dropped socket, in clear and unbound) fails instead. */
  private clientOn(ClientClass: typeof Client, url: string, socket: net.Socket): Conn {
    let handed = false;
    const once = () => {
      if (handed) throw new Error('the connection was lost');
      handed = true;
      return socket;
    };
    const secure = url.startsWith('ldaps:');
    const closed = () => (conn.socketClosed = true);
    // ldap:// with StartTLS: the upgrade of that socket. ldapts watches the TCP socket's close,
    // not the TLS one's, and would still call itself connected: the pool watches both.
    const upgrade = (options: tls.ConnectionOptions) => tls.connect(options).once('close', closed);
    const client = new ClientClass({
      url,
      timeout: this.options.timeout,
      connectTimeout: this.options.connectTimeout,
      createConnection: once as unknown as typeof net.connect,
      createSecureConnection: (secure ? once : upgrade) as unknown as typeof tls.connect,
    });
    const conn: Conn = { client, url, as: 'anonymous', used: false, socketClosed: false, socket };
    socket.once('close', closed);
    // Until ldapts takes the socket, its errors are ours to hear (then 'close' follows).
    socket.on('error', () => {});
    return conn;
  }

  private tlsOptions(host: string): tls.ConnectionOptions {
    const t = this.options.tls ?? { rejectUnauthorized: true };
    const options: tls.ConnectionOptions = { host, rejectUnauthorized: t.rejectUnauthorized };
    if (t.ca !== undefined) options.ca = t.ca;
    // SNI takes a host name, never an address (RFC 6066 section 3).
    if (net.isIP(host) === 0) options.servername = host;
    return options;
  }

  private destroy(conn: Conn): void {
    conn.client.unbind().catch(() => {});
    conn.socket.destroy();
  }
}

function alive(conn: Conn): boolean {
  return !conn.socketClosed && (!conn.used || conn.client.isConnected);
}

/** `p`, or a rejection naming `what` after `ms`. */
function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

export function errorText(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': ');
}
