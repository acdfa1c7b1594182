// Owns the nodemailer SMTP transports of the email channels (main thread): one pooled transport
// per distinct server config (host, port, TLS, credentials, timeouts), reused by every channel
// and delivery that names it. Bounded: past MAX_IDLE_TRANSPORTS the least recently used
// transport no delivery is using is closed (a transport in use is never closed under it, so the
// count can exceed the bound by at most the deliveries in flight). close() closes them all.
// nodemailer is loaded with the first email sent, never at start (issue 26).
import { createHash } from 'node:crypto';

import type { Transporter } from 'nodemailer';

import { lazyImport } from '../../lazy/lazy-import.ts';
import { TIMEOUT_MS, type EmailConfig } from './types.ts';

type Nodemailer = (typeof import('nodemailer'))['default'];

const loadNodemailer = lazyImport('nodemailer', async (): Promise<Nodemailer> => (await import('nodemailer')).default);

const MAX_IDLE_TRANSPORTS = 32;
/** Connections one transport opens at most to its server. */
const MAX_CONNECTIONS = 2;
/** A pooled connection left idle this long is closed (servers drop idle clients anyway). */
const IDLE_TIMEOUT_MS = 30_000;

interface Entry {
  transport: Transporter;
  /** Deliveries using it now. */
  users: number;
}

export class SmtpTransports {
  /** By key, least recently used first (a Map keeps insertion order; use moves an entry last). */
  private readonly entries = new Map<string, Entry>();

  get size(): number {
    return this.entries.size;
  }

  /** Runs `use` with the transport of `config`'s server, kept open while it runs. Rejects with a
   * ModuleLoadError when nodemailer cannot be loaded. */
  async with<T>(config: EmailConfig, use: (transport: Transporter) => Promise<T>): Promise<T> {
    const nodemailer = await loadNodemailer();
    const key = transportKey(config);
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    else entry = { transport: createTransport(nodemailer, config), users: 0 };
    this.entries.set(key, entry);
    entry.users++;
    this.evict();
    try {
      return await use(entry.transport);
    } finally {
      entry.users--;
    }
  }

  /** Closes every transport (their pooled connections); deliveries still using one fail. */
  close(): void {
    for (const entry of this.entries.values()) entry.transport.close();
    this.entries.clear();
  }

  private evict(): void {
    if (this.entries.size <= MAX_IDLE_TRANSPORTS) return;
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= MAX_IDLE_TRANSPORTS) return;
      if (entry.users > 0) continue;
      entry.transport.close();
      this.entries.delete(key);
    }
  }
}

/** The server part of a config, hashed: the password is not kept as a map key. */
function transportKey(c: EmailConfig): string {
  const server = [c.host, c.port, c.secure, c.username ?? '', c.password ?? '', c.rejectUnauthorized !== false, c.timeoutMs];
  return createHash('sha256').update(JSON.stringify(server)).digest('hex');
}

function createTransport(nodemailer: Nodemailer, c: EmailConfig): Transporter {
  const timeout = c.timeoutMs ?? TIMEOUT_MS.default;
  return nodemailer.createTransport({
    pool: true,
    host: c.host,
    port: c.port,
    secure: c.secure,
    ...(c.username !== undefined ? { auth: { user: c.username, pass: c.password ?? '' } } : {}),
    tls: { rejectUnauthorized: c.rejectUnauthorized !== false },
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    maxConnections: MAX_CONNECTIONS,
    idleTimeout: IDLE_TIMEOUT_MS,
    // A message whose connection closed under it is not sent again by the pool: the notifier's
    // own retries (counted, with backoff) do it.
    maxRequeues: 0,
  });
}
