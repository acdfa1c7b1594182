// Leases (main thread), a part of the ClusterLink: objects that must run on one node of the
// cluster at a time (a command consuming from Kafka or RabbitMQ would bring each record in once
// per node) run where their lease is held.
// - The leases are keys of the JetStream KV bucket `spindle-leases` (key: the object's key as a
//   token, value: the holder's node name), whose entries expire TTL_MS after their last write.
// - A node that wants an object tries to create its key every RENEW_MS; the one that succeeds
//   holds it and runs the object, renewing the key every RENEW_MS (an update on the revision it
//   last wrote: it fails once another node has the key).
// - A holder that could not renew for LOSE_MS (NATS lost, or another node took the key) stops
//   the object, before the key expires and another node may take it. A node that stops wanting it
//   (disabled, removed, shutting down) stops it and deletes its key, so another takes over at once.
// - The others wait and take over within TTL_MS of the holder's last renewal when it dies.
import { Kvm, type KV } from '@nats-io/kv';

import type { Logger } from '../log/index.ts';
import { token } from './names.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';
import type { RunLeases } from './run-leases.ts';

export const LEASE_BUCKET = 'spindle-leases';
const TTL_MS = 10_000;
const RENEW_MS = 2000;
/** Well before TTL_MS: a holder that lost NATS stops before anyone else can start. */
const LOSE_MS = 6000;

/** What runs under a lease: started when this node gets it, stopped when it loses it. */
export interface LeaseHolder {
  granted(): void;
  lost(): void;
}

interface Wanted {
  holder: LeaseHolder;
  held: boolean;
  revision: number;
  /** When this node last wrote the key (held). */
  renewedAt: number;
  /** The node that holds it, as last read (null: unknown or nobody). */
  owner: string | null;
}

export interface LeaseCounters {
  granted: number;
  lost: number;
  released: number;
}

export class Leases implements ClusterPart, RunLeases {
  readonly name = 'leases';
  readonly counters: LeaseCounters = { granted: 0, lost: 0, released: 0 };
  private kv: KV | null = null;
  private nodeName = '';
  private log: Logger;
  private readonly wanted = new Map<string, Wanted>();
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(log: Logger) {
    this.log = log;
  }

  async start(ctx: ClusterPartContext): Promise<void> {
    this.log = ctx.log.named('leases');
    this.nodeName = ctx.nodeName;
    const kvm = new Kvm(ctx.nc);
    const options = { history: 1, ttl: TTL_MS };
    try {
      this.kv = await kvm.create(LEASE_BUCKET, { ...options, replicas: Math.min(3, ctx.runningPeers().length + 1) });
    } catch {
      this.kv = await kvm.create(LEASE_BUCKET, options);
    }
    this.timer = setInterval(() => this.tick(), RENEW_MS);
    this.tick();
  }

  /** Runs `holder` on whichever node holds `key` (this one, once it gets it). */
  want(key: string, holder: LeaseHolder): void {
    if (this.wanted.has(key)) return;
    this.wanted.set(key, { holder, held: false, revision: 0, renewedAt: 0, owner: null });
    this.tick();
  }

  /** No longer wanted here: stopped by the caller; the lease is given up at once if held. */
  async release(key: string): Promise<void> {
    const w = this.wanted.get(key);
    if (!w) return;
    this.wanted.delete(key);
    if (w.held && this.kv) {
      this.counters.released++;
      await this.kv.delete(token(key), { previousSeq: w.revision }).catch(() => undefined);
    }
  }

  /** The node that runs `key`, as last seen (null: nobody known). */
  owner(key: string): string | null {
    const w = this.wanted.get(key);
    if (!w) return null;
    return w.held ? this.nodeName : w.owner;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.round;
    // Keys still held are given up by their owners' release (at their stop), else they expire.
  }

  private tick(): void {
    if (!this.kv || this.closed) return;
    this.round = this.round.then(() => this.renewAll()).catch((err: unknown) => this.log.warn('lease round failed', { err }));
  }

  private async renewAll(): Promise<void> {
    const kv = this.kv!;
    for (const [key, w] of this.wanted) {
      const k = token(key);
      if (w.held) {
        try {
          w.revision = await kv.update(k, this.nodeName, w.revision);
          w.renewedAt = Date.now();
        } catch (err) {
          const taken = /wrong last sequence|key exists|10071/i.test(String((err as Error).message));
          if (taken || Date.now() - w.renewedAt > LOSE_MS) this.lose(key, w, err);
        }
        continue;
      }
      try {
        w.revision = await kv.create(k, this.nodeName);
        w.held = true;
        w.renewedAt = Date.now();
        w.owner = this.nodeName;
        this.counters.granted++;
        this.log.info('lease granted: runs on this node', { key });
        if (this.wanted.get(key) === w) w.holder.granted();
      } catch {
        const e = await kv.get(k).catch(() => null);
        w.owner = e && e.operation === 'PUT' ? e.string() : null;
      }
    }
  }

  private lose(key: string, w: Wanted, err: unknown): void {
    w.held = false;
    w.owner = null;
    this.counters.lost++;
    this.log.warn('lease lost: stopped on this node', { key, err: (err as Error).message });
    w.holder.lost();
  }
}
