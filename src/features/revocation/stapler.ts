// OCSP stapling (sslConfig.ocspStapling), in the main thread: one fetch per endpoint, whatever the
// number of workers. For every TLS endpoint that staples, the server certificate's status is asked
// of its responder (the override, or the certificate's AIA), checked, and handed to every worker
// (the `ocspStaples` worker state: the DER response and the certificate it is for), which staples
// it to the handshakes of clients that ask. A response is fetched again `refreshBefore` seconds
// before its nextUpdate (at most half way through its validity); a failed fetch is tried again
// with backoff (5 s doubling to 5 min, never past the next planned refresh), and the last good
// response is stapled until its nextUpdate, then no staple. A response without nextUpdate is
// fetched again every refreshBefore seconds and stapled for twice that at most. Certificates are
// read again when the endpoints change and on SIGHUP. Owned by the main thread.
import type { X509Certificate } from 'node:crypto';

import type { EndpointConfig, OcspStapling } from '../../broker/endpoint-config.ts';
import { OCSP_DEFAULTS } from '../../broker/endpoint-config.ts';
import { readServerCertificate } from '../../broker/certificates.ts';
import type { Logger } from '../../log/index.ts';
import type { OcspStaple } from '../../listener/listeners.ts';
import { lazyImport } from '../../lazy/lazy-import.ts';
import type { OcspAnswer } from './ocsp.ts';

const loadOcsp = lazyImport('pkijs', () => import('./ocsp.ts'));

export const RETRY_FIRST_MS = 5_000;
export const RETRY_MAX_MS = 5 * 60_000;

/** What the admin API, the metrics and the console show of one endpoint's staple. */
export interface StapleStatus {
  endpoint: string;
  responder: string | null;
  /** stapled: a current response is served; fetching: none yet; failing: the last fetch failed
   * (a response may still be stapled: see `stapled`); error: the certificate cannot be asked
   * about (its issuer or responder unknown, a file unreadable). */
  state: 'fetching' | 'stapled' | 'failing' | 'error';
  stapled: boolean;
  /** ISO times of the stapled response. */
  thisUpdate: string | null;
  nextUpdate: string | null;
  /** The certificate's status in the stapled response. */
  certStatus: 'good' | 'revoked' | 'unknown' | null;
  lastError: string | null;
  /** ISO time of the next fetch. */
  nextFetch: string | null;
}

/** What the stapler counts (src/features/revocation/metrics.ts reads it). */
export interface StaplerCounts {
  /** Fetches by result: good, revoked, unknown, or a failure (unreachable, timeout, ...). */
  requests: Record<string, number>;
}

interface Entry {
  id: string;
  config: EndpointConfig;
  /** The settings and files the entry was made from (a change makes a new entry). */
  signature: string;
  ssl: NonNullable<EndpointConfig['sslConfig']>;
  settings: OcspStapling;
  responder: string | null;
  /** The DER of the certificate the responses are for. */
  leaf: Buffer | null;
  current: OcspAnswer | null;
  /** Epoch ms the current response stops being stapled. */
  staleAt: number;
  state: StapleStatus['state'];
  lastError: string | null;
  timer: NodeJS.Timeout | null;
  nextFetch: number | null;
  retryMs: number;
  /** Bumped when the entry is dropped or replaced: a fetch still running then is ignored. */
  alive: boolean;
}

export interface StaplerDeps {
  log: Logger;
  /** Sends the staples to every worker (the whole set each time). */
  publish(staples: Record<string, OcspStaple>): void;
  now?: () => number;
  /** Asks the responder about the certificate (tests give their own); default: OCSP over HTTP. */
  ask?: (server: Asked, timeoutMs: number, now: number) => Promise<OcspAnswer>;
}

/** What is asked about: the certificate, its issuer, and the responder. */
export interface Asked {
  leaf: X509Certificate;
  issuer: X509Certificate;
  responder: string;
}

/** The status of the certificate from its responder, checked (ocsp.ts, loaded on first use). */
async function askResponder(server: Asked, timeoutMs: number, now: number): Promise<OcspAnswer> {
  const ocsp = await loadOcsp();
  const request = await ocsp.ocspRequest(server.leaf, server.issuer);
  return ocsp.checkResponse(await ocsp.postOcsp(server.responder, request, timeoutMs), server.leaf, server.issuer, now);
}

export class Stapler {
  private readonly entries = new Map<string, Entry>();
  readonly counts: StaplerCounts = { requests: {} };
  private readonly now: () => number;
  private readonly ask: NonNullable<StaplerDeps['ask']>;
  private closed = false;

