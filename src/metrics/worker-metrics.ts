// One worker thread's snapshot (src/worker/ops/metrics.ts) as prom-client metric JSON: the
// broker-wide spindle_* counters and the summable svc_endpoint_* ones. The supervisor's
// collector aggregates these across workers with AggregatorRegistry.aggregate (sums).
import { THROTTLE_KINDS } from '../broker/rate-limit.ts';
import { LATENCY_BUCKETS } from '../stats/worker-stats.ts';
import { SIZE_BUCKETS, type EndpointStatsSnapshot } from '../stats/endpoint-stats.ts';
import type { EndpointSnapshot, WorkerMetricsSnapshot } from '../worker/ops/metrics.ts';
import { MetricSet, type Labels } from './metric-json.ts';
import { REVOKED_HELP, REQUESTS_HELP } from '../features/revocation/metrics.ts';
import { topicMetricsSeries } from '../features/topic-metrics/series.ts';

const QOS = [0, 1, 2] as const;

/** Drop reasons of WorkerStats.dropped as label values. */
const DROP_REASONS: Record<string, string> = {
  expired: 'expired',
  queueFull: 'queue_full',
  tooLarge: 'too_large',
  noSession: 'no_session',
  notAuthorized: 'not_authorized',
  readDenied: 'read_denied',
  qos0Offline: 'qos0_offline',
  slowConsumer: 'slow_consumer',
  clusterCopy: 'cluster_copy',
};

/** SCRAM results of WorkerStats.scram as label values. */
const SCRAM_RESULTS: Record<string, string> = {
  success: 'success',
  invalidProof: 'invalid_proof',
  unknownUser: 'unknown_user',
  refused: 'refused',
  badMessage: 'bad_message',
  unavailable: 'unavailable',
};

export function endpointLabels(e: { id: string; port: number }): Labels {
  return { port: String(e.port), endpoint: e.id };
}

