// The ban list and flapping detection in one worker thread: the CONNECT handler asks it before
// authentication (the engine's ConnectGate). The bans come from the main thread as worker
// operations (add, remove, clear: a change costs its own entries, not a copy of the list); the
// shared counters (refusals by kind, and the flapping table) come once as the 'bans' worker
// state. With no ban held and flapping off, `active` is false and a CONNECT asks nothing.
import type { Logger } from '../../log/index.ts';
import { EV, type EngineEvents } from '../../engine/session/events.ts';
import { BanTable } from './ban-table.ts';
import { FlappingTable, type FlappingLimits } from './flapping-table.ts';
import type { BanAs, BanSpec } from './types.ts';

/** Words of the shared counters buffer: refusals by what matched. */
export const REFUSED_WORDS: Record<'clientid' | 'username' | 'peerhost', number> = { clientid: 0, username: 1, peerhost: 2 };
const COUNTER_WORDS = 4;

export function createBanCounters(): SharedArrayBuffer {
  return new SharedArrayBuffer(COUNTER_WORDS * 4);
}

/** What every worker holds of the feature's shared state (WorkerStates 'bans'). */
export interface BanWorkerState {
  /** Refusals by kind, counted by every worker (REFUSED_WORDS). */
  counters: SharedArrayBuffer;
  /** Flapping detection: its limits and the node's shared table; null when off. */
  flapping: { limits: FlappingLimits; table: SharedArrayBuffer } | null;
}

/** A connection as a ban sees it (kicking the ones connected when a ban is made). */
export interface Bannable {
  readonly clientId: string;
  readonly username: string | undefined;
  readonly remoteAddress: string;
}

/** Client ids found flapping and not yet taken by the main thread (bounded; the main thread
 * takes them within its poll interval). */
const MAX_FLAGGED = 1024;

export class WorkerBans {
  private readonly table = new BanTable();
  private counters: Int32Array | null = null;
  private flapping: FlappingTable | null = null;
  private flagged: string[] = [];
  /** Whether a CONNECT must ask (a ban is held, or flapping is on). */
  active = false;

  constructor(
    private readonly log: Logger,
    /** The rule engine's events: $EVENT.FLAPPING. */
    private readonly events: EngineEvents,
  ) {}

  setState(state: BanWorkerState): void {
    this.counters = new Int32Array(state.counters);
    this.flapping = state.flapping ? new FlappingTable(state.flapping.table, state.flapping.limits) : null;
    this.update();
  }

  /** Replaces every ban (a worker that starts). */
  load(specs: readonly BanSpec[]): void {
    this.table.clear();
    this.table.add(specs);
    this.update();
  }

  /** Adds bans; answers the connections among `connected` they name, for the caller to kick. */
  add<C extends Bannable>(specs: readonly BanSpec[], connected: Iterable<C>): C[] {
    this.table.add(specs);
    this.update();
    const fresh = new BanTable();
    fresh.add(specs);
    const now = Date.now();
    const named: C[] = [];
    for (const c of connected) {
      if (fresh.check(c.clientId, c.username, c, now) !== null) named.push(c);
    }
    return named;
  }

  remove(bans: readonly { as: BanAs; who: string }[]): void {
    this.table.remove(bans);
    this.update();
  }

  clear(): void {
    this.table.clear();
    this.update();
  }

  get size(): number {
    return this.table.size;
  }

  /**
   * A CONNECT (before authentication): the kind of ban that refuses it, or null. A client let
   * in counts towards flapping; one that goes past the limit is kept for the main thread, which
   * bans it (a normal ban, on every worker and node).
   */
  refuses(clientId: string, username: string | undefined, peer: { readonly remoteAddress: string }): string | null {
    const kind = this.table.size > 0 ? this.table.check(clientId, username, peer) : null;
    if (kind !== null) {
      if (this.counters) Atomics.add(this.counters, REFUSED_WORDS[kind as keyof typeof REFUSED_WORDS], 1);
      return kind;
    }
    if (this.flapping !== null && this.flapping.connected(clientId)) {
      if (this.flagged.length < MAX_FLAGGED && !this.flagged.includes(clientId)) this.flagged.push(clientId);
      this.log.warn('client id found flapping', { clientId });
      if (this.events.wants[EV.FLAPPING]) {
        const { maxCount, windowSeconds } = this.flapping.limits;
        this.events.emit('FLAPPING', { clientid: clientId, username: username ?? null, peerhost: peer.remoteAddress, max_count: maxCount, window: windowSeconds, timestamp: Date.now() });
      }
    }
    return null;
  }

  /** The client ids found flapping since the last call. */
  takeFlagged(): string[] {
    const out = this.flagged;
    this.flagged = [];
    return out;
  }

  private update(): void {
    this.active = this.table.size > 0 || this.flapping !== null;
  }
}
