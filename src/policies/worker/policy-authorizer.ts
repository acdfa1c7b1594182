// Owns one connection's authorization when ACL policies may exist: the rules that came with its
// credentials (a JWT's acl claim) first, then a LocalAcl (the built-in client database's roles),
// then the ACL policy chain (the main thread's, through
// WorkerPolicies), then the static ACL (auth.acl, the Mosquitto ACL file, auth.aclDefault) when
// every policy ignores. Decisions are cached per connection (bounded, least recently used out
// first) and dropped when the policies or the static ACL change; a decision reached while a policy
// failed (its source down) is not cached, and a question the chain did not answer in time is
// refused (never allowed) and not cached. Everything it needs is read when asked, so policies
// added while the client is connected apply to it at once. A SUBSCRIBE asks subscribeScope (what
// the filter may read); each message delivered through a subscription granted only in part asks
// authorize(who, 'subscribe', topic) for its topic, cached like any decision.
import { LruMap } from '../../auth/lru.ts';
import { subscriptionFilter } from '../../auth/static-authorizer.ts';
import { ScopeWalk } from '../../auth/acl-scope.ts';
import type { Action, Authorizer, ClientIdentity, ReadScope } from '../../auth/types.ts';
import type { AclAnswer } from '../types.ts';
import { Grants } from './grants.ts';
import type { WorkerPolicies } from './worker-policies.ts';

/**
 * An ACL this worker holds and reads when asked (the built-in client database's roles,
 * src/features/client-db): asked after the credentials' rules and before the policy chain, so its
 * clients' PUBLISHes and SUBSCRIBEs never leave the worker. undefined: it has nothing to say for
 * this client or topic (the chain goes on). `generation` changes whenever its rules do.
 */
export interface LocalAcl {
  readonly generation: number;
  /** Whether it may answer for `who` now (a client of its own). */
  governs(who: ClientIdentity): boolean;
  decide(who: ClientIdentity, action: Action, topic: string): boolean | undefined;
  /** What a subscription to `filter` (without its $share/$queue prefix) may read, or undefined
   * with the overlaps left on `walk` for the next ACL. */
  scope(who: ClientIdentity, filter: string, walk: ScopeWalk): ReadScope | undefined;
}

export class PolicyAuthorizer implements Authorizer {
  private readonly cache: LruMap<string, boolean>;
  private readonly grants: Grants | undefined;
  private seen = -1;
  private lastTopic: string | undefined = undefined;
  private lastAllowed = false;

  constructor(
    private readonly policies: WorkerPolicies,
    private readonly fallback: Authorizer,
    who: ClientIdentity,
    private readonly peerhost: () => string,
    capacity: number,
    private readonly local: LocalAcl | null = null,
  ) {
    this.cache = new LruMap(capacity);
    this.grants = who.acl !== undefined && who.acl.length > 0 ? new Grants(who.acl) : undefined;
    this.who = who;
  }

  private readonly who: ClientIdentity;

  /** Asked before every PUBLISH: answered from the last answer while no generation changed (the
   * local ACL's governs() is a lookup by username). */
  get allowsEverything(): boolean {
    const generation = this.generation;
    if (generation !== this.everythingSeen) {
      this.everythingSeen = generation;
      this.everything = !this.policies.state.acl && this.grants === undefined && this.fallback.allowsEverything && (this.local === null || !this.local.governs(this.who));
    }
    return this.everything;
  }

  private everythingSeen = -1;
  private everything = false;

  get generation(): number {
    // Three generations in one number, each below 2^16 (the local one below 2^20) before it wraps.
    return ((this.local?.generation ?? 0) * 0x10000 + this.policies.state.generation) * 0x10000 + (this.fallback.generation ?? 0);
  }

