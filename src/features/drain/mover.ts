// Mover: one run of moving clients away from this node at a rate (a drain or a rebalance), over
// the worker threads, and the wait for their persistent sessions to be claimed by the nodes they
// reconnect to. Owns the run's figures (the DrainStatus it updates) until the run ends; main thread.
import type { FeatureWorkers } from '../feature.ts';
import type { DrainStatus, Target } from './types.ts';

/** The run's clock: every TICK_MS it moves what the rate allows since the last tick. */
const TICK_MS = 100;

export interface MoveJob {
  /** Clients to move at most (a drain: every one). */
  limit: number;
  rate: number;
  /** Targets for the next `n` clients (null: no server to name). */
  pick(n: number): (Target | null)[];
  /** The first `n` of the last pick were used. */
  used(targets: readonly (Target | null)[]): void;
  /** How long a moved session may wait to be claimed (ms). */
  handoverTimeoutMs: number;
  /** Counted as each client moves, and as each moved session is claimed or not. */
  onMoved(n: number): void;
  onHandover(claimed: number, timedOut: number): void;
  /** Once every client moved and every session was claimed: whether the run may end now (asked
   * again at the next tick when not). */
  settled?(): Promise<boolean>;
}

export class Mover {
  private cancelled = false;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly workers: FeatureWorkers, private readonly status: DrainStatus) {}

  /** Stops the run at its next tick (clients moved stay moved). */
  cancel(): void {
    this.cancelled = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
  }

  /** Runs until `limit` clients moved (or none is connected here) and every moved session was
   * claimed or timed out; or until cancelled. Answers whether it ran to its end. */
  async run(job: MoveJob): Promise<boolean> {
    const st = this.status;
    const awaiting = new Map<string, number>();
    let budget = 1;
    let last = Date.now();
    for (;;) {
      if (this.cancelled) return false;
      const now = Date.now();
      // At most two ticks' worth at once: a slow tick does not turn into a burst.
      budget = Math.min(budget + ((now - last) * job.rate) / 1000, Math.max(1, (job.rate * TICK_MS * 2) / 1000));
      last = now;
      let want = Math.min(Math.floor(budget), job.limit - st.moved);
      let connected = 0;
      for (const w of this.workers.running()) {
        const targets = want > 0 ? job.pick(want) : [];
        let r;
        try {
          r = await this.workers.call(w, 'drain.move', { references: targets.map((t) => t?.address ?? null) });
        } catch {
          continue; // a worker restarting: its clients are gone with it; the next tick asks again
        }
        const used = targets.slice(0, r.moved.length);
        job.used(used);
        for (let i = 0; i < r.moved.length; i++) {
          const t = used[i];
          const row = st.targets.find((x) => x.node === (t?.node ?? null) && x.address === (t?.address ?? null));
          if (row) row.moved++;
          else st.targets.push({ node: t?.node ?? null, address: t?.address ?? null, moved: 1 });
          if (r.moved[i].persistent) awaiting.set(r.moved[i].clientId, now + job.handoverTimeoutMs);
        }
        st.moved += r.moved.length;
        budget -= r.moved.length;
        want -= r.moved.length;
        job.onMoved(r.moved.length);
        connected += r.connected;
      }
      if (awaiting.size > 0) await this.settleHandovers(awaiting, job);
      st.remaining = Math.max(0, Math.min(connected, job.limit - st.moved));
      st.awaitingHandover = awaiting.size;
      if (st.remaining === 0 && awaiting.size === 0 && (await job.settled?.().catch(() => false)) !== false) return true;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, TICK_MS);
      });
    }
  }

  /** Moved sessions no worker holds any more were claimed by another node; those past their
   * deadline stay here (counted). */
  private async settleHandovers(awaiting: Map<string, number>, job: MoveJob): Promise<void> {
    const ids = [...awaiting.keys()];
    const held = new Set<string>();
    try {
      for (const list of await this.workers.callAll('drain.held', { clientIds: ids })) for (const id of list) held.add(id);
    } catch {
      return; // asked again at the next tick
    }
    const now = Date.now();
    let claimed = 0;
    let timedOut = 0;
    for (const id of ids) {
      if (!held.has(id)) {
        awaiting.delete(id);
        claimed++;
      } else if (awaiting.get(id)! < now) {
        awaiting.delete(id);
        timedOut++;
      }
    }
    this.status.handedOver += claimed;
    this.status.handoverTimeouts += timedOut;
    if (claimed + timedOut > 0) job.onHandover(claimed, timedOut);
  }
}
