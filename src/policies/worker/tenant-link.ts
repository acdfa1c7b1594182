// Owns one tenant client's place in the shared tenant counters (src/broker/tenant-counters.ts):
// the connection it holds in its application's and organization's quota, and the counting of its
// messages against their rates. Made in a worker from the plain TenantRef of an auth answer. A
// slot given to another tenant since (its epoch moved on) is neither counted nor released into.
import type { TenantLink } from '../../auth/types.ts';
import type { TenantCounters, TenantRef } from '../../broker/tenant-counters.ts';

export class SharedTenantLink implements TenantLink {
  private held = false;

  constructor(private readonly counters: TenantCounters, private readonly ref: TenantRef, private readonly worker: number) {}

  get applicationId(): string {
    return this.ref.applicationId;
  }

  get organizationId(): string {
    return this.ref.organizationId;
  }

  connect(): boolean {
    const { appSlot, orgSlot, appEpoch, orgEpoch } = this.ref;
    const c = this.counters;
    if (!c.current(appSlot, appEpoch) || !c.current(orgSlot, orgEpoch)) return false;
    if (!c.tryConnection(orgSlot, this.worker)) {
      c.count(orgSlot, 'quotaRefused');
      c.count(appSlot, 'quotaRefused');
      return false;
    }
    if (!c.tryConnection(appSlot, this.worker)) {
      c.releaseConnection(orgSlot, this.worker);
      c.count(appSlot, 'quotaRefused');
      c.count(orgSlot, 'quotaRefused');
      return false;
    }
    this.held = true;
    return true;
  }

  release(): void {
    if (!this.held) return;
    this.held = false;
    const { appSlot, orgSlot, appEpoch, orgEpoch } = this.ref;
    const c = this.counters;
    if (c.current(appSlot, appEpoch)) c.releaseConnection(appSlot, this.worker);
    if (c.current(orgSlot, orgEpoch)) c.releaseConnection(orgSlot, this.worker);
  }

  message(nowMs: number): boolean {
    const { appSlot, orgSlot, appEpoch, orgEpoch } = this.ref;
    const c = this.counters;
    // Both are counted (each slot reports its own traffic), whichever is over.
    const app = c.current(appSlot, appEpoch) ? c.message(appSlot, nowMs) : true;
    const org = c.current(orgSlot, orgEpoch) ? c.message(orgSlot, nowMs) : true;
    if (app && org) return true;
    if (c.current(appSlot, appEpoch)) c.count(appSlot, 'throttled');
    if (c.current(orgSlot, orgEpoch)) c.count(orgSlot, 'throttled');
    return false;
  }

  denied(): void {
    const { appSlot, orgSlot, appEpoch, orgEpoch } = this.ref;
    const c = this.counters;
    if (c.current(appSlot, appEpoch)) c.count(appSlot, 'denied');
    if (c.current(orgSlot, orgEpoch)) c.count(orgSlot, 'denied');
  }
}
