// The broker's Prometheus registry, in the main thread: asks every worker for its counters (the
// 'metrics' worker operation), turns each snapshot into prom-client metric JSON, and aggregates
// them with AggregatorRegistry.aggregate together with the main thread's own registry (process
// CPU and memory from collectDefaultMetrics, the shared routing core's subscriptions and
// retained messages, and the rates this collector computes). Also answers the per-endpoint
// JSON, health and performance forms of the admin API, and the series the OpenTelemetry export sends.
// One per node (src/node/features.ts makes it on first use).
import { AggregatorRegistry, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';

import type { Router, RetainedStore } from '../native/index.ts';
import type { WorkerCallAll } from '../worker/ops/index.ts';
import type { Logger } from '../log/index.ts';
import type { WorkerMetricsSnapshot } from '../worker/ops/metrics.ts';
import { SIZE_BUCKETS } from '../stats/endpoint-stats.ts';

/** What the collector reads of the node: the workers' counters and the shared routing core. */
export interface MetricsHost {
  callAll: WorkerCallAll;
  readonly router: InstanceType<typeof Router>;
  readonly retained: InstanceType<typeof RetainedStore>;
  /** config limits.maxRetainedMessages (0: no limit). */
  readonly retainedLimit: number;
}

import { MetricSet, type MetricJson } from './metric-json.ts';
import { brokerMetrics, endpointLabels, endpointWorkerMetrics, type EndpointFilter } from './worker-metrics.ts';
import { OPERATIONS, RateWindow, rateCounters, sumEndpoints, type EndpointTotals, type Rates } from './endpoint-totals.ts';

/** First topic levels with a series of their own in spindle_retained_*_by_level. */
export const RETAINED_LEVELS = 20;

/** Endpoint counters are sampled this often for the rates ... */
export const SAMPLE_INTERVAL_MS = 5_000;
/** ... and the rates are computed over this window (sliding). */
export const RATE_WINDOW_MS = 30_000;
/** /api/endpoints/health: DEGRADED at this share of connections_max / sessions_max ... */
export const HEALTH_USAGE_LIMIT = 0.9;
/** ... or above this many errors (auth_failed + acl_denied + protocol_error) per second. */
export const HEALTH_ERROR_RATE_LIMIT = 1;

export const CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

interface Collected {
  at: number;
  workers: WorkerMetricsSnapshot[];
  endpoints: Map<string, EndpointTotals>;
  process: ProcessUsage;
}

interface ProcessUsage {
  /** Process CPU time per wall-clock time since the previous sample, percent of one core. */
  cpuPercent: number;
  rss: number;
  /** V8 heaps in use, every thread. */
  heapUsed: number;
  /** Resident memory outside the V8 heaps (native core, buffers, code, stacks). */
  nonHeap: number;
}

export class MetricsCollector {
  /** The main thread's own metrics: process CPU, memory, handles, its event loop, GC, and the
   * admin API's counters (registered by their owners). */
  private readonly main: Registry;
  private readonly window = new RateWindow(RATE_WINDOW_MS);
  private readonly timer: NodeJS.Timeout;
  private cpuMark = { usage: process.cpuUsage(), at: performance.now() };
  private cpuPercent = 0;

  /** `labels`: added to every sample (in a cluster, `node`: the series of every node can then be
   * told apart when one Prometheus scrapes them all). */
  constructor(private readonly supervisor: MetricsHost, private readonly log: Logger, main = new Registry(), private readonly labels: Record<string, string> = {}) {
    this.main = main;
    collectDefaultMetrics({ register: this.main, prefix: 'spindle_' });
    this.timer = setInterval(() => void this.sample(), SAMPLE_INTERVAL_MS);
    this.timer.unref();
    void this.sample();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Every running worker's snapshot, summed per endpoint, with the process usage. */
  async collect(): Promise<Collected> {
    const workers = await this.supervisor.callAll('metrics');
    const at = Date.now();
    return { at, workers, endpoints: sumEndpoints(workers), process: this.processUsage(workers) };
  }

  private async sample(): Promise<void> {
    try {
      const c = await this.collect();
      this.window.add(c.at, c.endpoints);
      this.markCpu();
    } catch (err) {
      // A worker that is restarting answers nothing: the next sample covers it.
      this.log.debug('metrics sample failed', { err });
    }
  }

  private markCpu(): void {
    const usage = process.cpuUsage();
    const at = performance.now();
    const wall = (at - this.cpuMark.at) * 1000; // microseconds
    if (wall > 0) this.cpuPercent = ((usage.user - this.cpuMark.usage.user + usage.system - this.cpuMark.usage.system) / wall) * 100;
    this.cpuMark = { usage, at };
  }

  private processUsage(workers: readonly WorkerMetricsSnapshot[]): ProcessUsage {
    const m = process.memoryUsage();
    let heapUsed = m.heapUsed;
    let heapTotal = m.heapTotal;
    for (const w of workers) {
      heapUsed += w.heap.used;
      heapTotal += w.heap.total;
    }
    return { cpuPercent: this.cpuPercent, rss: m.rss, heapUsed, nonHeap: Math.max(0, m.rss - heapTotal) };
  }

  rates(c: Collected, e: EndpointTotals): Rates {
    return this.window.rates(e.id, rateCounters(e.stats), c.at);
  }

  /** `/prometheus`: broker-wide spindle_* metrics and every endpoint's svc_endpoint_* metrics. */
  async prometheus(): Promise<string> {
    const registry = await this.aggregate();
    registry.setDefaultLabels(this.labels);
    return registry.metrics();
  }

  /** The series of `/prometheus` as prom-client's JSON (summed over the threads; without the
   * `node` label of a cluster): what the OpenTelemetry export sends (src/features/otel). */
  async series(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
    return (await this.aggregate()).getMetricsAsJSON();
  }

  /** The broker-wide and endpoint metrics of every thread, summed by prom-client's aggregator. */
  private async aggregate(): Promise<Registry> {
    const c = await this.collect();
    const own = new MetricSet();
    own.gauge('spindle_subscriptions_current', 'Subscriptions in the shared routing core (every session, every worker).', this.supervisor.router.subscriptionCount, {}, 'first');
    own.gauge('spindle_retained_messages', 'Retained messages held.', this.supervisor.retained.size, {}, 'first');
    own.gauge('spindle_retained_bytes', 'Bytes of the retained messages held.', this.supervisor.retained.bytes, {}, 'first');
    this.retainedLevels(own);
    own.gauge('spindle_router_trie_bytes', 'Approximate heap bytes of the subscription trie.', this.supervisor.router.heapBytes, {}, 'first');
    own.gauge('spindle_workers_running', 'Worker threads answering.', c.workers.length, {}, 'first');
    own.gauge('spindle_memory_heap_bytes', 'V8 heap in use, all threads (main and workers).', c.process.heapUsed, {}, 'first');
    const perWorker = c.workers.map((w) => {
      const set = new MetricSet();
      brokerMetrics(w, set);
      endpointWorkerMetrics(w, set);
      return set.list();
    });
    this.endpointMainMetrics(c, own, () => true);
    return AggregatorRegistry.aggregate([...perWorker, own.list(), await this.main.getMetricsAsJSON() as unknown as MetricJson[]] as unknown as MetricObjectWithValues<MetricValue<string>>[][]);
  }

  /** Retained messages and bytes by first topic level: the RETAINED_LEVELS levels holding the
   * most, the rest summed under "(other)" (a bounded label set whatever the topics). */
  private retainedLevels(own: MetricSet): void {
    own.declare('spindle_retained_messages_by_level', `Retained messages held, by first topic level: the ${RETAINED_LEVELS} levels holding the most, the others summed under level "(other)"; "(empty)" for topics starting with '/'.`, 'gauge', 'first');
    own.declare('spindle_retained_bytes_by_level', 'Bytes of the retained messages held (records: topic, properties, payload and a 32-byte header), by first topic level as spindle_retained_messages_by_level.', 'gauge', 'first');
    own.gauge('spindle_retained_limit_messages', 'limits.maxRetainedMessages (0: no limit).', this.supervisor.retainedLimit, {}, 'first');
    own.gauge('spindle_retained_counted_messages', 'Retained messages limits.maxRetainedMessages applies to (all but the broker\'s own $SYS ones).', this.supervisor.retained.counted, {}, 'first');
    for (const l of this.supervisor.retained.levels(RETAINED_LEVELS)) {
      const level = typeof l.level !== 'string' ? '(other)' : l.level === '' ? '(empty)' : l.level;
      own.gauge('spindle_retained_messages_by_level', '', l.count, { level }, 'first');
      own.gauge('spindle_retained_bytes_by_level', '', l.bytes, { level }, 'first');
    }
  }

  /** The svc_endpoint_* metrics of one endpoint (null: no endpoint on that port). */
  async endpointPrometheus(port: number): Promise<string | null> {
    const c = await this.collect();
    if (!findByPort(c, port)) return null;
    const filter: EndpointFilter = (e) => e.port === port;
    const perWorker = c.workers.map((w) => {
      const set = new MetricSet();
      endpointWorkerMetrics(w, set, filter);
      return set.list();
    });
    const own = new MetricSet();
    this.endpointMainMetrics(c, own, filter);
    return this.render([...perWorker, own.list()]);
  }

  /** Sums the per-thread metric JSON (prom-client's aggregator) and writes the text exposition. */
  private async render(parts: MetricJson[][]): Promise<string> {
    const registry = AggregatorRegistry.aggregate(parts as unknown as MetricObjectWithValues<MetricValue<string>>[][]);
    registry.setDefaultLabels(this.labels);
    return registry.metrics();
  }

  /** The svc_endpoint_* metrics the main thread computes: limits, rates, averages, process usage. */
  private endpointMainMetrics(c: Collected, set: MetricSet, filter: EndpointFilter): void {
    set.declare('svc_endpoint_connections_max', 'Configured maximum connections of the endpoint (maxConnectionSize); no sample when unlimited.', 'gauge', 'first');
    set.declare('svc_endpoint_sessions_max', 'Configured maximum sessions of the endpoint (maxSessionSize); no sample when unlimited.', 'gauge', 'first');
    const window = `over the last ${RATE_WINDOW_MS / 1000} s (sampled every ${SAMPLE_INTERVAL_MS / 1000} s)`;
    for (const e of c.endpoints.values()) {
      if (!filter(e)) continue;
      const l = endpointLabels(e);
      const r = this.rates(c, e);
      if (e.maxConnectionSize !== null) set.gauge('svc_endpoint_connections_max', '', e.maxConnectionSize, l, 'first');
      if (e.maxSessionSize !== null) set.gauge('svc_endpoint_sessions_max', '', e.maxSessionSize, l, 'first');
      set.gauge('svc_endpoint_connections_rate', `New connections per second ${window}.`, r.connections, l, 'first');
      set.gauge('svc_endpoint_messages_received_rate', `PUBLISH packets received per second ${window}.`, r.messagesReceived, l, 'first');
      set.gauge('svc_endpoint_messages_sent_rate', `PUBLISH packets sent per second ${window}.`, r.messagesSent, l, 'first');
      const errHelp = `Errors per second ${window}, by error_type.`;
      set.gauge('svc_endpoint_errors_rate', errHelp, r.authFailed, { ...l, error_type: 'auth_failed' }, 'first');
      set.gauge('svc_endpoint_errors_rate', errHelp, r.aclDenied, { ...l, error_type: 'acl_denied' }, 'first');
      set.gauge('svc_endpoint_errors_rate', errHelp, r.protocolErrors, { ...l, error_type: 'protocol_error' }, 'first');
      for (const op of OPERATIONS) {
        set.gauge('svc_endpoint_response_time_seconds', `Average handling time ${window} (since start when none in the window): connect (CONNECT to CONNACK), publish (PUBLISH to routed and acknowledged; one in 64 timed), subscribe (SUBSCRIBE to SUBACK).`, r.responseTime[op], { ...l, operation: op }, 'first');
      }
      set.gauge('svc_endpoint_cpu_usage_percent', `CPU time of the broker process per wall-clock time over the last ${SAMPLE_INTERVAL_MS / 1000} s, percent of one core (endpoints share the process: the same value for each).`, c.process.cpuPercent, l, 'first');
      const memHelp = 'Memory of the broker process (shared by every endpoint): heap is the V8 heaps of every thread in use, non_heap the resident memory outside them.';
      set.gauge('svc_endpoint_memory_usage_bytes', memHelp, c.process.heapUsed, { ...l, type: 'heap' }, 'first');
      set.gauge('svc_endpoint_memory_usage_bytes', memHelp, c.process.nonHeap, { ...l, type: 'non_heap' }, 'first');
    }
  }

  /** NOTES.md "JSON metrics" form of one endpoint (null: no endpoint on that port). */
  async endpointJson(port: number): Promise<object | null> {
    const c = await this.collect();
    const e = findByPort(c, port);
    if (!e) return null;
    const s = e.stats;
    const r = this.rates(c, e);
    let rtSum = 0;
    let rtCount = 0;
    for (const op of OPERATIONS) {
      rtSum += s.responseTime[op].sum;
      rtCount += s.responseTime[op].count;
    }
    const errorRate = r.authFailed + r.aclDenied + r.protocolErrors;
    return {
      port: e.port,
      timestamp: new Date(c.at).toISOString(),
      metrics: {
        connections: { current: s.connectionsCurrent, max: e.maxConnectionSize, rate: r.connections, total: s.connectionsTotal },
        messages: {
          received: s.messagesReceived,
          sent: s.messagesSent,
          dropped: s.dropped.buffer_full + s.dropped.client_disconnected + s.dropped.others,
          receivedRate: r.messagesReceived,
          sentRate: r.messagesSent,
        },
        sessions: { current: s.sessionsCurrent, max: e.maxSessionSize, persistent: s.sessionsPersistent },
        performance: {
          cpuUsage: c.process.cpuPercent,
          memoryUsage: c.process.heapUsed + c.process.nonHeap,
          // Seconds: the average of every timed operation (connect, publish, subscribe) since start.
          responseTime: rtCount > 0 ? rtSum / rtCount : 0,
        },
        errors: {
          rate: errorRate,
          authFailed: s.authFailed,
          aclDenied: s.aclDenied,
          connectionErrors: Object.values(s.connectionErrors).reduce((a, n) => a + n, 0),
        },
      },
    };
  }

  /** /api/endpoints/health (null: no endpoint on that port). */
  async endpointHealth(port: number): Promise<object | null> {
    const c = await this.collect();
    const e = findByPort(c, port);
    if (!e) return null;
    const s = e.stats;
    const r = this.rates(c, e);
    const reasons: string[] = [];
    let status: 'UP' | 'DEGRADED' | 'DOWN' = 'UP';
    const degrade = (why: string) => {
      if (status === 'UP') status = 'DEGRADED';
      reasons.push(why);
    };
    if (e.running === 0) {
      status = 'DOWN';
      reasons.push(e.workers > 0 ? 'not listening on any worker (disabled or failed to open)' : 'no worker running');
    } else if (e.running < e.workers) {
      degrade(`listening on ${e.running} of ${e.workers} workers`);
    }
    const usage = (n: number, max: number | null) => (max === null ? null : n / max);
    const connUsage = usage(s.connectionsCurrent, e.maxConnectionSize);
    const sessUsage = usage(s.sessionsCurrent, e.maxSessionSize);
    if (connUsage !== null && connUsage >= HEALTH_USAGE_LIMIT) degrade(`connections at ${s.connectionsCurrent} of ${e.maxConnectionSize} (>= ${HEALTH_USAGE_LIMIT * 100}%)`);
    if (sessUsage !== null && sessUsage >= HEALTH_USAGE_LIMIT) degrade(`sessions at ${s.sessionsCurrent} of ${e.maxSessionSize} (>= ${HEALTH_USAGE_LIMIT * 100}%)`);
    const errorRate = r.authFailed + r.aclDenied + r.protocolErrors;
    if (errorRate > HEALTH_ERROR_RATE_LIMIT) degrade(`error rate ${errorRate.toFixed(2)}/s above ${HEALTH_ERROR_RATE_LIMIT}/s`);
    return {
      port: e.port,
      id: e.id,
      status,
      running: e.running > 0,
      workers: { listening: e.running, total: e.workers },
      connections: { current: s.connectionsCurrent, max: e.maxConnectionSize, usage: connUsage },
      sessions: { current: s.sessionsCurrent, max: e.maxSessionSize, usage: sessUsage },
      errors: { rate: errorRate, authFailedRate: r.authFailed, aclDeniedRate: r.aclDenied, protocolErrorRate: r.protocolErrors },
      reasons,
      timestamp: new Date(c.at).toISOString(),
    };
  }

  /** /api/endpoints/performance (null: no endpoint on that port). */
  async endpointPerformance(port: number): Promise<object | null> {
    const c = await this.collect();
    const e = findByPort(c, port);
    if (!e) return null;
    const s = e.stats;
    const r = this.rates(c, e);
    const sizes = (counts: number[], sum: number) => {
      const count = counts.reduce((a, n) => a + n, 0);
      return {
        count,
        sum,
        average: count > 0 ? sum / count : 0,
        buckets: counts.map((n, i) => ({ le: i < SIZE_BUCKETS.length ? SIZE_BUCKETS[i] : '+Inf', count: n })),
      };
    };
    const responseTime: Record<string, { average: number; recent: number; count: number }> = {};
    for (const op of OPERATIONS) {
      const t = s.responseTime[op];
      responseTime[op] = { average: t.count > 0 ? t.sum / t.count : 0, recent: r.responseTime[op], count: t.count };
    }
    return {
      port: e.port,
      id: e.id,
      window: RATE_WINDOW_MS / 1000,
      rates: {
        connections: r.connections,
        messagesReceived: r.messagesReceived,
        messagesSent: r.messagesSent,
        bytesReceived: r.bytesIn,
        bytesSent: r.bytesOut,
        errors: r.authFailed + r.aclDenied + r.protocolErrors,
      },
      responseTime,
      messageSize: { in: sizes(s.sizeIn, s.sizeInSum), out: sizes(s.sizeOut, s.sizeOutSum) },
      process: { cpuUsage: c.process.cpuPercent, memory: { heap: c.process.heapUsed, nonHeap: c.process.nonHeap, rss: c.process.rss } },
      timestamp: new Date(c.at).toISOString(),
    };
  }
}

function findByPort(c: Collected, port: number): EndpointTotals | undefined {
  for (const e of c.endpoints.values()) if (e.port === port) return e;
  return undefined;
}