  authorize(who: ClientIdentity, action: Action, topic: string): boolean | Promise<boolean> {
    const generation = this.generation;
    if (generation !== this.seen) {
      this.seen = generation;
      this.cache.clear();
      this.lastTopic = undefined;
    }
    // A publisher mostly publishes on the topic it published on last: that one decision is kept
    // beside the LRU (no key to build, no map to reorder).
    if (action === 'publish' && topic === this.lastTopic) {
      this.policies.counters.aclCacheHits++;
      return this.lastAllowed;
    }
    const key = (action === 'publish' ? 'p' : 's') + topic;
    const hit = this.cache.get(key);
    const counters = this.policies.counters;
    if (hit !== undefined) {
      counters.aclCacheHits++;
      if (action === 'publish') this.rememberLast(topic, hit);
      return hit;
    }
    counters.aclCacheMisses++;
    const filter = action === 'publish' ? topic : subscriptionFilter(topic);
    const granted = this.grants?.decide(who, action, filter) ?? this.local?.decide(who, action, filter);
    if (granted !== undefined) return this.remember(action, topic, key, granted);
    if (!this.policies.state.acl) return this.staticDecision(key, who, action, topic);
    const q = { clientid: who.clientId, username: who.username, peerhost: this.peerhost(), action, topic: filter };
    return this.policies.ask('acl', q).then((reply) => {
      if (reply === null) return false;
      const answer = reply.answer as AclAnswer;
      const cacheable = reply.cacheable && reply.generation === this.policies.state.generation;
      if (answer.result === 'ignore') {
        const d = this.fallback.authorize(who, action, topic);
        if (typeof d !== 'boolean') return d;
        return cacheable ? this.remember(action, topic, key, d) : d;
      }
      const allowed = answer.result === 'allow';
      return cacheable ? this.remember(action, topic, key, allowed) : allowed;
    });
  }

  /** What a subscription to `filter` may read: the credentials' rules, then the ACL policy chain
   * (asked about the filter; its answer carries the overlaps met along it), then the static ACL
   * for what they left undecided (auth/acl-scope.ts). Not cached: SUBSCRIBE is rare. */
  subscribeScope(who: ClientIdentity, filter: string): ReadScope | Promise<ReadScope> {
    const f = subscriptionFilter(filter);
    const walk = new ScopeWalk();
    const granted = this.grants?.scope(who, f, walk) ?? this.local?.scope(who, f, walk);
    if (granted !== undefined) return granted;
    if (!this.policies.state.acl) return this.staticScope(who, filter, walk);
    const q = { clientid: who.clientId, username: who.username, peerhost: this.peerhost(), action: 'subscribe' as const, topic: f };
    return this.policies.ask('acl', q).then((reply) => {
      if (reply === null) return 'none';
      const answer = reply.answer as AclAnswer;
      if (answer.overlaps !== undefined) walk.add(answer.overlaps);
      if (answer.result === 'ignore') return this.staticScope(who, filter, walk);
      return walk.decide(answer.result === 'allow');
    });
  }

  private staticScope(who: ClientIdentity, filter: string, walk: ScopeWalk): ReadScope | Promise<ReadScope> {
    if (this.fallback.subscribeScope !== undefined) return this.fallback.subscribeScope(who, filter, walk.overlaps());
    const d = this.fallback.authorize(who, 'subscribe', filter);
    return typeof d === 'boolean' ? walk.decide(d) : d.then((allowed) => walk.decide(allowed));
  }

  private staticDecision(key: string, who: ClientIdentity, action: Action, topic: string): boolean | Promise<boolean> {
    const d = this.fallback.authorize(who, action, topic);
    if (typeof d === 'boolean') return this.remember(action, topic, key, d);
    return d.then((allowed) => this.remember(action, topic, key, allowed));
  }

  private remember(action: Action, topic: string, key: string, allowed: boolean): boolean {
    this.cache.set(key, allowed);
    if (action === 'publish' && this.cache.capacity > 0) this.rememberLast(topic, allowed);
    return allowed;
  }

  private rememberLast(topic: string, allowed: boolean): void {
    this.lastTopic = topic;
    this.lastAllowed = allowed;
  }
}

/** A superuser's authorizer: everything is allowed, no check is made. */
export const SUPERUSER: Authorizer = Object.freeze({ allowsEverything: true, authorize: () => true });
