// The main thread's handle on the store (null with MEMORY): opened before the workers start, it
// puts the retained messages back into the routing core and answers the stored sessions, sweeps
// expired data while the broker runs, and in a cluster whose nodes share a database moves the
// sessions of a node that went down to this one. Owns that handle and the sweep timer.
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { RetainedStore, ClientRegistry } from '../native/index.ts';
import { createStore } from '../store/index.ts';
import type { Store, StoredSession } from '../store/types.ts';
import { MAX_NODE_SLOTS } from '../store/message-id.ts';
import { toRecord } from '../broker/message.ts';

const SWEEP_INTERVAL_MS = 60_000;

export class NodeStore {
  private handle: Store | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private slotOfNode = 0;

  constructor(
    private readonly config: BrokerConfig,
    private readonly log: Logger,
    private readonly retained: InstanceType<typeof RetainedStore>,
    private readonly registry: InstanceType<typeof ClientRegistry>,
  ) {}

  /** The opened store (null with MEMORY, where the broker keeps nothing). */
  get store(): Store | null {
    return this.handle;
  }

  /** This node's slot in a store the cluster's nodes share (0: a store of its own). */
  get nodeSlot(): number {
    return this.slotOfNode;
  }

  /** Opens the store, puts the retained messages back into the shared retained store, starts
   * the expiry sweep, and answers the stored sessions of this node. */
  async open(): Promise<StoredSession[]> {
    if (this.config.store.storeType === 'MEMORY') return [];
    const store = await createStore(this.config);
    await store.open();
    this.handle = store;
    const now = Date.now();
    for (const r of await store.loadRetained()) {
      const m = r.message;
      if (m.expiresAt !== 0 && m.expiresAt <= now) continue;
      this.retained.set(r.topic, toRecord({ topic: m.topic, topicBytes: Buffer.from(m.topic), payload: m.payload, qos: m.qos, retain: true, props: m.properties, expiresAt: m.expiresAt, receivedAt: storedAt(m.id, now), storeId: m.id }));
    }
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
    let sessions = await store.loadSessions();
    // Nodes of a cluster may share one database: each restores its own sessions only (those of a
    // node that went down are adopted by another: adoptable()).
    if (this.config.cluster.enabled && sharedStore(store)) {
      sessions = sessions.filter((s) => s.node === undefined || s.node === this.config.nodeName);
      // Its slot makes the message ids this node stores unique among the nodes sharing the store.
      if (store.claimNodeSlot) this.slotOfNode = await store.claimNodeSlot(this.config.nodeName, MAX_NODE_SLOTS);
      this.log.info('node slot in the shared store', { slot: this.slotOfNode });
    }
    this.log.info('store opened', { type: store.kind, sessions: sessions.length, retained: this.retained.size });
    return sessions;
  }

  /** Expired messages and sessions leave the store while the broker runs. */
  private async sweep(): Promise<void> {
    try {
      const removed = await this.handle!.deleteExpired(Date.now());
      if (removed.sessions.length || removed.messages) this.log.info('expired data removed', { sessions: removed.sessions.length, messages: removed.messages });
    } catch (err) {
      this.log.error('expiry sweep failed', { err });
    }
  }

  /**
   * The sessions another node of the cluster held in the database this node shares with it, once
   * that node went down, moved to this node in the store one at a time (a client that reconnected
   * meanwhile on another node has taken its own, and is left alone); answers them.
   */
  async adoptable(node: string): Promise<StoredSession[]> {
    const store = this.handle;
    if (!store || !sharedStore(store) || !store.takeSessions) return [];
    const taken = new Set(await store.takeSessions(node, this.config.nodeName));
    if (taken.size === 0) return [];
    return (await store.loadSessions()).filter((s) => taken.has(s.clientId));
  }

  /** Moves the stored sessions of these claims from node `from` (which went down) to this node;
   * those of Clean Start claims end. Answers the client ids of the resumed ones moved (none
   * without a store the nodes share). */
  async takeStoredSessions(claims: readonly { clientId: string; resume: boolean }[], from: string): Promise<string[]> {
    const store = this.handle;
    if (!store || !sharedStore(store) || !store.takeSessions || claims.length === 0) return [];
    const taken = new Set(await store.takeSessions(from, this.config.nodeName, claims.map((c) => c.clientId)));
    const resumed: string[] = [];
    for (const c of claims) {
      if (!taken.has(c.clientId)) continue;
      // Clean Start: the session ends [MQTT-3.1.2-4].
      if (c.resume) resumed.push(c.clientId);
      else await store.deleteSession(c.clientId);
    }
    return resumed;
  }

  /** The stored sessions a dead worker owned, for its replacement to restore. */
  async orphanedSessions(worker: number): Promise<StoredSession[]> {
    if (!this.handle) return [];
    const all = await this.handle.loadSessions();
    return all.filter((s) => this.registry.lookup(s.clientId)?.[1] === worker);
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.handle) await this.handle.close().catch((err: unknown) => this.log.error('store close failed', { err }));
  }
}

/** When a stored message was stored: its id starts with the milliseconds (store/persistence.ts). */
function storedAt(id: bigint, now: number): number {
  const ms = Number(id >> 22n);
  return ms > 946_684_800_000 && ms <= now ? ms : now;
}

/** A store other nodes may use too (a database server), unlike LOCAL's files. */
function sharedStore(store: Store): boolean {
  return store.kind === 'POSTGRESQL' || store.kind === 'MYSQL';
}
