// BoundedQueue: a session's queue of deliveries waiting for a connection or for room in the
// inflight window. Bounded; at the bound it drops by the configured policy and says what it
// dropped, so the caller can count it. Owned by the worker thread that owns the session.

export type DropPolicy = 'drop-oldest' | 'drop-newest';

export class BoundedQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  constructor(private capacity: number, private policy: DropPolicy) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** Adds an item; returns the item dropped to stay within the bound, if any. */
  push(item: T): T | undefined {
    if (this.capacity === 0) return item;
    if (this.length < this.capacity) {
      this.items.push(item);
      return undefined;
    }
    if (this.policy === 'drop-newest') return item;
    const dropped = this.shift();
    this.items.push(item);
    return dropped;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Compact now and then so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  clear(): T[] {
    const rest = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return rest;
  }

  *[Symbol.iterator](): Generator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i] as T;
  }
}
