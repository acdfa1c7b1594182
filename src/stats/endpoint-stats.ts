// Counters of one endpoint (listener) inside one worker thread: plain numbers bumped on the hot
// path, summed across workers by the supervisor into the svc_endpoint_* metrics. Owned by the
// worker thread; copied (snapshot()) when the supervisor asks.
import { performance } from 'node:perf_hooks';

/** Upper bounds (bytes) of the message size histogram buckets; +Inf is implied. */
export const SIZE_BUCKETS = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576] as const;

export type Operation = 'connect' | 'publish' | 'subscribe';

/** One PUBLISH in this many (per endpoint and worker) is timed for the publish response time. */
export const PUBLISH_SAMPLE = 64;

export class EndpointStats {
  connectionsCurrent = 0;
  connectionsTotal = 0;
  messagesReceived = 0;
  messagesSent = 0;
  /** Messages not delivered to clients of this endpoint, by reason. */
  dropped = { buffer_full: 0, client_disconnected: 0, others: 0 };
  /** PUBLISH sizes in bytes: cumulative-free bucket counts (index i: <= SIZE_BUCKETS[i]; last: larger). */
  sizeIn = new Array<number>(SIZE_BUCKETS.length + 1).fill(0);
  sizeInSum = 0;
  sizeOut = new Array<number>(SIZE_BUCKETS.length + 1).fill(0);
  sizeOutSum = 0;
  /** Filled in when a snapshot is taken (from the session table), not on the hot path. */
  sessionsCurrent = 0;
  sessionsPersistent = 0;
  authFailed = 0;
  aclDenied = 0;
  protocolErrors = 0;
  /** Refused or failed connections by error code ("0x97", "0x86", "rate_limited", ...). */
  connectionErrors: Record<string, number> = {};
  /** Handling time in seconds, summed, and how many were timed. */
  responseTime: Record<Operation, { sum: number; count: number }> = {
    connect: { sum: 0, count: 0 },
    publish: { sum: 0, count: 0 },
    subscribe: { sum: 0, count: 0 },
  };
  /** Filled in when a snapshot is taken. */
  subscriptions = 0;
  /** PUBLISH packets accepted for routing (valid topic, authorized). */
  topicsPublished = 0;
  /** Times a connection's reading was paused by a rate limit, by kind (index of THROTTLE_KINDS:
   * messages, bytes, total_messages, total_bytes, tenant). */
  throttled = [0, 0, 0, 0, 0];
  /** TLS-PSK handshakes by result (an endpoint with sslConfig.psk; listener/tls-psk.ts). */
  pskHandshakes = { ok: 0, unknown_identity: 0, failed: 0 };
  /** Certificate revocation (src/features/revocation): clients refused as revoked, and the OCSP
   * checks of client certificates. */
  revocation: RevocationCounts = newRevocationCounts();
  // The PUBLISH being timed (at most one at a time): no allocation per message.
  private publishSeq = 0;
  private sampled: object | null = null;
  private sampledAt = 0;

  /** A PUBLISH of `size` bytes (the whole packet) arrived. */
  publishIn(size: number): void {
    this.messagesReceived++;
    this.sizeIn[sizeBucket(size)]++;
    this.sizeInSum += size;
  }

  /** The message `m` of a PUBLISH is about to be handled: times one in PUBLISH_SAMPLE. */
  publishStart(m: object): void {
    if (++this.publishSeq !== PUBLISH_SAMPLE) return;
    this.publishSeq = 0;
    this.sampled = m;
    this.sampledAt = performance.now();
  }

  /** The PUBLISH `m` has been handled (routed and acknowledged). */
  publishDone(m: object): void {
    if (m !== this.sampled) return;
    this.sampled = null;
    const t = this.responseTime.publish;
    t.sum += (performance.now() - this.sampledAt) / 1000;
    t.count++;
  }

  /** A PUBLISH of `size` bytes written to a client of this endpoint. */
  publishOut(size: number): void {
    this.messagesSent++;
    this.sizeOut[sizeBucket(size)]++;
    this.sizeOutSum += size;
  }

  /** `startedAt` is a performance.now() reading. */
  timed(op: Operation, startedAt: number): void {
    const t = this.responseTime[op];
    t.sum += (performance.now() - startedAt) / 1000;
    t.count++;
  }

