// RetainedChanges: the retained sets and clears made on this worker thread, for the cluster
// (src/cluster/retained.ts, main thread, sends them to the other nodes): one post per tick holding
// every change of that tick, each record copied into a buffer of its own and transferred. Made
// only when the cluster is on (WorkerRouter.setCluster): without it the router pays nothing.
// `$SYS` topics are each node's own and never leave it. One per worker thread.

/** One retained set (`record`: the message's record, see broker/message.ts) or clear (null). */
export interface RetainedChange {
  topic: string;
  record: Uint8Array | null;
  /** When the broker received the message (ms since the epoch). */
  at: number;
}

export type PostRetained = (items: RetainedChange[], transfer: ArrayBuffer[]) => void;

export class RetainedChanges {
  private items: RetainedChange[] = [];
  private transfer: ArrayBuffer[] = [];
  private flushScheduled = false;

  constructor(private readonly post: PostRetained) {}

  /** A retained set (`record`, which may be a view into a pooled buffer: copied) or clear (null). */
  add(topic: string, record: Uint8Array | null, at: number): void {
    if (topic.startsWith('$SYS')) return;
    let copy: Uint8Array | null = null;
    if (record !== null) {
      copy = new Uint8Array(record.length);
      copy.set(record);
      this.transfer.push(copy.buffer as ArrayBuffer);
    }
    this.items.push({ topic, record: copy, at });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.items.length === 0) return;
    const items = this.items;
    const transfer = this.transfer;
    this.items = [];
    this.transfer = [];
    this.post(items, transfer);
  };
}