  constructor(private readonly deps: StaplerDeps) {
    this.now = deps.now ?? Date.now;
    this.ask = deps.ask ?? askResponder;
  }

  /** The endpoints as they are now: entries for those that staple (new or changed ones read
   * their certificate and fetch at once), none for the others. */
  configure(endpoints: readonly EndpointConfig[]): void {
    if (this.closed) return;
    const wanted = new Map<string, EndpointConfig>();
    for (const e of endpoints) if (e.enabled && !e.useWebsocket && e.sslConfig?.ocspStapling?.enabled) wanted.set(e.id, e);
    let changed = false;
    for (const [id, entry] of this.entries) {
      const e = wanted.get(id);
      if (!e || signatureOf(e) !== entry.signature) {
        this.drop(entry);
        changed = true;
      }
    }
    for (const e of wanted.values()) {
      if (this.entries.has(e.id)) continue;
      this.start(e);
    }
    if (changed) this.publish();
  }

  /** SIGHUP: the certificate files may have changed. Each entry reads its certificate again; a
   * new certificate drops the staple of the old one and fetches at once. */
  reload(): void {
    for (const entry of [...this.entries.values()]) {
      const leaf = this.readLeaf(entry);
      if (leaf !== null && entry.leaf !== null && leaf.equals(entry.leaf)) continue;
      this.drop(entry);
      this.start(entry.config);
    }
    this.publish();
  }

  status(): StapleStatus[] {
    return [...this.entries.values()].map((e) => ({
      endpoint: e.id,
      responder: e.responder,
      state: e.state,
      stapled: this.isStapled(e),
      thisUpdate: e.current ? new Date(e.current.thisUpdate).toISOString() : null,
      nextUpdate: e.current?.nextUpdate !== undefined ? new Date(e.current.nextUpdate).toISOString() : null,
      certStatus: e.current?.status ?? null,
      lastError: e.lastError,
      nextFetch: e.nextFetch !== null ? new Date(e.nextFetch).toISOString() : null,
    }));
  }