  connectionError(code: string): void {
    this.connectionErrors[code] = (this.connectionErrors[code] ?? 0) + 1;
  }

  snapshot(): EndpointStatsSnapshot {
    return {
      connectionsCurrent: this.connectionsCurrent,
      connectionsTotal: this.connectionsTotal,
      messagesReceived: this.messagesReceived,
      messagesSent: this.messagesSent,
      dropped: { ...this.dropped },
      sizeIn: [...this.sizeIn],
      sizeInSum: this.sizeInSum,
      sizeOut: [...this.sizeOut],
      sizeOutSum: this.sizeOutSum,
      sessionsCurrent: this.sessionsCurrent,
      sessionsPersistent: this.sessionsPersistent,
      authFailed: this.authFailed,
      aclDenied: this.aclDenied,
      protocolErrors: this.protocolErrors,
      connectionErrors: { ...this.connectionErrors },
      responseTime: {
        connect: { ...this.responseTime.connect },
        publish: { ...this.responseTime.publish },
        subscribe: { ...this.responseTime.subscribe },
      },
      subscriptions: this.subscriptions,
      topicsPublished: this.topicsPublished,
      throttled: [...this.throttled],
      pskHandshakes: { ...this.pskHandshakes },
      revocation: { ...this.revocation, requests: { ...this.revocation.requests } },
    };
  }
}

/** The counters as plain data (structured clone). */
export interface EndpointStatsSnapshot {
  connectionsCurrent: number;
  connectionsTotal: number;
  messagesReceived: number;
  messagesSent: number;
  dropped: { buffer_full: number; client_disconnected: number; others: number };
  sizeIn: number[];
  sizeInSum: number;
  sizeOut: number[];
  sizeOutSum: number;
  sessionsCurrent: number;
  sessionsPersistent: number;
  authFailed: number;
  aclDenied: number;
  protocolErrors: number;
  connectionErrors: Record<string, number>;
  responseTime: Record<Operation, { sum: number; count: number }>;
  subscriptions: number;
  topicsPublished: number;
  throttled: number[];
  pskHandshakes: { ok: number; unknown_identity: number; failed: number };
  revocation: RevocationCounts;
}

/** One endpoint's revocation counters in one worker. */
export interface RevocationCounts {
  /** TLS handshakes refused because a CRL revokes the client's certificate. */
  crlRevoked: number;
  /** CONNECTs refused because the OCSP responder says the certificate is revoked. */
  ocspRevoked: number;
  /** Client checks by outcome: good, revoked, unknown (refused), failed_open (admitted without an
   * answer), failed_closed (refused without an answer); cached: answered from the worker's cache. */
  checksGood: number;
  checksRevoked: number;
  checksUnknown: number;
  checksFailedOpen: number;
  checksFailedClosed: number;
  checksCached: number;
  /** Requests sent to responders for client checks, by result (good, revoked, unknown, or the
   * failure: unreachable, timeout, http_error, bad_response, not_successful). */
  requests: Record<string, number>;
  /** Answers dropped from the cache because it was full. */
  cacheEvicted: number;
}

export function newRevocationCounts(): RevocationCounts {
  return { crlRevoked: 0, ocspRevoked: 0, checksGood: 0, checksRevoked: 0, checksUnknown: 0, checksFailedOpen: 0, checksFailedClosed: 0, checksCached: 0, requests: {}, cacheEvicted: 0 };
}

export function sizeBucket(bytes: number): number {
  for (let i = 0; i < SIZE_BUCKETS.length; i++) if (bytes <= SIZE_BUCKETS[i]) return i;
  return SIZE_BUCKETS.length;
}

/**
 * This thread's endpoint counters by endpoint slot (slots are never reused within a process),
 * so a drop for a session whose connection is gone is still counted on its endpoint.
 */
const bySlot: (EndpointStats | undefined)[] = [];

export function registerEndpointStats(slot: number, stats: EndpointStats): void {
  if (slot >= 0) bySlot[slot] = stats;
}

export function endpointStatsOfSlot(slot: number): EndpointStats | undefined {
  return slot >= 0 ? bySlot[slot] : undefined;
}
