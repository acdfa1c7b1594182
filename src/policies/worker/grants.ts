// Owns deciding from ACL rules that came with a client's credentials (a JWT's acl claim): the first
// rule whose action covers the asked one and whose pattern (%u, %c expanded) matches the published
// topic, or covers the whole requested filter, decides; none: undefined (the next ACL decides).
// Patterns are compiled once per client.
import { aclPatternProblem, compileAclPattern, expandAclPattern, type AclPattern } from '../../auth/acl-pattern.ts';
import { coverLevels, matchLevels, parseFilter } from '../../auth/topic-filter.ts';
import { scopeOfRules, type ScopeWalk } from '../../auth/acl-scope.ts';
import type { AclGrant, Action, ClientIdentity, ReadScope } from '../../auth/types.ts';

interface CompiledGrant {
  allow: boolean;
  publish: boolean;
  subscribe: boolean;
  pattern: AclPattern;
}

export class Grants {
  private readonly rules: CompiledGrant[];

  constructor(grants: readonly AclGrant[]) {
    this.rules = [];
    for (const g of grants) {
      if (aclPatternProblem(g.topic) !== undefined) continue; // checked where they were read; never trusted
      this.rules.push({ allow: g.permission === 'allow', publish: g.action !== 'subscribe', subscribe: g.action !== 'publish', pattern: compileAclPattern(g.topic) });
    }
  }

  /** allow (true), deny (false), or undefined when no rule applies. `topic` is a topic name to
   * publish, or a subscription filter without its $share/$queue prefix. */
  decide(who: ClientIdentity, action: Action, topic: string): boolean | undefined {
    const publish = action === 'publish';
    const requested = publish ? topic.split('/') : parseFilter(topic);
    for (const rule of this.rules) {
      if (publish ? !rule.publish : !rule.subscribe) continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      if (publish ? matchLevels(levels, requested as string[]) : coverLevels(levels, requested)) return rule.allow;
    }
    return undefined;
  }

  /** What a subscription to `filter` (without its $share/$queue prefix) may read by these rules,
   * or undefined when none covers it (the overlaps are left on `walk` for the next ACL). */
  scope(who: ClientIdentity, filter: string, walk: ScopeWalk): ReadScope | undefined {
    return scopeOfRules(this.rules, (rule) => rule.subscribe, who, parseFilter(filter), walk);
  }
}