/** Broker-wide metrics of one worker (label `worker` only on the per-thread ones). */
export function brokerMetrics(snap: WorkerMetricsSnapshot, set: MetricSet): void {
  const s = snap.stats;
  set.gauge('spindle_connections_current', 'Open MQTT network connections.', s.connectionsCurrent);
  set.counter('spindle_connections_total', 'MQTT network connections accepted since start.', s.connectionsTotal);
  set.gauge('spindle_sessions_current', 'Sessions held by the broker (connected or not).', s.sessions);
  set.gauge('spindle_sessions_persistent', 'Sessions that outlive their connection (Session Expiry > 0 / clean session 0).', s.persistentSessions);
  for (const q of QOS) {
    set.counter('spindle_messages_received_total', 'PUBLISH packets received from clients, by QoS.', s.publishReceived[q], { qos: q });
    set.counter('spindle_messages_sent_total', 'PUBLISH packets written to clients, by QoS.', s.publishSent[q], { qos: q });
    set.counter('spindle_publish_bytes_received_total', 'Bytes of PUBLISH packets received from clients (whole packets), by QoS.', s.publishBytesReceived[q], { qos: q });
    set.counter('spindle_publish_bytes_sent_total', 'Bytes of PUBLISH packets written to clients (whole packets), by QoS.', s.publishBytesSent[q], { qos: q });
  }
  set.counter('spindle_network_bytes_received_total', 'Bytes read from MQTT connections (every packet type).', s.bytesReceived);
  set.counter('spindle_network_bytes_sent_total', 'Bytes written to MQTT connections (every packet type).', s.bytesSent);
  for (const [key, reason] of Object.entries(DROP_REASONS)) {
    set.counter('spindle_messages_dropped_total', 'Messages not delivered, by reason: expired, queue_full (session queue at limits.maxQueuedMessages), too_large (above the client\'s Maximum Packet Size), no_session (subscriber gone), not_authorized, qos0_offline, slow_consumer (QoS 0 past limits.maxOutboundBytes of a client that does not read).', s.dropped[key as keyof typeof s.dropped], { reason });
  }
  set.counter('spindle_retained_refused_total', 'Retained PUBLISHes refused (not retained, not delivered; MQTT 5 QoS 1/2 get 0x97 Quota exceeded), by reason: count (a new topic past limits.maxRetainedMessages), size (a payload past limits.maxRetainedPayloadSize).', s.retainedRefused.count, { reason: 'count' });
  set.counter('spindle_retained_refused_total', '', s.retainedRefused.size, { reason: 'size' });
  set.counter('spindle_auth_failures_total', 'CONNECTs refused by authentication.', s.authFailed);
  set.counter('spindle_auth_lockouts_total', 'Source addresses locked out after limits.authMaxFailures failed authentications.', s.authLockouts);
  set.counter('spindle_auth_locked_out_total', 'CONNECTs refused (0x8A) because their source address was locked out.', s.authLockedOut);
  set.counter('spindle_acl_denials_total', 'PUBLISH and SUBSCRIBE requests refused by the access rules.', s.aclDenied);
  for (const [mechanism, results] of Object.entries(s.scram)) {
    for (const [key, result] of Object.entries(SCRAM_RESULTS)) {
      set.counter('spindle_auth_scram_total', 'SCRAM exchanges (MQTT 5 enhanced authentication, at CONNECT and re-authentication) by mechanism and result: success, invalid_proof (a wrong password), unknown_user (no credentials of the mechanism for the username; fails at the proof), refused (the proof held but the client is disabled or bound to another client id), bad_message (not SCRAM, channel binding or an extension asked for), unavailable (the database policies did not answer).', results[key as keyof typeof results], { mechanism, result });
    }
  }
  const ea = s.enhancedAuth;
  set.counter('spindle_auth_exchange_timeouts_total', 'Enhanced-authentication exchanges (MQTT 5 AUTH) not completed within auth.exchangeTimeout: the CONNECT refused (0x87) or the connection disconnected (re-authentication, 0x87).', ea.timeouts);
  set.counter('spindle_auth_reauth_total', 'Re-authentications (MQTT 5 AUTH 0x19) by result: success (AUTH 0x00), failure (DISCONNECT 0x87: refused, timed out, or another user).', ea.reauthSuccess, { result: 'success' });
  set.counter('spindle_auth_reauth_total', '', ea.reauthFailure, { result: 'failure' });
  const p = s.policies;
  set.counter('spindle_policy_cache_total', 'Authentication answers (kind auth: per credentials, auth.policyCacheTtl) and ACL decisions (kind acl: per connection, auth.cacheSize) taken from a worker cache (result hit) or asked for (miss: the policy chain, or the static users and ACL).', p.authCacheHits, { kind: 'auth', result: 'hit' });
  set.counter('spindle_policy_cache_total', '', p.authCacheMisses, { kind: 'auth', result: 'miss' });
  set.counter('spindle_policy_cache_total', '', p.aclCacheHits, { kind: 'acl', result: 'hit' });
  set.counter('spindle_policy_cache_total', '', p.aclCacheMisses, { kind: 'acl', result: 'miss' });
  set.counter('spindle_policy_unanswered_total', 'Policy questions refused because the chain did not answer within auth.policyTimeout (reason timeout) or auth.policyMaxPending were waiting (reason overloaded): CONNECT refused with 0x88, PUBLISH or SUBSCRIBE with 0x87.', p.timeouts, { reason: 'timeout' });
  set.counter('spindle_policy_unanswered_total', '', p.overloaded, { reason: 'overloaded' });
  set.counter('spindle_protocol_errors_total', 'Connections closed for a malformed packet or protocol violation.', s.protocolErrors);
  set.counter('spindle_slow_consumer_disconnects_total', 'Connections closed for staying over limits.maxOutboundBytes longer than limits.slowConsumerTimeout.', s.slowConsumerDisconnects);
  set.counter('spindle_socket_errors_total', 'Socket errors of MQTT connections (reset by peer, broken pipe, ...); each closes its connection.', s.socketErrors);
  set.counter('spindle_session_takeover_timeouts_total', 'CONNECTs refused (CONNACK 0x88) because the worker holding their session did not hand it over within 10 s; the session is kept.', s.takeoverTimeouts);
  set.counter('spindle_session_handover_fences_cut_total', 'Sessions moved between workers that delivered what other workers routed to them before each had confirmed its earlier messages arrived (1 s, or a session queue of them held): the order of one publisher\'s messages is not assured for them.', s.handoverFencesCut);
  set.histogram(
    'spindle_delivery_latency_seconds',
    'Time from a PUBLISH being received to a delivery of it being written to a subscriber\'s socket (every first delivery, not sampled; millisecond clock resolution; includes time queued for offline or slow subscribers).',
    LATENCY_BUCKETS, s.deliveryLatency, s.deliveryLatencySum,
  );
  const w = { worker: String(snap.worker) };
  const lag = snap.eventLoopLag;
  const lagHelp = 'Event-loop delay of a worker thread over the last 10 s window (perf_hooks.monitorEventLoopDelay), by quantile.';
  set.gauge('spindle_worker_event_loop_lag_seconds', lagHelp, lag.p50, { ...w, quantile: '0.5' });
  set.gauge('spindle_worker_event_loop_lag_seconds', lagHelp, lag.p90, { ...w, quantile: '0.9' });
  set.gauge('spindle_worker_event_loop_lag_seconds', lagHelp, lag.p99, { ...w, quantile: '0.99' });
  set.gauge('spindle_worker_event_loop_lag_max_seconds', 'Largest event-loop delay of a worker thread over the last 10 s window.', lag.max, w);
  set.gauge('spindle_worker_event_loop_lag_mean_seconds', 'Mean event-loop delay of a worker thread over the last 10 s window.', lag.mean, w);
  set.gauge('spindle_worker_heap_used_bytes', 'V8 heap in use by a worker thread.', snap.heap.used, w);
  set.gauge('spindle_worker_connections_current', 'Open MQTT connections of a worker thread.', s.connectionsCurrent, w);
  // Per endpoint but broker-wide (in /prometheus, not in one endpoint's svc_endpoint_* form).
  set.declare('spindle_rate_limit_throttled_total', 'Times a connection of the endpoint stopped reading because it was over a rate limit (throttled; nothing is lost), by kind: messages or bytes (the client\'s own limit: the endpoint\'s rateLimit or its authenticator\'s), total_messages or total_bytes (the endpoint\'s totalRateLimit on this node), tenant (its application\'s licence rate).', 'counter');
  set.declare('spindle_tls_psk_handshakes_total', 'TLS-PSK handshakes of an endpoint with sslConfig.psk, by result: ok (a known identity whose key matched), unknown_identity (in neither the PSK file nor the client database, or its client disabled: refused), failed (a known identity whose handshake failed: a wrong key, mostly).', 'counter');
  for (const e of snap.endpoints) {
    const s = e.stats;
    THROTTLE_KINDS.forEach((kind, i) => set.counter('spindle_rate_limit_throttled_total', '', s.throttled[i] ?? 0, { endpoint: e.id, kind }));
    if (e.psk) for (const result of ['ok', 'unknown_identity', 'failed'] as const) set.counter('spindle_tls_psk_handshakes_total', '', s.pskHandshakes[result], { endpoint: e.id, result });
  }
  revocationMetrics(snap, set);
  topicMetricsSeries(snap.topics, set);
}

