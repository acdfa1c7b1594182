// Per-tenant counters every worker thread shares, so a licence's limits hold across all of them:
// connections in use (against the licence's maximum), messages received in the current second
// (against its rate), and the cumulative counts the platform reports (messages, refusals,
// throttles, cross-tenant denials). An Int32Array over a SharedArrayBuffer the main thread
// creates (the control platform: src/platform/tenants); updated with Atomics only. One slot per
// organization and per application; the main thread writes the limits, the workers the counts.
// Cumulative counts wrap at 2^32: readers take differences modulo 2^32. Each worker's share of a
// slot's connections is kept too, so the connections of a worker that dies are given back
// (dropWorker, by the main thread once the thread has exited).

/** The buffer starts with [slots, workers]. */
const HEADER = 2;
const FIELDS = 10;
const CONNECTIONS = 0;
/** Licence limits, written by the main thread: -1 is no limit. */
const MAX_CONNECTIONS = 1;
const MAX_RATE = 2;
const RATE_SECOND = 3;
const RATE_COUNT = 4;
const MESSAGES = 5;
const DENIED = 6;
const THROTTLED = 7;
const QUOTA_REFUSED = 8;
/** Bumped when a slot is given to another tenant: a link to the old one stops counting. */
const EPOCH = 9;

/** Which slots a tenant client counts in (plain data: crosses to the workers in an auth answer). */
export interface TenantRef {
  applicationId: string;
  organizationId: string;
  appSlot: number;
  orgSlot: number;
  /** The slots' epochs when the answer was made. */
  appEpoch: number;
  orgEpoch: number;
}

export interface TenantUsage {
  connections: number;
  /** Messages received in the current second. */
  rate: number;
  messages: number;
  denied: number;
  throttled: number;
  quotaRefused: number;
}

export function createTenantBuffer(slots: number, workers: number): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer((HEADER + slots * FIELDS + slots * workers) * 4);
  const a = new Int32Array(buffer);
  a[0] = slots;
  a[1] = workers;
  return buffer;
}

export class TenantCounters {
  private readonly a: Int32Array;
  readonly slots: number;
  readonly workers: number;
  /** Where the per-worker connection counts start. */
  private readonly perWorker: number;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.a = new Int32Array(buffer);
    this.slots = this.a[0];
    this.workers = this.a[1];
    this.perWorker = HEADER + this.slots * FIELDS;
  }

  // The main thread's side.

  /** Makes `slot` fresh for a new tenant: counts zeroed, limits set, epoch moved on. */
  claim(slot: number, maxConnections: number | null, maxRate: number | null): number {
    const b = HEADER + slot * FIELDS;
    for (const f of [CONNECTIONS, RATE_SECOND, RATE_COUNT, MESSAGES, DENIED, THROTTLED, QUOTA_REFUSED]) Atomics.store(this.a, b + f, 0);
    for (let w = 0; w < this.workers; w++) Atomics.store(this.a, this.perWorker + slot * this.workers + w, 0);
    this.setLimits(slot, maxConnections, maxRate);
    return Atomics.add(this.a, b + EPOCH, 1) + 1;
  }

  /** Retires a slot: links to it stop counting; limits open. */
  retire(slot: number): void {
    Atomics.add(this.a, HEADER + slot * FIELDS + EPOCH, 1);
    this.setLimits(slot, null, null);
  }

  setLimits(slot: number, maxConnections: number | null, maxRate: number | null): void {
    Atomics.store(this.a, HEADER + slot * FIELDS + MAX_CONNECTIONS, maxConnections ?? -1);
    Atomics.store(this.a, HEADER + slot * FIELDS + MAX_RATE, maxRate ?? -1);
  }

  /** Gives back the connections worker `worker` held (it has exited: they are gone). */
  dropWorker(worker: number): void {
    if (worker < 0 || worker >= this.workers) return;
    for (let slot = 0; slot < this.slots; slot++) {
      const held = Atomics.exchange(this.a, this.perWorker + slot * this.workers + worker, 0);
      if (held !== 0) Atomics.sub(this.a, HEADER + slot * FIELDS + CONNECTIONS, held);
    }
  }

  epoch(slot: number): number {
    return Atomics.load(this.a, HEADER + slot * FIELDS + EPOCH);
  }

  usage(slot: number, nowMs = Date.now()): TenantUsage {
    const b = HEADER + slot * FIELDS;
    const second = Math.floor(nowMs / 1000) | 0;
    return {
      connections: Atomics.load(this.a, b + CONNECTIONS),
      rate: Atomics.load(this.a, b + RATE_SECOND) === second ? Atomics.load(this.a, b + RATE_COUNT) : 0,
      messages: Atomics.load(this.a, b + MESSAGES) >>> 0,
      denied: Atomics.load(this.a, b + DENIED) >>> 0,
      throttled: Atomics.load(this.a, b + THROTTLED) >>> 0,
      quotaRefused: Atomics.load(this.a, b + QUOTA_REFUSED) >>> 0,
    };
  }

  // The workers' side.

  /** Whether `slot` still belongs to the tenant the link was made for. */
  current(slot: number, epoch: number): boolean {
    return Atomics.load(this.a, HEADER + slot * FIELDS + EPOCH) === epoch;
  }

  /** Takes a connection in `slot` for `worker` unless the slot's maximum are in use. */
  tryConnection(slot: number, worker: number): boolean {
    const b = HEADER + slot * FIELDS;
    const now = Atomics.add(this.a, b + CONNECTIONS, 1);
    const max = Atomics.load(this.a, b + MAX_CONNECTIONS);
    if (max >= 0 && now >= max) {
      Atomics.sub(this.a, b + CONNECTIONS, 1);
      return false;
    }
    if (worker >= 0 && worker < this.workers) Atomics.add(this.a, this.perWorker + slot * this.workers + worker, 1);
    return true;
  }

  releaseConnection(slot: number, worker: number): void {
    if (worker >= 0 && worker < this.workers) Atomics.sub(this.a, this.perWorker + slot * this.workers + worker, 1);
    Atomics.sub(this.a, HEADER + slot * FIELDS + CONNECTIONS, 1);
  }

  /** Counts a received message; false when it is over the slot's rate for this second. */
  message(slot: number, nowMs: number): boolean {
    const b = HEADER + slot * FIELDS;
    Atomics.add(this.a, b + MESSAGES, 1);
    const max = Atomics.load(this.a, b + MAX_RATE);
    const second = Math.floor(nowMs / 1000) | 0;
    const seen = Atomics.load(this.a, b + RATE_SECOND);
    // The first message of a new second restarts the count (whichever thread wins the swap).
    if (seen !== second && Atomics.compareExchange(this.a, b + RATE_SECOND, seen, second) === seen) Atomics.store(this.a, b + RATE_COUNT, 0);
    const n = Atomics.add(this.a, b + RATE_COUNT, 1);
    return max < 0 || n < max;
  }

  count(slot: number, what: 'denied' | 'throttled' | 'quotaRefused'): void {
    Atomics.add(this.a, HEADER + slot * FIELDS + (what === 'denied' ? DENIED : what === 'throttled' ? THROTTLED : QUOTA_REFUSED), 1);
  }
}
