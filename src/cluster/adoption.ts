// Sessions of a node that went down (main thread): with a database the nodes share (POSTGRESQL,
// MYSQL), one running node (the first by name, so exactly one when the nodes agree on who runs)
// restores them, offline, so their subscriptions keep receiving and their clients find them
// wherever they reconnect (a claim moves them on from here). With LOCAL files the sessions stay
// with the node that went down, until it comes back.
import type { ClusterPart, ClusterPartContext } from './part.ts';

export interface AdoptionHost {
  adoptSessions(node: string): Promise<number>;
}

export class SessionAdoption implements ClusterPart {
  private ctx: ClusterPartContext | null = null;
  /** Sessions adopted from nodes that went down. */
  adopted = 0;
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: AdoptionHost) {}

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
  }

  peerDown(node: string): void {
    const ctx = this.ctx;
    if (!ctx) return;
    const first = [ctx.nodeName, ...ctx.runningPeers()].sort()[0];
    if (first !== ctx.nodeName) return;
    const done = this.host.adoptSessions(node).then(
      (count) => {
        this.adopted += count;
        if (count > 0) ctx.log.info('cluster: sessions of a node that went down continue here', { node, count });
      },
      (err: unknown) => ctx.log.error('cluster: the sessions of a node that went down could not be adopted', { node, err }),
    );
    this.running = Promise.all([this.running, done]);
  }

  /** Resolves once the adoptions started so far have ended (claims wait for it: a session being
   * adopted here is given up, or taken, only once it is here). */
  settled(): Promise<unknown> {
    return this.running;
  }
}
