// Owns which slot of the shared tenant counters each organization and application counts in
// (main thread). A slot freed by a deletion is given out again with a new epoch, so a connection
// of the old tenant neither counts in nor releases into the new one.
import type { TenantCounters } from '../broker/tenant-counters.ts';
import { PlatformError } from './errors.ts';

export interface Slot {
  slot: number;
  epoch: number;
}

export class TenantSlots {
  private readonly byId = new Map<string, Slot>();
  private readonly free: number[] = [];
  private next = 0;

  constructor(readonly counters: TenantCounters) {}

  get capacity(): number {
    return this.counters.slots;
  }

  get used(): number {
    return this.byId.size;
  }

  of(id: string): Slot | undefined {
    return this.byId.get(id);
  }

  /** A slot for `id` (its own when it has one); 409 when every slot is taken (platform.maxTenants). */
  take(id: string): Slot {
    const had = this.byId.get(id);
    if (had) return had;
    const slot = this.free.pop() ?? (this.next < this.counters.slots ? this.next++ : -1);
    if (slot < 0) throw new PlatformError(409, `every one of the ${this.counters.slots} tenant slots is in use (platform.maxTenants counts organizations and applications)`, 'platform.maxTenants');
    const s = { slot, epoch: this.counters.claim(slot, null, null) };
    this.byId.set(id, s);
    return s;
  }

  release(id: string): void {
    const s = this.byId.get(id);
    if (!s) return;
    this.byId.delete(id);
    this.counters.retire(s.slot);
    this.free.push(s.slot);
  }
}
