// BeatWatchdog: how a worker's pool stage (scripts and extensions, src/features/scripts/worker/
// stage.ts; the schema pool, src/features/schema-registry/worker/schema-pool.ts) ends a task whose
// pool thread stopped beating (heartbeat.ts): a call that never yields. It looks at the tasks in
// flight every max(50, timeoutMs) ms, only while there are some, and aborts one whose beat is
// older than three times the time limit plus 500 ms (a task not started yet is never aborted).
import { BEAT_TIME, NOT_STARTED } from './heartbeat.ts';

/** Why a watched pool task failed as a whole, for counters and logs: its thread ran out of
 * memory, the watchdog aborted it (its beat stopped), or anything else. */
export function failureReason(err: unknown): 'memory' | 'timeout' | 'error' {
  return (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : (err as Error).name === 'AbortError' ? 'timeout' : 'error';
}

export class BeatWatchdog {
  private readonly inFlight = new Set<{ beat: Int32Array; base: number; abort: AbortController }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly timeoutMs: number) {}

  /** Runs `run` with an abort signal, watched through `beat` (its times counted from `base`). */
  async watch<T>(beat: Int32Array, base: number, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const flight = { beat, base, abort: new AbortController() };
    this.inFlight.add(flight);
    this.arm();
    try {
      return await run(flight.abort.signal);
    } finally {
      this.inFlight.delete(flight);
    }
  }

  private arm(): void {
    if (this.timer !== null) return;
    const limit = 3 * this.timeoutMs + 500;
    this.timer = setInterval(() => {
      const now = Date.now();
      for (const f of this.inFlight) {
        const at = Atomics.load(f.beat, BEAT_TIME);
        if (at !== NOT_STARTED && now - f.base - at > limit) f.abort.abort();
      }
      if (this.inFlight.size === 0) {
        clearInterval(this.timer!);
        this.timer = null;
      }
    }, Math.max(50, this.timeoutMs));
    this.timer.unref();
  }
}
