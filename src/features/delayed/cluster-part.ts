// DelayedPart: delayed publish's part of the cluster link (main thread), used with the shared SQL
// stores. Each node keeps an index of every delayed message of the store; a node tells the others
// on `spindle.delayed.changes` of the messages it stored (put) and of those it fired or cancelled
// (del), once per tick, so the node holding the run lease `delayed` fires what any node accepted.
// Core NATS: a change missed while disconnected is caught by the firing node's re-reads of the
// store (when it takes the lease, and every RECONCILE_MS).
import type { ClusterPart, ClusterPartContext } from '../../cluster/part.ts';
import type { DelayedDoc } from './types.ts';

const SUBJECT = 'spindle.delayed.changes';
/** A post is cut at about this many bytes (NATS' default payload limit is 1 MiB). */
const MAX_POST_BYTES = 512 * 1024;

interface Changes {
  node: string;
  put: { id: string; doc: DelayedDoc }[];
  del: string[];
}

export interface DelayedPartHost {
  applyRemote(id: string, doc: DelayedDoc | null): void;
}

export class DelayedPart implements ClusterPart {
  readonly name = 'delayed';
  readonly counters = { sent: 0, received: 0, badMessages: 0 };
  private ctx: ClusterPartContext | null = null;
  private put: { id: string; doc: DelayedDoc }[] = [];
  private del: string[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(private readonly host: DelayedPartHost) {}

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    ctx.nc.subscribe(SUBJECT, { callback: (err, m) => {
      if (err) return;
      let changes: Changes;
      try {
        changes = m.json<Changes>();
      } catch {
        this.counters.badMessages++;
        return;
      }
      if (changes.node === ctx.nodeName) return;
      this.counters.received++;
      for (const { id, doc } of changes.put) this.host.applyRemote(id, doc);
      for (const id of changes.del) this.host.applyRemote(id, null);
    } });
  }

  stored(id: string, doc: DelayedDoc): void {
    if (this.ctx === null) return;
    this.put.push({ id, doc });
    this.bytes += doc.payload.length + (doc.props?.length ?? 0) + 300;
    this.schedule();
  }

  removed(id: string): void {
    if (this.ctx === null) return;
    this.del.push(id);
    this.bytes += 40;
    this.schedule();
  }

  private schedule(): void {
    if (this.bytes >= MAX_POST_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.ctx === null || (this.put.length === 0 && this.del.length === 0)) return;
    const changes: Changes = { node: this.ctx.nodeName, put: this.put, del: this.del };
    this.put = [];
    this.del = [];
    this.bytes = 0;
    try {
      this.ctx.nc.publish(SUBJECT, JSON.stringify(changes));
      this.counters.sent++;
    } catch (err) {
      this.ctx.log.warn('delayed message changes not sent to the other nodes', { err });
    }
  }

  close(): void {
    this.flush();
    this.ctx = null;
  }
}
