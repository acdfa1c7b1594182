// Failed MQTT authentications per source address, across every worker: past `maxFailures` within
// `windowSeconds` an address is locked out for `lockoutSeconds` (its CONNECTs are refused with
// 0x8A Banned, or 5 in MQTT 3.1.1, before any password is checked). The table is a
// SharedArrayBuffer every worker maps: 4096 slots of [address hash, window start, failures,
// locked until] updated with Atomics, so a guesser spread over the workers meets one limit. Two
// addresses whose hashes share a slot share a limit (rare; a lockout can then catch the other).
// A CONNECT costs one Atomics load while no address failed recently (no address lookup at all).

const SLOTS = 4096;
const WORDS = 4;
/** Word 0 of the buffer: the last failure anywhere, seconds (0: none yet). */
const HEAD = 1;

export interface FailureLimits {
  /** 0: no limit. */
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
}

export function createFailureTable(): SharedArrayBuffer {
  return new SharedArrayBuffer((HEAD + SLOTS * WORDS) * 4);
}

export class AuthFailureLimiter {
  private readonly t: Int32Array;

  constructor(buffer: SharedArrayBuffer, private readonly limits: FailureLimits) {
    this.t = new Int32Array(buffer);
  }

  get enabled(): boolean {
    return this.limits.maxFailures > 0;
  }

  /** Whether no address can be locked now (nothing failed recently): skip the address. */
  quiet(now = nowSeconds()): boolean {
    const last = Atomics.load(this.t, 0);
    return last === 0 || now - last > this.limits.windowSeconds + this.limits.lockoutSeconds;
  }

  locked(address: string, now = nowSeconds()): boolean {
    const at = slotOf(address);
    return Atomics.load(this.t, at) === hashOf(address) && Atomics.load(this.t, at + 3) > now;
  }

  /** Records a failure; answers whether the address is locked out from now on. */
  failed(address: string, now = nowSeconds()): boolean {
    if (!this.enabled) return false;
    Atomics.store(this.t, 0, now);
    const at = slotOf(address);
    const h = hashOf(address);
    const t = this.t;
    if (Atomics.load(t, at) !== h || now - Atomics.load(t, at + 1) >= this.limits.windowSeconds) {
      // A new window (or the slot belonged to another address whose window is over, or not:
      // the newest failing address takes the slot).
      if (Atomics.load(t, at) !== h && Atomics.load(t, at + 3) > now) return false; // keep a lockout running
      Atomics.store(t, at, h);
      Atomics.store(t, at + 1, now);
      Atomics.store(t, at + 2, 0);
    }
    const n = Atomics.add(t, at + 2, 1) + 1;
    if (n >= this.limits.maxFailures) {
      Atomics.store(t, at + 3, now + this.limits.lockoutSeconds);
      Atomics.store(t, at + 2, 0);
      Atomics.store(t, at + 1, now);
      return true;
    }
    return false;
  }
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 1; // never 0 (an empty slot)
}

function slotOf(s: string): number {
  return HEAD + ((hashOf(s) >>> 0) % SLOTS) * WORDS;
}
