// Deadlines of a worker's connections (the CONNECT timeout, keep alive), on one timer. A Node
// timer per connection costs about 200 bytes (the Timeout, its closure and scope) and a call
// into the timer list on every packet that refreshes it; here a connection only writes its new
// deadline (a number), and one interval of RESOLUTION_MS looks at the connections whose deadline
// falls in the slots that passed. A deadline moved later is found in its old slot and filed again
// then; one moved earlier is filed at once. Expiry comes at most RESOLUTION_MS late.

/** What a deadline is kept for. */
export interface Expiring {
  /** Epoch milliseconds; 0: none. */
  deadline: number;
  /** The slot the deadline is filed in (owned by Deadlines; 0 when not filed). */
  deadlineSlot: number;
  /** The deadline passed. */
  expired(now: number): void;
}

const RESOLUTION_MS = 100;

export class Deadlines {
  private readonly slots = new Map<number, Expiring[]>();
  private timer: NodeJS.Timeout | null = null;
  /** The last slot looked at. */
  private swept = Math.floor(Date.now() / RESOLUTION_MS);

  /** Sets (or moves, or with 0 clears) the deadline of `item`. */
  set(item: Expiring, deadline: number): void {
    item.deadline = deadline;
    if (deadline === 0) return;
    const slot = Math.max(Math.ceil(deadline / RESOLUTION_MS), this.swept + 1);
    if (item.deadlineSlot !== 0 && item.deadlineSlot <= slot) return; // found there, filed again then
    this.file(item, slot);
  }

  private file(item: Expiring, slot: number): void {
    item.deadlineSlot = slot;
    const list = this.slots.get(slot);
    if (list) list.push(item);
    else this.slots.set(slot, [item]);
    this.timer ??= setInterval(this.sweep, RESOLUTION_MS).unref();
  }

  private readonly sweep = (): void => {
    const now = Date.now();
    const last = Math.floor(now / RESOLUTION_MS);
    for (let slot = this.swept + 1; slot <= last; slot++) {
      const list = this.slots.get(slot);
      if (!list) continue;
      this.slots.delete(slot);
      for (const item of list) {
        // Filed again elsewhere since (a deadline moved earlier): that entry counts.
        if (item.deadlineSlot !== slot) continue;
        item.deadlineSlot = 0;
        if (item.deadline === 0) continue;
        if (item.deadline > now) this.file(item, Math.max(Math.ceil(item.deadline / RESOLUTION_MS), last + 1));
        else {
          item.deadline = 0;
          item.expired(now);
        }
      }
    }
    this.swept = last;
    if (this.slots.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  };
}
