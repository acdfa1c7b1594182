// Owns what a subscription may read. An ACL answers a SUBSCRIBE for its whole filter: 'all' when
// every topic the filter can match may be read, 'none' when no topic it can match may be, and
// 'some' otherwise. A subscription is refused only for 'none' (as Mosquitto does); one granted with
// 'some' is marked, and each message delivered through it is checked for its own topic
// (engine/session/outbox.ts). 'all' costs nothing per message.
//
// An ordered ACL (the first rule that applies decides: auth.acl, a JWT's or a role's rules, a
// database policy's rows) is walked with a ScopeWalk: a rule that covers the whole filter decides
// it, and the rules before it that only overlap the filter (a deny of secret/# before an allow of
// #) make that decision partial.
import { expandAclPattern, type AclPattern } from './acl-pattern.ts';
import { coverLevels, overlapLevels, type FilterLevel } from './topic-filter.ts';
import type { Authorizer, ClientIdentity, Overlaps, ReadScope } from './types.ts';

export class ScopeWalk {
  allow = false;
  deny = false;

  constructor(from?: Overlaps) {
    if (from !== undefined) this.add(from);
  }

  /** One rule of an ordered ACL, its pattern expanded: the scope when it covers the whole
   * filter (it decides), undefined when it does not (an overlap is noted). */
  rule(allow: boolean, levels: readonly FilterLevel[], requested: readonly FilterLevel[]): ReadScope | undefined {
    if (coverLevels(levels, requested)) return this.decide(allow);
    if (overlapLevels(levels, requested)) {
      if (allow) this.allow = true;
      else this.deny = true;
    }
    return undefined;
  }

  /** The scope when `allow` (or deny) holds for every topic no earlier rule decided. */
  decide(allow: boolean): ReadScope {
    if (allow) return this.deny ? 'some' : 'all';
    return this.allow ? 'some' : 'none';
  }

  /** Continues from a scope decided elsewhere for the rest of the topics (an ACL file's). */
  then(scope: ReadScope): ReadScope {
    return scope === 'some' ? 'some' : this.decide(scope === 'all');
  }

  add(o: Overlaps): void {
    if (o.allow) this.allow = true;
    if (o.deny) this.deny = true;
  }

  overlaps(): Overlaps | undefined {
    return this.allow || this.deny ? { allow: this.allow, deny: this.deny } : undefined;
  }
}

/**
 * Walks ordered rules, their patterns' %c and %u expanded for `who`: the scope decided by the first
 * of those `applies` picks that covers `requested`, or undefined when none does (the overlaps are
 * left on `walk` for the next ACL).
 */
export function scopeOfRules<R extends { readonly allow: boolean; readonly pattern: AclPattern }>(
  rules: readonly R[],
  applies: (rule: R) => boolean,
  who: ClientIdentity,
  requested: readonly FilterLevel[],
  walk: ScopeWalk,
): ReadScope | undefined {
  for (const rule of rules) {
    if (!applies(rule)) continue;
    const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
    if (levels === undefined) continue;
    const decided = walk.rule(rule.allow, levels, requested);
    if (decided !== undefined) return decided;
  }
  return undefined;
}

/** The scope of a plain allow or deny of a filter by a source that cannot say more. */
export function scopeOf(allowed: boolean): ReadScope {
  return allowed ? 'all' : 'none';
}

/** The scope of a subscription to `filter` (its $share/$queue prefix included) under `authorizer`. */
export function subscribeScope(authorizer: Authorizer, who: ClientIdentity, filter: string): ReadScope | Promise<ReadScope> {
  if (authorizer.allowsEverything) return 'all';
  if (authorizer.subscribeScope !== undefined) return authorizer.subscribeScope(who, filter);
  const d = authorizer.authorize(who, 'subscribe', filter);
  return typeof d === 'boolean' ? scopeOf(d) : d.then(scopeOf);
}
