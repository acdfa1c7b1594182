// BatchPump: how a worker's pool stage (scripts and extensions, src/features/scripts/worker/
// stage.ts; offloaded schema checks, src/features/schema-registry/worker/check-stage.ts) groups
// what it hands to its pool threads, and answers in the order things came in.
//
// Batches adapt to the load: one is sent at the end of the tick only while fewer than `slots`
// are running; otherwise the open batch keeps filling (closed at its item or byte bound, then
// waiting) until one comes back. So a busy stage sends few, large batches (the pool's cost per
// task, ~50 µs, is spread over many items) and an idle one sends at once. Batches are numbered
// as they leave; inOrder() holds the answer of one that came back before an earlier one.
export class BatchPump<T> {
  private batch: T[] = [];
  private batchBytes = 0;
  private readonly waiting: T[][] = [];
  private running = 0;
  private scheduled = false;
  /** Answers of batches that came back before an earlier one, held until it has. */
  private readonly early = new Map<number, () => void>();
  private sent = 0;
  private answeredUpTo = 0;

  /** `send(batch, seq)` runs one batch on the pool; at most `slots` run at once. */
  constructor(
    private readonly slots: number,
    private readonly send: (batch: T[], seq: number) => Promise<void>,
  ) {}

  /** Adds `item` (`bytes` of payload) to the open batch, closed at `maxItems` or `maxBytes`. */
  add(item: T, bytes: number, maxItems: number, maxBytes: number): void {
    this.batch.push(item);
    this.batchBytes += bytes;
    if (this.batch.length >= maxItems || this.batchBytes >= maxBytes) this.closeBatch();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.pumpSoon);
    }
  }

  /** Sends everything now, whatever is running (on close). */
  flush(): void {
    this.closeBatch();
    while (this.waiting.length > 0) this.start(this.waiting.shift()!);
  }

  /** Runs `answer` for batch `seq` once every batch before it has been answered. */
  inOrder(seq: number, answer: () => void): void {
    this.early.set(seq, answer);
    for (let next = this.early.get(this.answeredUpTo); next !== undefined; next = this.early.get(this.answeredUpTo)) {
      this.early.delete(this.answeredUpTo++);
      next();
    }
  }

  private readonly pumpSoon = (): void => {
    this.scheduled = false;
    this.pump();
  };

  private pump(): void {
    if (this.running < this.slots && this.waiting.length === 0) this.closeBatch();
    while (this.running < this.slots && this.waiting.length > 0) this.start(this.waiting.shift()!);
  }

  /** Closes the open batch (it waits its turn). */
  private closeBatch(): void {
    if (this.batch.length === 0) return;
    this.waiting.push(this.batch);
    this.batch = [];
    this.batchBytes = 0;
  }

  private start(batch: T[]): void {
    this.running++;
    void this.send(batch, this.sent++).finally(() => {
      this.running--;
      this.pump();
    });
  }
}
