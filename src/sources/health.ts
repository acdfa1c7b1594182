// Owns one source's health (main thread): the state (connecting -> up <-> down -> closed) kept from
// the outcomes of its operations, the count of operations in flight, and the background probe
// that runs while the source is down, with backoff (1 s doubling to 5 s: a server back is seen within 5 s), until the server
// answers again. Every return from down to up counts as a reconnect.
import type { Logger } from '../log/index.ts';
import { Backoff } from './backoff.ts';
import { SourceError, type FailureKind, type HealthState, type SourceHealth } from './types.ts';

/** Failures that mean the server cannot be used at all (as opposed to refusing one operation). */
const UNREACHABLE: ReadonlySet<FailureKind> = new Set(['dns', 'refused', 'timeout', 'tls', 'auth', 'protocol']);

/** Whether an operation's error marks its source down (and starts the probe). */
export function isUnreachable(err: unknown): boolean {
  return err instanceof SourceError && UNREACHABLE.has(err.kind);
}

export interface HealthOptions {
  log: Logger;
  /** One round trip through the source's own pool; rejects while the server is unreachable. */
  probe: () => Promise<void>;
  /** Operations running now (the source's limiter). */
  inFlight: () => number;
  backoff?: Backoff;
}

export class HealthTracker {
  private state: HealthState = 'connecting';
  private since = new Date().toISOString();
  private lastError: string | null = null;
  private lastErrorAt: string | null = null;
  private reconnects = 0;
  private probeTimer: NodeJS.Timeout | null = null;
  private readonly backoff: Backoff;

  constructor(private readonly options: HealthOptions) {
    this.backoff = options.backoff ?? new Backoff(1000, 5000);
  }

  get current(): HealthState {
    return this.state;
  }

  snapshot(): SourceHealth {
    return {
      state: this.state,
      since: this.since,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      reconnects: this.reconnects,
      inFlight: this.options.inFlight(),
    };
  }

  /** Awaits an operation; its outcome updates the state (`isDown`: the error means unreachable). */
  async track<T>(op: Promise<T>, isDown: (err: unknown) => boolean): Promise<T> {
    try {
      const value = await op;
      this.succeeded();
      return value;
    } catch (err) {
      if (isDown(err)) this.wentDown(err);
      else this.answered(err);
      throw err;
    }
  }

  /** The server answered: up (a reconnect when it was down). */
  succeeded(): void {
    if (this.state === 'closed' || this.state === 'up') return;
    if (this.state === 'down') {
      this.reconnects++;
      this.options.log.info('source is up again', { reconnects: this.reconnects });
    }
    this.set('up');
    this.backoff.reset();
    this.stopProbe();
  }

  /** The server answered with an error about the data (bad column, 4xx): it is up. */
  answered(err: unknown): void {
    this.noteError(err);
    this.succeeded();
  }

  /** The server could not be reached or refused us: down, and probed until it answers. */
  wentDown(err: unknown): void {
    this.noteError(err);
    if (this.state === 'closed') return;
    if (this.state !== 'down') {
      this.options.log.warn('source is down', { error: messageOf(err) });
      this.set('down');
    }
    this.scheduleProbe();
  }

  close(): void {
    this.stopProbe();
    this.set('closed');
  }

  private noteError(err: unknown): void {
    this.lastError = messageOf(err);
    this.lastErrorAt = new Date().toISOString();
  }

  private set(state: HealthState): void {
    if (this.state === state) return;
    this.state = state;
    this.since = new Date().toISOString();
  }

  private scheduleProbe(): void {
    if (this.probeTimer !== null) return;
    this.probeTimer = setTimeout(() => void this.runProbe(), this.backoff.next());
    this.probeTimer.unref();
  }

  private async runProbe(): Promise<void> {
    try {
      await this.options.probe();
      this.probeTimer = null;
      this.succeeded();
    } catch (err) {
      this.probeTimer = null;
      // Still down (or closed meanwhile): wentDown schedules the next probe with a longer delay.
      if (this.state === 'down') this.wentDown(err);
    }
  }

  private stopProbe(): void {
    if (this.probeTimer !== null) clearTimeout(this.probeTimer);
    this.probeTimer = null;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
