// Connections per client id across every worker of the node, for flapping detection (EMQX's
// flapping_detect): a SharedArrayBuffer every worker maps (sent as the 'flapping' worker state),
// SLOTS slots of [client id hash, window start (s), connections in the window] updated with
// Atomics, so a client that reconnects to different workers meets one count. Slot 0's words are
// the header: word 0 counts the client ids found flapping (the main thread polls it and, when it
// moved, asks the workers which ones). Two client ids whose hashes share a slot share a count
// (rare: a 32-bit hash and 65,536 slots; the newer one takes the slot once the older's window is
// over); the ban then names the client whose CONNECT went past the limit. A CONNECT costs a hash
// of its client id and three Atomics operations, no allocation.

const SLOTS = 65536;
const WORDS = 4;
/** Word 0: client ids found flapping since start, by any worker. */
export const FLAGGED_WORD = 0;

export function createFlappingTable(): SharedArrayBuffer {
  return new SharedArrayBuffer((SLOTS + 1) * WORDS * 4);
}

export interface FlappingLimits {
  /** More connections than this within the window: flapping. */
  maxCount: number;
  windowSeconds: number;
}

export class FlappingTable {
  private readonly t: Int32Array;

  constructor(buffer: SharedArrayBuffer, readonly limits: FlappingLimits) {
    this.t = new Int32Array(buffer);
  }

  /** Counts one connection of `clientId`; answers true once it goes past the limit (the count
   * starts again, so the next flag needs another maxCount + 1). */
  connected(clientId: string, now = Math.floor(Date.now() / 1000)): boolean {
    const t = this.t;
    const h = hashOf(clientId);
    const at = ((h >>> 0) % SLOTS + 1) * WORDS;
    if (Atomics.load(t, at) !== h || now - Atomics.load(t, at + 1) >= this.limits.windowSeconds) {
      Atomics.store(t, at, h);
      Atomics.store(t, at + 1, now);
      Atomics.store(t, at + 2, 0);
    }
    const n = Atomics.add(t, at + 2, 1) + 1;
    if (n <= this.limits.maxCount) return false;
    Atomics.store(t, at + 2, 0);
    Atomics.store(t, at + 1, now);
    Atomics.add(t, FLAGGED_WORD, 1);
    return true;
  }
}

/** The flagged count in a table (the main thread's cheap poll). */
export function flaggedCount(buffer: SharedArrayBuffer): number {
  return Atomics.load(new Int32Array(buffer, 0, 1), FLAGGED_WORD);
}

function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 1; // never 0 (an empty slot)
}
