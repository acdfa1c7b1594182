// The 'metrics' operation: one worker thread's counters for the supervisor's Prometheus registry
// (src/metrics): the worker's WorkerStats, each endpoint's EndpointStats with the session counts
// of that moment, this thread's V8 heap, and its event-loop delay. Also owns the event-loop
// delay monitor of the thread (started when the ops table is loaded, i.e. at worker start).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

import type { WorkerStatsSnapshot } from '../../stats/worker-stats.ts';
import { sysFilters } from '../../stats/worker-stats.ts';
import { registerEndpointStats, type EndpointStatsSnapshot } from '../../stats/endpoint-stats.ts';
import type { Op, OpsEnv } from './types.ts';

/** The event-loop delay is reported over windows of this length (the last complete one). */
export const LAG_WINDOW_MS = 10_000;

export interface EventLoopLag {
  /** Seconds; over the last complete window (or the current one before the first completes). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface EndpointSnapshot {
  id: string;
  port: number;
  running: boolean;
  maxConnectionSize: number | null;
  maxSessionSize: number | null;
  /** TLS-PSK on (sslConfig.psk): its handshake counts are metrics. */
  psk?: true;
  stats: EndpointStatsSnapshot;
  /** TLS endpoints: which revocation checks they make (their metrics are written only then). */
  ssl?: { crl: boolean; ocspClientCheck: boolean };
}

export interface WorkerMetricsSnapshot {
  worker: number;
  stats: WorkerStatsSnapshot;
  endpoints: EndpointSnapshot[];
  heap: { used: number; total: number };
  eventLoopLag: EventLoopLag;
}

/** Sampling interval of the monitor (ms); each recorded delay includes it, so it is subtracted. */
const RESOLUTION_MS = 10;
const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
delay.enable();
let lastWindow: EventLoopLag | null = null;
const windowTimer = setInterval(() => {
  lastWindow = readLag();
  delay.reset();
}, LAG_WINDOW_MS);
windowTimer.unref();

function readLag(): EventLoopLag {
  // The histogram is in nanoseconds of timer interval (resolution + lag); with no sample yet its
  // mean is NaN.
  const s = (ns: number) => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - RESOLUTION_MS) / 1000 : 0);
  return { p50: s(delay.percentile(50)), p90: s(delay.percentile(90)), p99: s(delay.percentile(99)), max: s(delay.max), mean: s(delay.mean) };
}

function snapshot(env: OpsEnv): WorkerMetricsSnapshot {
  const { listeners } = env;
  const sessions = env.sessions;
  // Sessions and subscriptions are counted here, once per request, not on the hot path.
  const perSlot = new Map<number, { current: number; persistent: number; subscriptions: number }>();
  let persistent = 0;
  let subscriptions = 0;
  let sys = 0;
  for (const s of sessions.all()) {
    if (s.expiryInterval > 0) persistent++;
    subscriptions += s.subscriptionCount;
    if (s.subscriptionCount > 0) sys += sysFilters(s.subscriptions.keys());
    // The endpoint the session is counted on (maxSessionSize), else its connection's.
    const slot = s.endpointSlot >= 0 ? s.endpointSlot : s.connection?.endpointSlot ?? -1;
    if (slot < 0) continue;
    let c = perSlot.get(slot);
    if (!c) perSlot.set(slot, (c = { current: 0, persistent: 0, subscriptions: 0 }));
    c.current++;
    if (s.expiryInterval > 0) c.persistent++;
    c.subscriptions += s.subscriptionCount;
  }
  env.stats.sessions = sessions.size;
  env.stats.persistentSessions = persistent;
  env.stats.subscriptions = subscriptions;
  env.stats.sysSubscriptions = sys;
  const endpoints: EndpointSnapshot[] = [];
  for (const ep of listeners.endpoints.values()) {
    registerEndpointStats(ep.slot, ep.stats);
    const c = perSlot.get(ep.slot);
    ep.stats.sessionsCurrent = c?.current ?? 0;
    ep.stats.sessionsPersistent = c?.persistent ?? 0;
    ep.stats.subscriptions = c?.subscriptions ?? 0;
    endpoints.push({
      id: ep.config.id,
      port: ep.config.port,
      running: ep.running,
      maxConnectionSize: ep.config.maxConnectionSize ?? null,
      maxSessionSize: ep.config.maxSessionSize ?? null,
      ...(ep.config.sslConfig?.psk !== undefined ? { psk: true as const } : {}),
      stats: ep.stats.snapshot(),
      ...(ep.config.sslConfig ? { ssl: { crl: ep.config.sslConfig.crl !== undefined, ocspClientCheck: ep.config.sslConfig.ocspClientCheck?.enabled === true } } : {}),
    });
  }
  const heap = getHeapStatistics();
  return {
    worker: env.workerId,
    stats: env.stats.snapshot(),
    endpoints,
    heap: { used: heap.used_heap_size, total: heap.total_heap_size },
    eventLoopLag: lastWindow ?? readLag(),
  };
}

export const metricsOps = {
  metrics: (_args: unknown, env: OpsEnv) => snapshot(env),
} satisfies Record<string, Op>;