/** Certificate revocation (src/features/revocation) per TLS endpoint that checks it. */
function revocationMetrics(snap: WorkerMetricsSnapshot, set: MetricSet): void {
  set.declare('spindle_tls_revoked_total', REVOKED_HELP, 'counter');
  set.declare('spindle_ocsp_client_checks_total', 'OCSP checks of client certificates at CONNECT, by endpoint and result: good, revoked, unknown (refused with 0x87), failed_open (no answer, admitted: failMode open), failed_closed (no answer, refused with 0x88: failMode closed); cached: how many of them a worker\'s cache answered.', 'counter');
  set.declare('spindle_ocsp_client_cache_evictions_total', 'Client certificate statuses dropped from a worker\'s cache, full at 10000 per endpoint.', 'counter');
  for (const e of snap.endpoints) {
    const ssl = e.ssl;
    if (!ssl) continue;
    const r = e.stats.revocation;
    const endpoint = e.id;
    if (ssl.crl) set.counter('spindle_tls_revoked_total', '', r.crlRevoked, { endpoint, by: 'crl' });
    if (!ssl.ocspClientCheck) continue;
    set.counter('spindle_tls_revoked_total', '', r.ocspRevoked, { endpoint, by: 'ocsp' });
    for (const [result, n] of [['good', r.checksGood], ['revoked', r.checksRevoked], ['unknown', r.checksUnknown], ['failed_open', r.checksFailedOpen], ['failed_closed', r.checksFailedClosed]] as const) {
      set.counter('spindle_ocsp_client_checks_total', '', n, { endpoint, result, cached: 'false' });
    }
    set.counter('spindle_ocsp_client_checks_total', '', r.checksCached, { endpoint, result: 'any', cached: 'true' });
    for (const [result, n] of Object.entries(r.requests)) set.counter('spindle_ocsp_requests_total', REQUESTS_HELP, n, { kind: 'client', result });
    set.counter('spindle_ocsp_client_cache_evictions_total', '', r.cacheEvicted, { endpoint });
  }
  // The endpoint's connectionErrors proxy_<reason>, under a name of their own.
  set.declare('spindle_proxy_protocol_errors_total', 'Connections of an endpoint with PROXY protocol on that were closed before they opened, by reason: missing (proxyProtocol required, no header), malformed, too_large (a v2 header over 4096 bytes), untrusted (a header, or under required any connection, from outside proxyProtocolTrusted), timeout (no header within 10 s), closed (the peer closed in the middle of its header). Also counted in svc_endpoint_connection_errors_total as proxy_<reason>.', 'counter');
  for (const e of snap.endpoints) {
    for (const [code, n] of Object.entries(e.stats.connectionErrors)) {
      if (code.startsWith('proxy_')) set.counter('spindle_proxy_protocol_errors_total', '', n, { endpoint: e.id, reason: code.slice(6) });
    }
  }
}

