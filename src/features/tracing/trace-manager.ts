// Client tracing, the main thread's half: which client ids are traced and until when, pushed to
// every worker (also a restarted one) as one set. Traces are operational and short: kept in
// memory only (a restart ends them), at most MAX_TRACES at once, each at most MAX_TRACE_SECONDS.
import type { Logger } from '../../log/index.ts';
import type { TraceSpec } from './worker-traces.ts';
import { TraceError } from './errors.ts';
import type { WorkerCall } from '../../worker/ops/index.ts';

export const MAX_TRACES = 100;
export const MAX_TRACE_SECONDS = 86_400;

export interface TraceHost {
  runningWorkers(): number[];
  call: WorkerCall;
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void;
}

export interface TraceView {
  clientId: string;
  startTime: string;
  endTime: string;
}


export class TraceManager {
  private readonly traces = new Map<string, { started: number; until: number; timer: NodeJS.Timeout }>();

  constructor(private readonly host: TraceHost, private readonly log: Logger) {
    host.onWorkerStart((worker) => {
      return host.call(worker, 'traces.set', { traces: this.specs() }).catch((err: unknown) => this.log.error('traces not set on a restarted worker', { worker, err }));
    });
  }

  list(): TraceView[] {
    return [...this.traces].map(([clientId, t]) => ({ clientId, startTime: new Date(t.started).toISOString(), endTime: new Date(t.until).toISOString() }));
  }

  /** Traces `clientId` for `seconds` (a trace of it already on is extended or shortened). */
  async add(clientId: string, seconds: number): Promise<TraceView> {
    if (!this.traces.has(clientId) && this.traces.size >= MAX_TRACES) throw new TraceError(409, 'clientId', `clientId: at most ${MAX_TRACES} traces at once`);
    const old = this.traces.get(clientId);
    if (old) clearTimeout(old.timer);
    const started = Date.now();
    const until = started + seconds * 1000;
    const timer = setTimeout(() => void this.delete(clientId).catch(() => {}), seconds * 1000);
    timer.unref();
    this.traces.set(clientId, { started, until, timer });
    await this.push();
    this.log.info('trace started', { clientId, seconds });
    return this.list().find((t) => t.clientId === clientId)!;
  }

  async delete(clientId: string): Promise<void> {
    const t = this.traces.get(clientId);
    if (!t) throw new TraceError(404, 'clientId', `no trace of ${clientId}`);
    clearTimeout(t.timer);
    this.traces.delete(clientId);
    await this.push();
    this.log.info('trace ended', { clientId });
  }

  close(): void {
    for (const t of this.traces.values()) clearTimeout(t.timer);
  }

  private specs(): TraceSpec[] {
    return [...this.traces].map(([clientId, t]) => ({ clientId, until: t.until }));
  }

  private async push(): Promise<void> {
    const traces = this.specs();
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'traces.set', { traces })));
  }
}
