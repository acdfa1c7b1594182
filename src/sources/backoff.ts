// Owns the reconnect/retry delay: starts at `initialMs`, doubles after every failure up to `maxMs`,
// and starts over after a success. Sources probe a down server with it (1 s .. 30 s); action
// pipelines retry a batch with it (100 ms .. 5 s).

export class Backoff {
  private current: number;

  constructor(
    private readonly initialMs = 1000,
    private readonly maxMs = 30_000,
  ) {
    this.current = initialMs;
  }

  /** The delay to wait now; the one after it is twice as long (at most maxMs). */
  next(): number {
    const delay = this.current;
    this.current = Math.min(this.current * 2, this.maxMs);
    return delay;
  }

  reset(): void {
    this.current = this.initialMs;
  }
}