export type EndpointFilter = (e: { id: string; port: number }) => boolean;

/** The svc_endpoint_* metrics that are per-worker parts of a sum. */
export function endpointWorkerMetrics(snap: WorkerMetricsSnapshot, set: MetricSet, filter: EndpointFilter = () => true): void {
  for (const e of snap.endpoints) if (filter(e)) oneEndpoint(e, set);
}

function oneEndpoint(e: EndpointSnapshot, set: MetricSet): void {
  const l = endpointLabels(e);
  const s: EndpointStatsSnapshot = e.stats;
  set.gauge('svc_endpoint_connections_current', 'Active connections of the endpoint.', s.connectionsCurrent, l);
  set.counter('svc_endpoint_connections_total', 'Connections the endpoint accepted since start.', s.connectionsTotal, l);
  set.counter('svc_endpoint_messages_received_total', 'PUBLISH packets received on the endpoint since start (the _rate gauges are computed from it).', s.messagesReceived, l);
  set.counter('svc_endpoint_messages_sent_total', 'PUBLISH packets sent to clients of the endpoint since start.', s.messagesSent, l);
  for (const reason of ['buffer_full', 'client_disconnected', 'others'] as const) {
    set.counter('svc_endpoint_messages_dropped_total', 'Messages not delivered to clients of the endpoint: buffer_full (session queue full), client_disconnected (QoS 0 for an offline client), others (expired, too large for the client).', s.dropped[reason], { ...l, reason });
  }
  set.histogram('svc_endpoint_message_size_bytes', 'Size of PUBLISH packets on the endpoint, in (received) and out (sent).', SIZE_BUCKETS, s.sizeIn, s.sizeInSum, { ...l, direction: 'in' });
  set.histogram('svc_endpoint_message_size_bytes', 'Size of PUBLISH packets on the endpoint, in (received) and out (sent).', SIZE_BUCKETS, s.sizeOut, s.sizeOutSum, { ...l, direction: 'out' });
  set.gauge('svc_endpoint_sessions_current', 'Sessions of clients that connected through the endpoint (connected or not).', s.sessionsCurrent, l);
  set.gauge('svc_endpoint_sessions_persistent', 'Persistent sessions (Session Expiry > 0 / clean session 0) of the endpoint.', s.sessionsPersistent, l);
  set.declare('svc_endpoint_connection_errors_total', 'Connections refused or failed, by error_code: the CONNACK reason code (0x86 bad credentials, 0x97 endpoint full, ...), rate_limited, or proxy_<reason> (PROXY protocol: see spindle_proxy_protocol_errors_total).', 'counter');
  for (const [code, n] of Object.entries(s.connectionErrors)) set.counter('svc_endpoint_connection_errors_total', '', n, { ...l, error_code: code });
  set.gauge('svc_endpoint_subscriptions_current', 'Subscriptions of the endpoint\'s sessions.', s.subscriptions, l);
  set.counter('svc_endpoint_topics_published_total', 'PUBLISH packets the endpoint accepted for routing (valid topic, authorized) since start.', s.topicsPublished, l);
  for (const [type, n] of [['auth_failed', s.authFailed], ['acl_denied', s.aclDenied], ['protocol_error', s.protocolErrors]] as const) {
    set.counter('svc_endpoint_errors_total', 'Errors on the endpoint since start, by error_type (the errors_rate gauge is computed from it).', n, { ...l, error_type: type });
  }
}
