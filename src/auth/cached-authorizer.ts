// Owns the per-connection cache of authorization decisions: a bounded LRU keyed by action and
// topic in front of another Authorizer. A cached decision is returned synchronously (a boolean,
// not a Promise). One instance serves one client: it refuses to answer for another identity. The
// cache empties itself when the inner authorizer's generation changes (its rules were reloaded).
import { AuthError } from './errors.ts';
import { LruMap } from './lru.ts';
import type { Action, Authorizer, ClientIdentity } from './types.ts';

export class CachedAuthorizer implements Authorizer {
  readonly allowsEverything: boolean;
  private readonly inner: Authorizer;
  private readonly cache: LruMap<string, boolean>;
  private owner: ClientIdentity | undefined;
  private seenGeneration: number | undefined;

  constructor(inner: Authorizer, capacity: number) {
    this.inner = inner;
    this.allowsEverything = inner.allowsEverything;
    this.cache = new LruMap(capacity);
    this.seenGeneration = inner.generation;
  }

  /** Number of cached decisions (at most the capacity). */
  get size(): number {
    return this.cache.size;
  }

  authorize(who: ClientIdentity, action: Action, topic: string): boolean | Promise<boolean> {
    if (this.allowsEverything) return true;
    this.checkOwner(who);
    if (this.inner.generation !== this.seenGeneration) {
      this.seenGeneration = this.inner.generation;
      this.cache.clear();
    }
    const key = (action === 'publish' ? 'p' : 's') + topic;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const decision = this.inner.authorize(who, action, topic);
    if (typeof decision === 'boolean') {
      this.cache.set(key, decision);
      return decision;
    }
    return decision.then((allowed) => this.remember(key, allowed));
  }

  /** Forgets every decision (after the rules changed). */
  clear(): void {
    this.cache.clear();
  }

  private remember(key: string, allowed: boolean): boolean {
    this.cache.set(key, allowed);
    return allowed;
  }

  private checkOwner(who: ClientIdentity): void {
    const owner = this.owner;
    if (owner === undefined) {
      this.owner = { clientId: who.clientId, username: who.username };
      return;
    }
    if (owner.clientId !== who.clientId || owner.username !== who.username) {
      throw new AuthError(
        'AUTH_CACHE_MISUSE',
        `CachedAuthorizer made for client ${JSON.stringify(owner.clientId)} was asked about ${JSON.stringify(who.clientId)}: use one per connection`,
      );
    }
  }
}
