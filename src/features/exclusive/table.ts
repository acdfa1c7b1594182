// ExclusiveTable: who holds each `$exclusive/{filter}` place on this node, shared by every worker
// (a SharedArrayBuffer, Atomics): an open-addressing table of SLOTS slots of four Int32s each:
// the filter's two 32-bit hashes (FNV-1a and djb2: 64 bits that name the filter), the holder (a
// 32-bit hash of its client id, never 0) and a state (0 free, 1 taken, 2 freed: a tombstone so a
// later place in the same probe run is still found). A SUBSCRIBE to an exclusive filter is one
// compare-and-swap, on the worker, with no message to the main thread. Two filters whose 64 bits
// agree would share a place (about one chance in 2^64 per pair).
export const SLOTS = 65_536;
const WIDTH = 4;
const FREE = 0;
const TAKEN = 1;
const FREED = 2;

export function hashes(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 5381;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = (Math.imul(b, 33) + c) | 0;
  }
  return [a | 0, b | 0];
}

/** A client's id as a holder: never 0 (0 marks no holder). */
export function holderOf(clientId: string): number {
  const h = hashes(clientId)[0];
  return h === 0 ? 1 : h;
}

export type Acquired = 'taken' | 'held' | 'busy' | 'full';

export class ExclusiveTable {
  private readonly a: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(SLOTS * WIDTH * 4)) {
    this.a = new Int32Array(buffer);
  }

  /** Takes the place of `filter` for `clientId`: 'taken' now, 'held' already by it, 'busy'
   * (another client holds it) or 'full' (every slot is taken). */
  acquire(filter: string, clientId: string): Acquired {
    const [h1, h2] = hashes(filter);
    const who = holderOf(clientId);
    const a = this.a;
    let i = (h1 >>> 0) % SLOTS;
    for (let n = 0; n < SLOTS; n++, i = (i + 1) % SLOTS) {
      const o = i * WIDTH;
      const state = Atomics.load(a, o + 3);
      if (state === TAKEN) {
        if (a[o] === h1 && a[o + 1] === h2) return a[o + 2] === who ? 'held' : 'busy';
        continue;
      }
      // A free slot or a tombstone: claimed with a compare-and-swap on the state (a racing worker
      // that loses looks at the slot again).
      if (state === -1 || Atomics.compareExchange(a, o + 3, state, -1) !== state) {
        n--;
        i = (i + SLOTS - 1) % SLOTS;
        while (Atomics.load(a, o + 3) === -1) { /* another worker is writing the slot */ }
        continue;
      }
      // The filter may sit later in the probe run (after a tombstone): look before taking this one.
      if (state === FREED) {
        const found = this.find(h1, h2, i);
        if (found !== -1) {
          Atomics.store(a, o + 3, FREED);
          return a[found * WIDTH + 2] === who ? 'held' : 'busy';
        }
      }
      a[o] = h1;
      a[o + 1] = h2;
      a[o + 2] = who;
      Atomics.store(a, o + 3, TAKEN);
      return 'taken';
    }
    return 'full';
  }

  /** Frees the place of `filter` when `clientId` holds it; true when it did. */
  release(filter: string, clientId: string): boolean {
    const [h1, h2] = hashes(filter);
    const slot = this.find(h1, h2, (h1 >>> 0) % SLOTS);
    if (slot === -1) return false;
    const o = slot * WIDTH;
    if (this.a[o + 2] !== holderOf(clientId)) return false;
    return Atomics.compareExchange(this.a, o + 3, TAKEN, FREED) === TAKEN;
  }

  /** Whether `clientId` holds the place of `filter`. */
  holds(filter: string, clientId: string): boolean {
    const [h1, h2] = hashes(filter);
    const slot = this.find(h1, h2, (h1 >>> 0) % SLOTS);
    return slot !== -1 && this.a[slot * WIDTH + 2] === holderOf(clientId);
  }

  /** Places taken now. */
  size(): number {
    let n = 0;
    for (let i = 0; i < SLOTS; i++) if (Atomics.load(this.a, i * WIDTH + 3) === TAKEN) n++;
    return n;
  }

  private find(h1: number, h2: number, from: number): number {
    const a = this.a;
    for (let n = 0, i = from; n < SLOTS; n++, i = (i + 1) % SLOTS) {
      const o = i * WIDTH;
      const state = Atomics.load(a, o + 3);
      if (state === FREE) return -1;
      if (state === TAKEN && a[o] === h1 && a[o + 1] === h2) return i;
    }
    return -1;
  }
}
