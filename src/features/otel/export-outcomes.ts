// Owns what the node does with the outcome of each OTLP export request of one signal: counts it
// (spindle_otel_exports_total, spindle_otel_export_failures_total), and logs failures without
// flooding the log: the first failure after a success at once, then at most one line per
// FAILURE_LOG_INTERVAL_MS while they go on (with how many there were), and the recovery.
import type { Logger } from '../../log/index.ts';
import type { OtelMetrics, OtelSignal } from './metrics.ts';

/** While exports keep failing, one log line per this many milliseconds at most. */
export const FAILURE_LOG_INTERVAL_MS = 60_000;

export class ExportOutcomes {
  /** Failures since the last success (0: the last export succeeded). */
  private failing = 0;
  private unlogged = 0;
  private lastLogged = 0;

  constructor(
    private readonly signal: OtelSignal,
    private readonly endpoint: string,
    private readonly metrics: OtelMetrics,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  succeeded(): void {
    this.metrics.exports.inc({ signal: this.signal });
    if (this.failing > 0) this.log.info('OTLP export works again', { signal: this.signal, endpoint: this.endpoint, failures: this.failing });
    this.failing = 0;
    this.unlogged = 0;
  }

  failed(err: unknown): void {
    this.metrics.exports.inc({ signal: this.signal });
    this.metrics.failures.inc({ signal: this.signal });
    this.failing++;
    const at = this.now();
    if (this.failing === 1 || at - this.lastLogged >= FAILURE_LOG_INTERVAL_MS) {
      const since = this.unlogged;
      this.unlogged = 0;
      this.lastLogged = at;
      this.log.warn(this.failing === 1 ? 'OTLP export failed' : 'OTLP export still failing', {
        signal: this.signal, endpoint: this.endpoint, failures: this.failing, notLogged: since, err: describe(err),
      });
    } else {
      this.unlogged++;
    }
  }
}

/** The exporters' errors carry an HTTP status or a network code: keep what a reader needs. */
function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return code !== undefined ? `${err.message} (${String(code)})` : err.message;
  }
  return err === undefined ? 'unknown error' : String(err);
}
