// HandoverFences: one publisher's messages keep their order [MQTT-4.6.0-6] when the session they
// go to moves from worker X to worker Y. A worker W that routed a message to the session just
// before the move sent it to X, which forwards it to Y; a message W routes just after the move
// goes to Y at once, and could arrive first. So Y, once the session is here, holds what any worker
// but X routes to it until that worker has confirmed that its messages for X have been forwarded:
//   Y asks W ('fence'); W sends what it has batched (once the messages it routed before and whose
//   delivery waits for a store write are delivered), then asks X ('fence-relay'); X has then
//   received all of it (ports keep their order), forwards what it holds, and answers Y
//   ('fence-done') after it. Y relays for itself the same way.
// What X sends Y needs no holding: X's own messages and the forwarded ones come in order on the
// same port. A fence lasts one or two port round trips. It is cut, and what it held delivered,
// after FENCE_MS, when it holds a session queue's worth of messages, or when the session leaves or
// ends here. Owned by the worker thread.
import type { Delivery } from '../../router/delivery.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { FenceMessage } from './handover.ts';

/** What the fences need from their worker thread. */
export interface FenceEnv {
  readonly workerId: number;
  readonly stats: WorkerStats;
  /** Deliveries held at most per fence (a session's queue bound). */
  readonly maxHeld: number;
  /** The other workers running now. */
  peers(): readonly number[];
  sendControl(worker: number, msg: FenceMessage): void;
  /** Sends what this worker has batched for other workers now. */
  flush(): void;
  /** Calls `done` once what this worker routed to other workers before now, waiting for a store
   * write, has been delivered (WorkerRouter.afterDeferred). */
  afterDeferred(done: () => void): void;
  /** Delivers what a fence held to the session `handle` of this thread, in order. */
  release(handle: number, held: Delivery[]): void;
}

interface Fence {
  readonly id: number;
  readonly handle: number;
  /** The session's old worker: what comes from it is not held. */
  readonly via: number;
  /** The workers not yet confirmed. */
  readonly pending: Set<number>;
  readonly held: Delivery[];
  readonly timer: NodeJS.Timeout;
}

/** A fence not complete within this long is cut (a worker too busy to answer). */
const FENCE_MS = 1000;

export class HandoverFences {
  private readonly byHandle = new Map<number, Fence>();
  private readonly byId = new Map<number, Fence>();
  private nextId = 1;

  constructor(private readonly env: FenceEnv) {}

  /** The session `handle` came here from worker `via` and is routed here now. */
  raise(handle: number, via: number): void {
    const env = this.env;
    this.lower(handle, false);
    const pending = new Set<number>([env.workerId]);
    for (const w of env.peers()) if (w !== via && w !== env.workerId) pending.add(w);
    const id = this.nextId++;
    const timer = setTimeout(() => {
      const f = this.byId.get(id);
      if (f) this.lower(f.handle, true);
    }, FENCE_MS);
    timer.unref();
    const fence: Fence = { id, handle, via, pending, held: [], timer };
    this.byHandle.set(handle, fence);
    this.byId.set(id, fence);
    // This worker's own messages for the old worker leave before the relay that follows them.
    this.relay(id, via, env.workerId);
    for (const w of pending) if (w !== env.workerId) env.sendControl(w, { t: 'fence', fence: id, via, to: env.workerId });
  }

  /** True when the delivery routed by worker `from` to `handle` is held by a fence. */
  hold(handle: number, d: Delivery, from: number): boolean {
    if (this.byHandle.size === 0) return false;
    const fence = this.byHandle.get(handle);
    if (fence === undefined || from === fence.via) return false;
    fence.held.push(d);
    if (fence.held.length >= this.env.maxHeld) this.lower(handle, true);
    return true;
  }

  /** Ends the fence of `handle`, if any, delivering what it held; `cut`: before it completed. */
  lower(handle: number, cut: boolean): void {
    const fence = this.byHandle.get(handle);
    if (fence === undefined) return;
    this.byHandle.delete(handle);
    this.byId.delete(fence.id);
    clearTimeout(fence.timer);
    if (cut) this.env.stats.handoverFencesCut++;
    if (fence.held.length > 0) this.env.release(handle, fence.held);
  }

  /** Worker `worker` is gone: it confirms nothing more, and forwards nothing more. */
  peerGone(worker: number): void {
    for (const fence of [...this.byHandle.values()]) {
      if (fence.via === worker) this.lower(fence.handle, false);
      else this.confirmed(fence, worker);
    }
  }

  onMessage(msg: FenceMessage): void {
    const env = this.env;
    switch (msg.t) {
      case 'fence':
        this.relay(msg.fence, msg.via, msg.to);
        return;
      case 'fence-relay':
        // Everything `worker` sent here before this has been routed on (forwarded included).
        env.flush();
        env.sendControl(msg.to, { t: 'fence-done', fence: msg.fence, worker: msg.worker });
        return;
      case 'fence-done': {
        const fence = this.byId.get(msg.fence);
        if (fence) this.confirmed(fence, msg.worker);
        return;
      }
    }
  }

  /** Once this worker's messages for the old worker `via` have left (those routed before now and
   * still waiting for a store write included), asks it to confirm them to `to`. */
  private relay(fence: number, via: number, to: number): void {
    const env = this.env;
    env.afterDeferred(() => {
      env.flush();
      env.sendControl(via, { t: 'fence-relay', fence, to, worker: env.workerId });
    });
  }

  private confirmed(fence: Fence, worker: number): void {
    fence.pending.delete(worker);
    if (fence.pending.size === 0) this.lower(fence.handle, false);
  }
}
