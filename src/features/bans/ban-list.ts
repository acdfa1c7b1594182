// The ban list, the main thread's half: bans kept in the store (admin kind 'ban', id
// `<as>:<who>`), replicated across a cluster (each node applies another's ban like its own:
// installed on its workers, kicking who it names), installed on every worker (incrementally:
// a change sends its own entries; a worker that starts gets the whole list), bounded
// (banned.maxEntries), and swept of expired entries every banned.sweepInterval seconds.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import type { FeatureWorkers } from '../feature.ts';
import { canonical, parseBlock } from './address-trie.ts';
import { BanError } from './errors.ts';
import { BAN_KINDS, banId, type BanAs, type BanDoc, type BanSpec } from './types.ts';
import { REFUSED_WORDS } from './worker-bans.ts';

export const BAN_KIND = 'ban';
/** The last instant an RFC 3339 date-time can name (9999-12-31T23:59:59Z), in ms. */
const MAX_UNTIL = 253_402_300_799_000;

/** A ban as the API or flapping detection asks for it. */
export interface BanInput {
  as: string;
  who: string;
  by: string;
  reason?: string;
  /** When it ends: RFC 3339 text, or seconds since the epoch; absent or null: never. */
  until?: string | number | null;
}

export interface BanListOptions {
  maxEntries: number;
  sweepSeconds: number;
}

interface Held {
  doc: BanDoc;
  /** ms since the epoch; 0: never. */
  until: number;
}

export interface BanMetrics {
  kicked: Counter;
  expired: Counter;
  refusedAdds: Counter;
}

