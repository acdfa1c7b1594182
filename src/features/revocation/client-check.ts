// The OCSP check of client certificates of one endpoint in one worker (sslConfig.ocspClientCheck):
// asked by the CONNECT handler before authentication. The client's certificate (verified in the
// handshake: the check needs requestCert and rejectUnauthorized) is looked up in a bounded cache
// keyed by issuer and serial number; otherwise its responder (the override, or its AIA) is asked,
// one request per certificate however many CONNECTs wait for it, and the answer is kept for
// cacheSeconds, never past its nextUpdate. Revoked or unknown: 0x87. No answer (down, late, a bad
// response, no responder or issuer): failMode closed refuses with 0x88, open admits; counted
// either way. Owned by the worker thread; made when the endpoint opens here.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

import type { OcspClientCheck } from '../../broker/endpoint-config.ts';
import { OCSP_DEFAULTS } from '../../broker/ocsp-defaults.ts';
import { findIssuer, pemCertificates, responderOf } from '../../broker/certificates.ts';
import type { CertificateCheck } from '../../engine/handlers/client.ts';
import type { RevocationCounts } from '../../stats/endpoint-stats.ts';
import { RC } from '../../protocol/reason-codes.ts';
import type { Logger } from '../../log/index.ts';
import { lazyImport } from '../../lazy/lazy-import.ts';
import type { CertStatus } from './ocsp.ts';

/** Certificates whose status a worker keeps per endpoint; past it the oldest answer goes
 * (counted: spindle_ocsp_client_cache_evictions_total). */
export const CACHE_ENTRIES = 10_000;

/** pkijs and the OCSP code load with the first check that asks a responder. */
const loadOcsp = lazyImport('pkijs', () => import('./ocsp.ts'));

interface Cached {
  status: CertStatus;
  /** Epoch ms. */
  until: number;
}

export class ClientCertificateCheck implements CertificateCheck {
  private readonly cache = new Map<string, Cached>();
  private readonly asking = new Map<string, Promise<CertStatus | null>>();
  private readonly issuers: X509Certificate[];
  private readonly failMode: 'open' | 'closed';
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  /** The last request failed (a warning is logged when this changes, not for every CONNECT). */
  private failing = false;

  constructor(
    private readonly endpoint: string,
    private readonly settings: OcspClientCheck,
    /** The endpoint's `ca` file: issuers of client certificates are found there (and after the
     * client's own certificate in the chain it sent). */
    ca: string,
    private readonly counts: RevocationCounts,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.issuers = pemCertificates(readFileSync(ca, 'utf8'));
    this.failMode = settings.failMode ?? OCSP_DEFAULTS.failMode;
    this.cacheMs = (settings.cacheSeconds ?? OCSP_DEFAULTS.cacheSeconds) * 1000;
    this.timeoutMs = settings.timeoutMs ?? OCSP_DEFAULTS.clientTimeoutMs;
  }

  check(c: { peerCertificates(): Buffer[] | undefined }): number | Promise<number> {
    const chain = c.peerCertificates();
    // No certificate (an endpoint that does not require one): nothing to revoke.
    if (!chain || chain.length === 0) return RC.SUCCESS;
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(chain[0]);
    } catch {
      return this.failed('the client certificate does not parse');
    }
    const key = `${leaf.issuer}\n${leaf.serialNumber}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      if (cached.until > this.now()) {
        this.counts.checksCached++;
        return this.verdict(cached.status);
      }
      this.cache.delete(key);
    }
    let pending = this.asking.get(key);
    if (pending === undefined) {
      pending = this.ask(key, leaf, chain);
      this.asking.set(key, pending);
      // ask() answers null rather than rejecting.
      void pending.then(() => this.asking.delete(key));
    }
    return pending.then((status) => (status === null ? this.failed(null) : this.verdict(status)));
  }

  private verdict(status: CertStatus): number {
    if (status === 'good') {
      this.counts.checksGood++;
      return RC.SUCCESS;
    }
    if (status === 'revoked') {
      this.counts.checksRevoked++;
      this.counts.ocspRevoked++;
    } else this.counts.checksUnknown++;
    return RC.NOT_AUTHORIZED;
  }

  /** No answer: the fail mode decides. `why` is logged when given (otherwise ask() did). */
  private failed(why: string | null): number {
    if (why !== null) this.log.warn('OCSP check of a client certificate failed', { endpoint: this.endpoint, failMode: this.failMode, error: why });
    if (this.failMode === 'open') {
      this.counts.checksFailedOpen++;
      return RC.SUCCESS;
    }
    this.counts.checksFailedClosed++;
    return RC.SERVER_UNAVAILABLE;
  }

  /** Asks the responder; answers the status, or null when none could be had (counted, logged). */
  private async ask(key: string, leaf: X509Certificate, chain: Buffer[]): Promise<CertStatus | null> {
    let sent: X509Certificate[];
    try {
      sent = chain.slice(1).map((der) => new X509Certificate(der));
    } catch {
      sent = []; // verified in the handshake, so not expected: the ca file's issuers remain
    }
    const issuer = findIssuer(leaf, [...sent, ...this.issuers]);
    const url = this.settings.responderUrl ?? responderOf(leaf);
    if (!issuer || !url) {
      this.count('no_responder');
      this.log.warn('OCSP check of a client certificate impossible', { endpoint: this.endpoint, subject: leaf.subject, error: !issuer ? 'its issuer is not in the endpoint\'s ca' : 'it names no OCSP responder (AIA) and responderUrl is not set' });
      return null;
    }
    try {
      const ocsp = await loadOcsp();
      const request = await ocsp.ocspRequest(leaf, issuer);
      const answer = await ocsp.checkResponse(await ocsp.postOcsp(url, request, this.timeoutMs), leaf, issuer, this.now());
      this.count(answer.status);
      if (this.failing) this.log.info('OCSP responder answers again', { endpoint: this.endpoint, url });
      this.failing = false;
      this.keep(key, answer.status, answer.nextUpdate);
      return answer.status;
    } catch (err) {
      const failure = (err as { failure?: string }).failure ?? 'error';
      this.count(failure);
      const fields = { endpoint: this.endpoint, url, failMode: this.failMode, error: (err as Error).message };
      if (!this.failing) this.log.warn('OCSP responder gave no answer about a client certificate', fields);
      else this.log.debug('OCSP responder gave no answer about a client certificate', fields);
      this.failing = true;
      return null;
    }
  }

  private count(result: string): void {
    this.counts.requests[result] = (this.counts.requests[result] ?? 0) + 1;
  }

  private keep(key: string, status: CertStatus, nextUpdate: number | undefined): void {
    if (this.cacheMs === 0) return;
    const until = Math.min(this.now() + this.cacheMs, nextUpdate ?? Infinity);
    if (this.cache.size >= CACHE_ENTRIES) {
      // The oldest answer goes (a Map keeps insertion order).
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
      this.counts.cacheEvicted++;
    }
    this.cache.set(key, { status, until });
  }
}
