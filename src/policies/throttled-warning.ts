// Owns the rate limit of one policy's warnings of one kind (a failed request, a key set that cannot
// be fetched, rules dropped from a token): at most one line per interval (10 s by default), with
// the number of occurrences since the previous line, so an endpoint that is down while thousands
// of clients connect writes a few lines, not thousands. No timer: the count of the occurrences
// after the last line is written with the next line (an operator sees it once the failure recurs).
import type { LogFields, Logger } from '../log/index.ts';

export const WARNING_INTERVAL_MS = 10_000;

export class ThrottledWarning {
  private unreported = 0;
  private nextLineAt = 0;

  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly intervalMs = WARNING_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one occurrence; writes a warn line (with `count` and `fields`) when the interval allows. */
  note(fields: LogFields): void {
    this.unreported++;
    const now = this.now();
    if (now < this.nextLineAt) return;
    this.log.warn(this.message, { ...fields, count: this.unreported });
    this.unreported = 0;
    this.nextLineAt = now + this.intervalMs;
  }
}
