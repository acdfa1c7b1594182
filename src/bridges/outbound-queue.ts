// OutboundQueue: the messages of one bridge waiting to go to the remote broker (main thread).
// Bounded: past the bound the OLDEST waiting message is dropped (the newest data is what a
// consumer of a bridged stream wants after an outage, as in a session's drop-oldest queue); the
// caller counts the drop. A message taken for sending can be put back at the front (its send
// failed) and then keeps its place.

export interface OutboundMessage {
  /** The remote topic (already mapped). */
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** Absolute expiry in ms since the epoch; 0: never. */
  expiresAt: number;
}

export class OutboundQueue {
  private items: (OutboundMessage | undefined)[] = [];
  private head = 0;

  constructor(private readonly limit: number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** Adds `m` at the back and answers how many messages were dropped to stay within the bound
   * (`held`: messages taken and not yet acknowledged count against it too): the oldest waiting
   * ones, or `m` itself when everything held is in flight. */
  push(m: OutboundMessage, held: number): number {
    if (held >= this.limit) return 1;
    let dropped = 0;
    while (this.length > 0 && this.length + held >= this.limit) {
      this.shift();
      dropped++;
    }
    this.items.push(m);
    return dropped;
  }

  shift(): OutboundMessage | undefined {
    if (this.head >= this.items.length) return undefined;
    const m = this.items[this.head];
    this.items[this.head++] = undefined;
    // Compact once the consumed front is large (amortized O(1) per message).
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return m;
  }

  /** Puts `m` back at the front (its send failed before the remote took it). */
  unshift(m: OutboundMessage): void {
    if (this.head > 0) this.items[--this.head] = m;
    else this.items.unshift(m);
  }

  clear(): number {
    const n = this.length;
    this.items = [];
    this.head = 0;
    return n;
  }
}