  /** The stapled responses' ages and validity, for the gauges. */
  gauges(): { endpoint: string; stapled: boolean; ageSeconds: number | null; expiresAt: number | null }[] {
    const now = this.now();
    return [...this.entries.values()].map((e) => ({
      endpoint: e.id,
      stapled: this.isStapled(e),
      ageSeconds: e.current ? Math.max(0, (now - e.current.thisUpdate) / 1000) : null,
      expiresAt: e.current ? e.staleAt / 1000 : null,
    }));
  }

  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) this.drop(entry);
  }

  // ---------------------------------------------------------------------------------------

  private start(e: EndpointConfig): void {
    const ssl = e.sslConfig!;
    const settings = ssl.ocspStapling!;
    const entry: Entry = {
      id: e.id, config: e, signature: signatureOf(e), ssl, settings, responder: null, leaf: null, current: null, staleAt: 0, state: 'fetching',
      lastError: null, timer: null, nextFetch: null, retryMs: RETRY_FIRST_MS, alive: true,
    };
    this.entries.set(e.id, entry);
    void this.fetch(entry);
  }

  private drop(entry: Entry): void {
    entry.alive = false;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    this.entries.delete(entry.id);
  }

  private readLeaf(entry: Entry): Buffer | null {
    try {
      return readServerCertificate(entry.ssl.cert!, entry.ssl.ca, entry.settings.responderUrl).leaf.raw;
    } catch {
      return null;
    }
  }

  private async fetch(entry: Entry): Promise<void> {
    entry.timer = null;
    entry.nextFetch = null;
    let server;
    try {
      server = readServerCertificate(entry.ssl.cert!, entry.ssl.ca, entry.settings.responderUrl);
    } catch (err) {
      this.fail(entry, `the certificate cannot be read: ${(err as Error).message}`, 'error');
      return;
    }
    entry.responder = server.responder ?? null;
    if (entry.leaf !== null && !entry.leaf.equals(server.leaf.raw)) {
      // Another certificate in the file (changed without SIGHUP yet): the old response is not for it.
      entry.current = null;
      entry.staleAt = 0;
    }
    entry.leaf = server.leaf.raw;
    if (!server.issuer || !server.responder) {
      this.fail(entry, !server.issuer ? 'the issuer of the certificate is in neither cert nor ca' : 'the certificate names no OCSP responder and responderUrl is not set', 'error');
      return;
    }
    let answer: OcspAnswer;
    try {
      const asked = { leaf: server.leaf, issuer: server.issuer, responder: server.responder };
      answer = await this.ask(asked, entry.settings.timeoutMs ?? OCSP_DEFAULTS.stapleTimeoutMs, this.now());
    } catch (err) {
      if (!entry.alive) return;
      const failure = (err as { failure?: string }).failure ?? 'error';
      this.count(failure);
      this.fail(entry, (err as Error).message, 'failing');
      return;
    }
    if (!entry.alive) return;
    this.count(answer.status);
    const refreshBefore = (entry.settings.refreshBefore ?? OCSP_DEFAULTS.refreshBefore) * 1000;
    const now = this.now();
    // Stapled until nextUpdate; without one, for twice the refresh period.
    entry.staleAt = answer.nextUpdate ?? now + 2 * refreshBefore;
    entry.current = answer;
    entry.state = 'stapled';
    if (entry.lastError !== null) this.deps.log.info('OCSP staple fetched again', { endpoint: entry.id, responder: server.responder, status: answer.status });
    else this.deps.log.info('OCSP staple fetched', { endpoint: entry.id, responder: server.responder, status: answer.status, nextUpdate: answer.nextUpdate ? new Date(answer.nextUpdate).toISOString() : null });
    if (answer.status !== 'good') this.deps.log.warn('the OCSP responder says the server certificate is not good: it is stapled as it is (clients will refuse it)', { endpoint: entry.id, status: answer.status });
    entry.lastError = null;
    entry.retryMs = RETRY_FIRST_MS;
    const validity = answer.nextUpdate !== undefined ? answer.nextUpdate - answer.thisUpdate : 2 * refreshBefore;
    const refreshAt = answer.nextUpdate !== undefined
      ? answer.nextUpdate - Math.min(refreshBefore, validity / 2)
      : now + refreshBefore;
    this.schedule(entry, Math.max(refreshAt, now + 1000));
    this.publish();
  }

  private fail(entry: Entry, message: string, state: 'failing' | 'error'): void {
    if (!entry.alive) return;
    const fields = { endpoint: entry.id, responder: entry.responder, error: message, stapledUntil: this.isStapled(entry) ? new Date(entry.staleAt).toISOString() : null };
    if (entry.lastError === null) this.deps.log.warn('OCSP staple fetch failed; trying again with backoff', fields);
    else this.deps.log.debug('OCSP staple fetch failed again', fields);
    entry.lastError = message;
    entry.state = state;
    const now = this.now();
    let at = now + entry.retryMs;
    entry.retryMs = Math.min(entry.retryMs * 2, RETRY_MAX_MS);
    if (this.isStapled(entry)) {
      // The response expires at staleAt: drop it from the workers then if nothing new came.
      at = Math.min(at, entry.staleAt);
    } else if (entry.current !== null) {
      entry.current = null;
      this.publish();
    }
    this.schedule(entry, at);
  }

  private schedule(entry: Entry, at: number): void {
    if (!entry.alive || this.closed) return;
    if (entry.timer) clearTimeout(entry.timer);
    entry.nextFetch = at;
    // setTimeout holds at most 2^31-1 ms: a far refresh is reached in steps.
    const delay = Math.min(Math.max(at - this.now(), 0), 2 ** 31 - 1);
    entry.timer = setTimeout(() => {
      if (this.now() >= at - 5) {
        if (entry.current !== null && !this.isStapled(entry)) {
          // Expired while nothing newer came: no staple from now on.
          entry.current = null;
          this.publish();
        }
        void this.fetch(entry);
      } else this.schedule(entry, at);
    }, delay);
    entry.timer.unref();
  }

  private isStapled(entry: Entry): boolean {
    return entry.current !== null && entry.staleAt > this.now();
  }

  private count(result: string): void {
    this.counts.requests[result] = (this.counts.requests[result] ?? 0) + 1;
  }

  private publish(): void {
    if (this.closed) return;
    const staples: Record<string, OcspStaple> = {};
    for (const e of this.entries.values()) {
      if (this.isStapled(e) && e.leaf !== null) staples[e.id] = { ocsp: new Uint8Array(e.current!.der), leaf: new Uint8Array(e.leaf) };
    }
    this.deps.publish(staples);
  }
}

/** What makes an endpoint's stapling another one: its certificate files and settings. */
function signatureOf(e: EndpointConfig): string {
  const s = e.sslConfig!;
  return JSON.stringify([s.cert, s.ca ?? null, s.ocspStapling]);
}
