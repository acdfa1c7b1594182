// Store-wide unique ids of stored messages, made without asking the store: the time in ms (upper
// 42 bits), the generator (14 bits: the node's slot in a store the cluster's nodes share, 6 bits,
// then the worker, 8 bits; 255 is the main thread), a counter within the ms (8 bits; past 256 ids
// in one ms the next ms is borrowed). Ids of one generator only grow; two generators never meet.
// The slot makes ids unique across the nodes of a cluster sharing one database: each node holds
// its own (Store.claimNodeSlot); 0 with a store of its own (LOCAL).

/** Most node slots in one shared store (6 bits). */
export const MAX_NODE_SLOTS = 64;
/** The generator number of a node's main thread. */
export const MAIN_THREAD = 0xff;

export class MessageIds {
  private lastMs = 0;
  private counter = 0;
  private readonly generator: bigint;

  constructor(nodeSlot: number, thread: number) {
    if (!Number.isInteger(nodeSlot) || nodeSlot < 0 || nodeSlot >= MAX_NODE_SLOTS) throw new RangeError(`node slot ${nodeSlot} is not in 0..${MAX_NODE_SLOTS - 1}`);
    this.generator = (BigInt(nodeSlot) << 16n) | (BigInt(thread & 0xff) << 8n);
  }

  next(): bigint {
    const now = Date.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.counter = 0;
    } else if (++this.counter >= 1 << 8) {
      this.lastMs++;
      this.counter = 0;
    }
    return (BigInt(this.lastMs) << 22n) | this.generator | BigInt(this.counter);
  }
}

/** When a message with this id was stored (ms since the epoch). */
export function storedAtMs(id: bigint): number {
  return Number(id >> 22n);
}
