// LiveFeed: the console's live picture, pushed (not polled): once a second, while at least one
// console is connected, the broker's counters are collected from every worker and the rates since
// the previous sample sent to every open /api/live WebSocket as one JSON text message. Samples
// are small (a few hundred bytes, plus one line per endpoint); a socket that does not take them
// (uWS backpressure over MAX_BACKPRESSURE) is closed by uWS, not waited for.
import type { Logger } from '../../log/index.ts';
import type { WorkerMetricsSnapshot } from '../../worker/ops/metrics.ts';
import { sumEndpoints } from '../../metrics/endpoint-totals.ts';

export const LIVE_INTERVAL_MS = 1000;

/** What the feed reads the broker through (the supervisor, in the admin server). */
export interface LiveSource {
  readonly nodeName: string;
  metrics(): Promise<WorkerMetricsSnapshot[]>;
  subscriptions(): number;
  retained(): number;
}

export interface LiveSample {
  /** Milliseconds since the epoch. */
  t: number;
  node: string;
  connections: number;
  sessions: number;
  subscriptions: number;
  retained: number;
  /** Per second since the previous sample. */
  in: number;
  out: number;
  dropped: number;
  endpoints: { id: string; port: number; connections: number; in: number; out: number; dropped: number }[];
}

interface Totals {
  at: number;
  byEndpoint: Map<string, { received: number; sent: number; dropped: number }>;
}

export class LiveFeed {
  private timer: NodeJS.Timeout | null = null;
  private sockets = 0;
  private previous: Totals | null = null;
  private sampling = false;

  constructor(private readonly source: LiveSource, private readonly publish: (json: string) => void, private readonly log: Logger) {}

  /** A console connected: sampling runs while any is. */
  opened(): void {
    this.sockets++;
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), LIVE_INTERVAL_MS);
    this.timer.unref();
    void this.tick();
  }

  closed(): void {
    this.sockets = Math.max(0, this.sockets - 1);
    if (this.sockets > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    this.previous = null;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    if (this.sampling) return; // a slow collection is not stacked
    this.sampling = true;
    try {
      const sample = this.sample(await this.source.metrics());
      if (this.timer) this.publish(JSON.stringify(sample));
    } catch (err) {
      this.log.debug('console live sample failed', { err });
    } finally {
      this.sampling = false;
    }
  }

  /** The sample of `workers`' counters, rates against the previous one. */
  sample(workers: readonly WorkerMetricsSnapshot[], now = Date.now()): LiveSample {
    const endpoints = sumEndpoints(workers);
    const prev = this.previous;
    const seconds = prev ? Math.max(0.001, (now - prev.at) / 1000) : 1;
    const totals: Totals = { at: now, byEndpoint: new Map() };
    const out: LiveSample = { t: now, node: this.source.nodeName, connections: 0, sessions: 0, subscriptions: this.source.subscriptions(), retained: this.source.retained(), in: 0, out: 0, dropped: 0, endpoints: [] };
    for (const e of endpoints.values()) {
      const s = e.stats;
      const dropped = Object.values(s.dropped).reduce((a, b) => a + b, 0);
      const cur = { received: s.messagesReceived, sent: s.messagesSent, dropped };
      totals.byEndpoint.set(e.id, cur);
      const before = prev?.byEndpoint.get(e.id);
      // Counters only grow; a worker restarted (its counters from zero) gives no negative rate.
      const rate = (a: number, b: number | undefined) => (b === undefined ? 0 : Math.max(0, (a - b) / seconds));
      const line = { id: e.id, port: e.port, connections: s.connectionsCurrent, in: rate(cur.received, before?.received), out: rate(cur.sent, before?.sent), dropped: rate(dropped, before?.dropped) };
      out.endpoints.push(line);
      out.connections += s.connectionsCurrent;
      out.sessions += s.sessionsCurrent;
      out.in += line.in;
      out.out += line.out;
      out.dropped += line.dropped;
    }
    out.endpoints.sort((a, b) => a.port - b.port);
    this.previous = totals;
    return out;
  }
}