export class BanList {
  private readonly held = new Map<string, Held>();
  /** The list newest first, kept until the next change (a console polls it). */
  private sorted: BanDoc[] | null = null;
  private readonly timer: NodeJS.Timeout;
  readonly metrics: BanMetrics;
  /** Changes run one at a time (a bulk add, a clear, a sweep, a change from another node), so a
   * worker sees them in the order the list made them. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly workers: FeatureWorkers,
    private readonly log: Logger,
    registry: Registry,
    private readonly options: BanListOptions,
    /** Refusals by kind, counted by every worker (REFUSED_WORDS). */
    counters: SharedArrayBuffer,
  ) {
    const words = new Int32Array(counters);
    const held = this.held;
    new Counter({
      name: 'spindle_banned_refused_total',
      help: 'CONNECTs refused (0x8A Banned; 5 in MQTT 3.1.1) because a ban named them, by what matched: clientid, username, peerhost (an address or block).',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [kind, word] of Object.entries(REFUSED_WORDS)) this.inc({ kind }, Atomics.load(words, word));
      },
    });
    new Gauge({
      name: 'spindle_banned_entries',
      help: 'Bans held, by kind (clientid, username, peerhost, peerhost_net); expired ones until swept.',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        const n: Record<string, number> = { clientid: 0, username: 0, peerhost: 0, peerhost_net: 0 };
        for (const h of held.values()) n[h.doc.as]++;
        for (const [kind, v] of Object.entries(n)) this.set({ kind }, v);
      },
    });
    this.metrics = {
      kicked: new Counter({ name: 'spindle_banned_kicked_total', help: 'Connected clients disconnected because a ban made after they connected named them (v5: DISCONNECT 0x8A).', registers: [registry] }),
      expired: new Counter({ name: 'spindle_banned_expired_total', help: 'Bans removed by the sweep because their expiry passed.', registers: [registry] }),
      refusedAdds: new Counter({ name: 'spindle_banned_refused_adds_total', help: 'Bans not made because the list holds banned.maxEntries.', registers: [registry] }),
    };
    workers.onWorkerStart((w) => workers.call(w, 'bans.load', { bans: this.specs() }));
    this.timer = setInterval(() => void this.sweep(), options.sweepSeconds * 1000).unref();
  }

  async load(): Promise<void> {
    const now = Date.now();
    for (const { id, doc } of await this.store.listAdmin<BanDoc>(BAN_KIND)) {
      const h = heldOf(doc);
      if (h === null || banId(h.doc.as, h.doc.who) !== id) {
        this.log.warn('stored ban is not one; skipped', { id });
        continue;
      }
      if (h.until !== 0 && h.until <= now) await this.store.deleteAdmin(BAN_KIND, id);
      else this.held.set(id, h);
      this.sorted = null;
    }
  }

  get size(): number {
    return this.held.size;
  }

  /** Bans, newest first; `as` filters by kind. */
  list(as?: BanAs): BanDoc[] {
    this.sorted ??= [...this.held.values()].map((h) => h.doc).sort((a, b) => b.at.localeCompare(a.at) || a.who.localeCompare(b.who));
    return as === undefined ? this.sorted : this.sorted.filter((d) => d.as === as);
  }

  get(as: string, who: string): BanDoc | undefined {
    const key = lookupKey(as, who);
    return key === null ? undefined : this.held.get(key)?.doc;
  }

  /** Makes a ban (replacing one of the same as and who); kicks the clients it names on every
   * worker. Answers the ban as stored. */
  async add(input: BanInput): Promise<BanDoc> {
    return (await this.addMany([input], null))[0];
  }

  /** Makes many bans at once (checked first: one bad entry refuses them all, naming its field
   * as `<prefix>[i].<field>`, or `<field>` with a null prefix); stored, then sent to the workers
   * in one operation each. */
  async addMany(inputs: readonly BanInput[], prefix: string | null = 'bans'): Promise<BanDoc[]> {
    const now = Date.now();
    const made: Held[] = inputs.map((input, i) => checked(input, now, prefix === null ? '' : `${prefix}[${i}].`));
    return this.serial(async () => {
      const fresh = new Set<string>();
      for (const h of made) {
        const id = banId(h.doc.as, h.doc.who);
        if (!this.held.has(id)) fresh.add(id);
      }
      if (this.held.size + fresh.size > this.options.maxEntries) {
        this.metrics.refusedAdds.inc(made.length);
        throw new BanError(409, prefix ?? 'who', `the ban list holds ${this.held.size} of at most ${this.options.maxEntries} bans (banned.maxEntries): ${fresh.size} more do not fit`);
      }
      await inChunks(made, (h) => this.store.putAdmin(BAN_KIND, banId(h.doc.as, h.doc.who), h.doc));
      for (const h of made) this.held.set(banId(h.doc.as, h.doc.who), h);
      this.sorted = null;
      await this.install(made.map(specOf));
      return made.map((h) => h.doc);
    });
  }

  async delete(as: string, who: string): Promise<BanDoc> {
    return this.serial(async () => {
      const key = lookupKey(as, who);
      const h = key === null ? undefined : this.held.get(key);
      if (key === null || h === undefined) throw new BanError(404, 'who', `no ban of ${as} ${who}`);
      await this.store.deleteAdmin(BAN_KIND, key);
      this.held.delete(key);
      this.sorted = null;
      await this.uninstall([h.doc]);
      return h.doc;
    });
  }

  /** Removes every ban; answers how many there were. */
  async clear(): Promise<number> {
    return this.serial(async () => {
      const ids = [...this.held.keys()];
      await inChunks(ids, (id) => this.store.deleteAdmin(BAN_KIND, id));
      this.held.clear();
      this.sorted = null;
      await Promise.all(this.workers.running().map((w) => this.workers.call(w, 'bans.clear').catch((err: unknown) => this.log.error('bans not cleared on a worker', { worker: w, err }))));
      return ids.length;
    });
  }

  /** A ban made or removed on another node (null: removed), already in the bucket: applied here
   * like this node's own, stored by the replication once applied. */
  async applyStored(id: string, doc: unknown): Promise<void> {
    return this.serial(async () => {
      if (doc === null) {
        const h = this.held.get(id);
        if (!h) return;
        this.held.delete(id);
        this.sorted = null;
        await this.uninstall([h.doc]);
        return;
      }
      const h = heldOf(doc);
      if (h === null || banId(h.doc.as, h.doc.who) !== id) throw new BanError(400, 'ban', `ban ${id} from another node is not a ban`);
      this.held.set(id, h);
      this.sorted = null;
      await this.install([specOf(h)]);
    });
  }

  /** Removes the bans whose expiry passed (they already refuse nobody). */
  async sweep(now = Date.now()): Promise<number> {
    return this.serial(async () => {
      const gone: Held[] = [];
      for (const h of this.held.values()) if (h.until !== 0 && h.until <= now) gone.push(h);
      if (gone.length === 0) return 0;
      for (const h of gone) this.held.delete(banId(h.doc.as, h.doc.who));
      this.sorted = null;
      await inChunks(gone, (h) => this.store.deleteAdmin(BAN_KIND, banId(h.doc.as, h.doc.who)).then(() => undefined));
      await this.uninstall(gone.map((h) => h.doc));
      this.metrics.expired.inc(gone.length);
      this.log.info('expired bans swept', { count: gone.length });
      return gone.length;
    }).catch((err: unknown) => {
      this.log.error('ban sweep failed', { err });
      return 0;
    });
  }

  close(): void {
    clearInterval(this.timer);
  }

  private specs(): BanSpec[] {
    return [...this.held.values()].map(specOf);
  }

  private async install(specs: BanSpec[]): Promise<void> {
    const kicked = await Promise.all(this.workers.running().map((w) => this.workers.call(w, 'bans.add', { bans: specs }).catch((err: unknown) => {
      this.log.error('bans not installed on a worker', { worker: w, err });
      return 0;
    })));
    const n = kicked.reduce((a, b) => a + b, 0);
    if (n > 0) {
      this.metrics.kicked.inc(n);
      this.log.info('banned clients disconnected', { count: n });
    }
  }

  private async uninstall(docs: BanDoc[]): Promise<void> {
    const bans = docs.map((d) => ({ as: d.as, who: d.who }));
    await Promise.all(this.workers.running().map((w) => this.workers.call(w, 'bans.remove', { bans }).catch((err: unknown) => this.log.error('bans not removed on a worker', { worker: w, err }))));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function specOf(h: Held): BanSpec {
  return { as: h.doc.as, who: h.doc.who, until: h.until };
}

/** Checks a ban asked for; `field` prefixes the field named in a refusal. */
function checked(input: BanInput, now: number, field: string): Held {
  if (!BAN_KINDS.includes(input.as as BanAs)) throw new BanError(400, `${field}as`, `${field}as: must be one of ${BAN_KINDS.join(', ')}`);
  const as = input.as as BanAs;
  const who = whoOf(as, input.who, field);
  let until = 0;
  if (input.until !== undefined && input.until !== null) {
    until = typeof input.until === 'number' ? input.until * 1000 : Date.parse(input.until);
    if (!Number.isFinite(until) || (typeof input.until === 'string' && !/^\d{4}-\d{2}-\d{2}T/.test(input.until))) throw new BanError(400, `${field}until`, `${field}until: must be an RFC 3339 date-time or seconds since the epoch`);
    if (until > MAX_UNTIL) throw new BanError(400, `${field}until`, `${field}until: after 9999-12-31 (seconds since the epoch, not milliseconds?)`);
    if (until <= now) throw new BanError(400, `${field}until`, `${field}until: ${new Date(until).toISOString()} is in the past`);
  }
  const doc: BanDoc = { as, who, by: input.by, reason: input.reason ?? '', at: new Date(now).toISOString(), until: until === 0 ? null : new Date(until).toISOString() };
  return { doc, until };
}

function whoOf(as: BanAs, who: string, field: string): string {
  if (typeof who !== 'string' || who === '') throw new BanError(400, `${field}who`, `${field}who: must not be empty`);
  if (as === 'clientid' || as === 'username') return who;
  const hasPrefix = who.includes('/');
  if (as === 'peerhost' && hasPrefix) throw new BanError(400, `${field}who`, `${field}who: ${who} is a CIDR block; ban it as peerhost_net`);
  if (as === 'peerhost_net' && !hasPrefix) throw new BanError(400, `${field}who`, `${field}who: ${who} is no CIDR block (address/prefix); ban an address as peerhost`);
  const block = parseBlock(who);
  if (typeof block === 'string') throw new BanError(400, `${field}who`, `${field}who: ${block}`);
  return canonical(block);
}

/** The stored id of a ban named by the API (an address in any form), or null when `as` or an
 * address is no such thing. */
function lookupKey(as: string, who: string): string | null {
  if (as === 'clientid' || as === 'username') return banId(as, who);
  if (as !== 'peerhost' && as !== 'peerhost_net') return null;
  const block = parseBlock(who);
  return typeof block === 'string' ? null : banId(as, canonical(block));
}

function heldOf(doc: unknown): Held | null {
  if (doc === null || typeof doc !== 'object') return null;
  const d = doc as BanDoc;
  if (!BAN_KINDS.includes(d.as) || typeof d.who !== 'string' || d.who === '') return null;
  const until = d.until === null || d.until === undefined ? 0 : Date.parse(d.until);
  if (!Number.isFinite(until)) return null;
  if ((d.as === 'peerhost' || d.as === 'peerhost_net') && typeof parseBlock(d.who) === 'string') return null;
  return { doc: { as: d.as, who: d.who, by: String(d.by ?? ''), reason: String(d.reason ?? ''), at: String(d.at ?? ''), until: d.until ?? null }, until };
}

/** Runs `fn` over `items`, 256 at a time (a bulk import of thousands does not open thousands of
 * store requests at once). */
async function inChunks<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += 256) await Promise.all(items.slice(i, i + 256).map(fn));
}
