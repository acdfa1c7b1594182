// Sessions of a node that went down (main thread): with a database the nodes share (POSTGRESQL,
// MYSQL), one running node (the first by name, so exactly one when the nodes agree on who runs)
// restores them, offline, so their subscriptions keep receiving and their clients find them
// wherever they reconnect (a claim moves them on from here). With LOCAL files the sessions stay
// with the node that went down, until it comes back. Once they are here, the QoS 1/2 frames the
// stream holds for the node that went down (sent before the others marked it down) are taken
// and routed here, to the adopted sessions only (QosStream.takeOver).
import type { ClusterPart, ClusterPartContext } from './part.ts';

export interface AdoptionHost {
  /** Answers the client ids of the sessions adopted. */
  adoptSessions(node: string): Promise<string[]>;
}

export class SessionAdoption implements ClusterPart {
  private ctx: ClusterPartContext | null = null;
  /** Sessions adopted from nodes that went down. */
  adopted = 0;
  private running: Promise<unknown> = Promise.resolve();

  /** `adopted(node, clientIds)`: told once the sessions of `node` are here (not when none were). */
  constructor(private readonly host: AdoptionHost, private readonly onAdopted: (node: string, clientIds: string[]) => Promise<unknown> = async () => undefined) {}

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
  }

  peerDown(node: string): void {
    const ctx = this.ctx;
    if (!ctx) return;
    const first = [ctx.nodeName, ...ctx.runningPeers()].sort()[0];
    if (first !== ctx.nodeName) return;
    const done = this.host.adoptSessions(node).then(
      (clientIds) => {
        const count = clientIds.length;
        this.adopted += count;
        if (count === 0) return;
        ctx.log.info('cluster: sessions of a node that went down continue here', { node, count });
        // Not waited for by claims: a claim of an adopted session moves it on, and what is taken
        // for it afterwards is forwarded to where it went.
        this.onAdopted(node, clientIds).catch((err: unknown) => ctx.log.error('cluster: the QoS 1/2 messages of a node that went down were not taken', { node, err }));
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
