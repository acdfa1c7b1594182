// Owns an `ldap` ACL policy's cache of users' rules (main thread): per user (and client id when a
// template reads it), the rules their groups give, kept `ttlMs` and at most `capacity` users
// (least recently used out first). A lookup already running for a user is shared by the
// questions that ask meanwhile (a new connection's first PUBLISHes and SUBSCRIBEs), so they make
// one trip to the directory. A failed lookup is not kept.
import { LruMap } from '../auth/lru.ts';

interface Kept<V> {
  value: V;
  expiresAt: number;
}

export class GroupCache<V> {
  private readonly kept: LruMap<string, Kept<V>>;
  private readonly running = new Map<string, Promise<V>>();

  constructor(
    capacity: number,
    private readonly ttlMs: number,
    private readonly counts: { hit: number; miss: number },
    private readonly now: () => number = Date.now,
  ) {
    this.kept = new LruMap(ttlMs > 0 ? capacity : 0);
  }

  get size(): number {
    return this.kept.size;
  }

  /** The kept value of `key`, or `load`'s (shared with the questions asking meanwhile). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const k = this.kept.get(key);
    if (k !== undefined) {
      if (k.expiresAt > this.now()) {
        this.counts.hit++;
        return Promise.resolve(k.value);
      }
      this.kept.delete(key);
    }
    this.counts.miss++;
    const running = this.running.get(key);
    if (running !== undefined) return running;
    const p = load().then(
      (value) => {
        this.running.delete(key);
        this.kept.set(key, { value, expiresAt: this.now() + this.ttlMs });
        return value;
      },
      (err: unknown) => {
        this.running.delete(key);
        throw err;
      },
    );
    this.running.set(key, p);
    return p;
  }
}
