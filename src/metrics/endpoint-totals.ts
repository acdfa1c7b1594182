// An endpoint's counters summed over every worker thread, and the sliding window the main thread
// computes per-second rates and recent averages from (the svc_endpoint_*_rate gauges).
import type { EndpointStatsSnapshot, Operation } from '../stats/endpoint-stats.ts';
import type { WorkerMetricsSnapshot } from '../worker/ops/metrics.ts';

export interface EndpointTotals {
  id: string;
  port: number;
  /** Workers reporting the endpoint, and those of them listening on it. */
  workers: number;
  running: number;
  maxConnectionSize: number | null;
  maxSessionSize: number | null;
  stats: EndpointStatsSnapshot;
}

/** Per endpoint id, the sum of every worker's counters. */
export function sumEndpoints(snaps: readonly WorkerMetricsSnapshot[]): Map<string, EndpointTotals> {
  const out = new Map<string, EndpointTotals>();
  for (const snap of snaps) {
    for (const e of snap.endpoints) {
      let t = out.get(e.id);
      if (!t) {
        out.set(e.id, { id: e.id, port: e.port, workers: 1, running: e.running ? 1 : 0, maxConnectionSize: e.maxConnectionSize, maxSessionSize: e.maxSessionSize, stats: structuredClone(e.stats) });
        continue;
      }
      t.workers++;
      if (e.running) t.running++;
      addInto(t.stats, e.stats);
    }
  }
  return out;
}

function addInto(a: EndpointStatsSnapshot, b: EndpointStatsSnapshot): void {
  for (const k of ['connectionsCurrent', 'connectionsTotal', 'messagesReceived', 'messagesSent', 'sizeInSum', 'sizeOutSum', 'sessionsCurrent', 'sessionsPersistent', 'authFailed', 'aclDenied', 'protocolErrors', 'subscriptions', 'topicsPublished'] as const) a[k] += b[k];
  for (const k of Object.keys(a.dropped) as (keyof EndpointStatsSnapshot['dropped'])[]) a.dropped[k] += b.dropped[k];
  b.sizeIn.forEach((n, i) => (a.sizeIn[i] += n));
  b.sizeOut.forEach((n, i) => (a.sizeOut[i] += n));
  for (const [code, n] of Object.entries(b.connectionErrors)) a.connectionErrors[code] = (a.connectionErrors[code] ?? 0) + n;
  b.throttled.forEach((n, i) => (a.throttled[i] = (a.throttled[i] ?? 0) + n));
  for (const op of OPERATIONS) {
    a.responseTime[op].sum += b.responseTime[op].sum;
    a.responseTime[op].count += b.responseTime[op].count;
  }
}

export const OPERATIONS: readonly Operation[] = ['connect', 'publish', 'subscribe'];

/** The counters a rate or a recent average is computed from. */
export interface RateCounters {
  connections: number;
  received: number;
  sent: number;
  bytesIn: number;
  bytesOut: number;
  authFailed: number;
  aclDenied: number;
  protocolErrors: number;
  rtSum: Record<Operation, number>;
  rtCount: Record<Operation, number>;
}

export function rateCounters(s: EndpointStatsSnapshot): RateCounters {
  return {
    connections: s.connectionsTotal,
    received: s.messagesReceived,
    sent: s.messagesSent,
    bytesIn: s.sizeInSum,
    bytesOut: s.sizeOutSum,
    authFailed: s.authFailed,
    aclDenied: s.aclDenied,
    protocolErrors: s.protocolErrors,
    rtSum: { connect: s.responseTime.connect.sum, publish: s.responseTime.publish.sum, subscribe: s.responseTime.subscribe.sum },
    rtCount: { connect: s.responseTime.connect.count, publish: s.responseTime.publish.count, subscribe: s.responseTime.subscribe.count },
  };
}

export interface Rates {
  /** Seconds the rates are computed over (0: no earlier sample yet; the rates are then 0). */
  window: number;
  connections: number;
  messagesReceived: number;
  messagesSent: number;
  bytesIn: number;
  bytesOut: number;
  authFailed: number;
  aclDenied: number;
  protocolErrors: number;
  /** Average handling time in seconds over the window; since start when none in the window. */
  responseTime: Record<Operation, number>;
}

interface Sample {
  at: number;
  byId: Map<string, RateCounters>;
}

/**
 * Samples of every endpoint's counters, taken every `interval` ms and kept for `window` ms. A
 * rate is (counter now - counter at the oldest sample in the window) / elapsed seconds. A counter
 * that went down (a worker restarted) gives 0, not a negative rate.
 */
export class RateWindow {
  private readonly samples: Sample[] = [];

  constructor(readonly windowMs: number) {}

  add(at: number, totals: ReadonlyMap<string, EndpointTotals>): void {
    const byId = new Map<string, RateCounters>();
    for (const [id, t] of totals) byId.set(id, rateCounters(t.stats));
    this.samples.push({ at, byId });
    while (this.samples.length > 1 && this.samples[1].at <= at - this.windowMs) this.samples.shift();
  }

  rates(id: string, now: RateCounters, at: number): Rates {
    const base = this.samples.find((s) => s.at >= at - this.windowMs && s.at < at && s.byId.has(id));
    const then = base?.byId.get(id);
    const secs = base ? (at - base.at) / 1000 : 0;
    const rate = (a: number, b: number | undefined) => (b === undefined || secs <= 0 ? 0 : Math.max(0, a - b) / secs);
    const responseTime = {} as Record<Operation, number>;
    for (const op of OPERATIONS) {
      const dc = then ? now.rtCount[op] - then.rtCount[op] : 0;
      if (then && dc > 0) responseTime[op] = (now.rtSum[op] - then.rtSum[op]) / dc;
      else responseTime[op] = now.rtCount[op] > 0 ? now.rtSum[op] / now.rtCount[op] : 0;
    }
    return {
      window: secs,
      connections: rate(now.connections, then?.connections),
      messagesReceived: rate(now.received, then?.received),
      messagesSent: rate(now.sent, then?.sent),
      bytesIn: rate(now.bytesIn, then?.bytesIn),
      bytesOut: rate(now.bytesOut, then?.bytesOut),
      authFailed: rate(now.authFailed, then?.authFailed),
      aclDenied: rate(now.aclDenied, then?.aclDenied),
      protocolErrors: rate(now.protocolErrors, then?.protocolErrors),
      responseTime,
    };
  }
}

/** A node's figures for the console's live picture: its connections now and its cumulative
 * message counters, summed over every endpoint of every worker (rates are taken by the reader). */
export interface NodeTotals {
  connections: number;
  received: number;
  sent: number;
  dropped: number;
}

export function nodeTotals(snaps: readonly WorkerMetricsSnapshot[]): NodeTotals {
  const out: NodeTotals = { connections: 0, received: 0, sent: 0, dropped: 0 };
  for (const snap of snaps) {
    for (const e of snap.endpoints) {
      const s = e.stats;
      out.connections += s.connectionsCurrent;
      out.received += s.messagesReceived;
      out.sent += s.messagesSent;
      for (const n of Object.values(s.dropped)) out.dropped += n;
    }
  }
  return out;
}
