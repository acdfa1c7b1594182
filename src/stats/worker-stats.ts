// Counters of one worker thread, read by the supervisor for $SYS and metrics. Plain numbers on
// the hot path; copied into a message once per reporting interval.

/** Upper bounds (seconds) of the delivery latency histogram buckets; +Inf is implied. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const LATENCY_BUCKETS_MS = LATENCY_BUCKETS.map((s) => s * 1000);

function scramResults() {
  return { success: 0, invalidProof: 0, unknownUser: 0, refused: 0, badMessage: 0, unavailable: 0 };
}

export class WorkerStats {
  connectionsCurrent = 0;
  connectionsTotal = 0;
  messagesReceived = 0;
  messagesSent = 0;
  bytesReceived = 0;
  bytesSent = 0;
  publishReceived = [0, 0, 0];
  publishSent = [0, 0, 0];
  /** PUBLISH packet bytes by QoS (whole packets, as received / as written). */
  publishBytesReceived = [0, 0, 0];
  publishBytesSent = [0, 0, 0];
  /** Time from a PUBLISH being received to a delivery of it being written to a subscriber's
   * socket: bucket counts (index i: <= LATENCY_BUCKETS[i]; last: larger), sum in seconds. */
  deliveryLatency = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  deliveryLatencySum = 0;
  /** Messages not delivered, by reason. */
  dropped = {
    expired: 0,
    queueFull: 0,
    tooLarge: 0,
    noSession: 0,
    notAuthorized: 0,
    /** Delivered through a subscription its ACL grants in part, to a topic the client may not read. */
    readDenied: 0,
    qos0Offline: 0,
    slowConsumer: 0,
    /** A second copy of a cluster message for a session that took it (Session.firstCopy). */
    clusterCopy: 0,
  };
  /** Retained PUBLISHes refused: past limits.maxRetainedMessages (count) or with a payload past
   * limits.maxRetainedPayloadSize (size). */
  retainedRefused = { count: 0, size: 0 };
  authFailed = 0;
  /** Source addresses locked out after too many failed authentications, and CONNECTs refused
   * while locked out. */
  authLockouts = 0;
  authLockedOut = 0;
  aclDenied = 0;
  /** SCRAM exchanges (src/auth/scram) by mechanism and how they ended. */
  scram = { 'SCRAM-SHA-256': scramResults(), 'SCRAM-SHA-512': scramResults() };
  /** Enhanced authentication (MQTT 5 AUTH): exchanges closed for taking longer than
   * auth.exchangeTimeout, and re-authentications (AUTH 0x19) by how they ended. */
  enhancedAuth = { timeouts: 0, reauthSuccess: 0, reauthFailure: 0 };
  /** The policy chains as seen from this worker: answers from its caches, questions to the main
   * thread, and questions refused for want of an answer (src/policies/worker). */
  policies = { authCacheHits: 0, authCacheMisses: 0, aclCacheHits: 0, aclCacheMisses: 0, timeouts: 0, overloaded: 0 };
  protocolErrors = 0;
  /** CONNECTs refused because the previous owner of their session did not hand it over in time. */
  takeoverTimeouts = 0;
  /** Hand-over fences cut short (see src/engine/session/fences.ts). */
  handoverFencesCut = 0;
  /** Socket errors of MQTT connections (reset by peer, broken pipe, ...). */
  socketErrors = 0;
  /** Connections closed for staying over limits.maxOutboundBytes too long. */
  slowConsumerDisconnects = 0;
  sessions = 0;
  persistentSessions = 0;
  /** Subscriptions of this worker's client sessions (online or not): not the broker's own
   * handles in the router (rules, bridges, log topics, viewers, cluster). Counted when asked. */
  subscriptions = 0;
  /** Of those, the ones to $SYS topics (counted with them, apart so the console can say it). */
  sysSubscriptions = 0;

  /** One first delivery written, `ms` after its message was received (Date.now() resolution). */
  recordDelivery(ms: number): void {
    if (ms < 0) ms = 0; // clocks may step back
    let i = 0;
    while (i < LATENCY_BUCKETS_MS.length && ms > LATENCY_BUCKETS_MS[i]) i++;
    this.deliveryLatency[i]++;
    this.deliveryLatencySum += ms / 1000;
  }

  snapshot(): WorkerStatsSnapshot {
    return JSON.parse(JSON.stringify(this)) as WorkerStatsSnapshot;
  }
}

export type WorkerStatsSnapshot = Omit<WorkerStats, 'snapshot' | 'recordDelivery'>;

/** How many of `filters` are to $SYS topics (when asked, never per message). */
export function sysFilters(filters: Iterable<string>): number {
  let n = 0;
  for (const f of filters) if (f.charCodeAt(0) === 36 && f.startsWith('$SYS/')) n++;
  return n;
}
