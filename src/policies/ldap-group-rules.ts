// Owns what the groups of a directory user mean to an `ldap` ACL policy: each configured group
// (by DN, or by name: the value of its first RDN, its cn) brings its rules, and a user's rules are
// those of the groups they are in, in the order the groups are configured: one ordered ACL, whose
// first rule that applies decides (publish: its pattern matches the topic; subscribe: it covers
// the whole filter, the rules before it that only overlap the filter noted on a ScopeWalk, so a
// wildcard subscription is granted in part: auth/acl-scope.ts). None applies: undefined (the next
// ACL decides). Patterns are compiled once, when the policy compiles.
import { compileAclPattern, expandAclPattern, type AclPattern } from '../auth/acl-pattern.ts';
import type { ScopeWalk } from '../auth/acl-scope.ts';
import { matchLevels, parseFilter } from '../auth/topic-filter.ts';
import type { LdapGroupRule } from './ldap-config.ts';
import { firstRdnValue, normalizeDn } from './ldap-template.ts';
import type { AclQuery } from './types.ts';

export interface CompiledRule {
  readonly allow: boolean;
  readonly publish: boolean;
  readonly subscribe: boolean;
  readonly pattern: AclPattern;
}

/** A configured group: by DN (normalized), or by name (the value of its first RDN). */
interface GroupRef {
  dn: string | undefined;
  name: string | undefined;
}

interface CompiledGroup extends GroupRef {
  rules: CompiledRule[];
}

function refOf(group: string): GroupRef {
  const byDn = group.includes('=');
  return { dn: byDn ? normalizeDn(group) : undefined, name: byDn ? undefined : group.toLowerCase() };
}

/** The groups a user is in (their DNs), as the configured groups are matched against them. */
export class Membership {
  private readonly dns: Set<string>;
  private readonly names: Set<string>;

  constructor(groupDns: readonly string[]) {
    this.dns = new Set(groupDns.map(normalizeDn));
    this.names = new Set(groupDns.map(firstRdnValue));
  }

  has(ref: GroupRef): boolean {
    return ref.dn !== undefined ? this.dns.has(ref.dn) : this.names.has(ref.name!);
  }
}

/** Some configured groups (an auth policy's superuserGroups): is a user in any of them? */
export class GroupSet {
  private readonly refs: GroupRef[];

  constructor(groups: readonly string[]) {
    this.refs = groups.map(refOf);
  }

  get size(): number {
    return this.refs.length;
  }

  anyOf(groupDns: readonly string[]): boolean {
    if (groupDns.length === 0) return false;
    const m = new Membership(groupDns);
    return this.refs.some((r) => m.has(r));
  }
}

export class GroupRules {
  private readonly groups: CompiledGroup[];

  constructor(config: readonly LdapGroupRule[]) {
    this.groups = config.map((g) => ({
      ...refOf(g.group),
      rules: g.rules.map((r) => ({ allow: r.permission === 'allow', publish: r.action !== 'subscribe', subscribe: r.action !== 'publish', pattern: compileAclPattern(r.topic) })),
    }));
  }

  /** The rules of a user in `groupDns`, in the configured order of the groups. */
  rulesOf(groupDns: readonly string[]): CompiledRule[] {
    if (groupDns.length === 0) return [];
    const m = new Membership(groupDns);
    const rules: CompiledRule[] = [];
    for (const g of this.groups) if (m.has(g)) rules.push(...g.rules);
    return rules;
  }
}

/** The decision of `rules` for `q`, or undefined when none applies. For a subscribe question,
 * `walk` collects the rules met before the decision that overlap the filter. */
export function decideRules(rules: readonly CompiledRule[], q: AclQuery, walk: ScopeWalk | undefined): 'allow' | 'deny' | undefined {
  const publish = q.action === 'publish';
  const requested = publish ? q.topic.split('/') : parseFilter(q.topic);
  for (const rule of rules) {
    if (publish ? !rule.publish : !rule.subscribe) continue;
    const levels = expandAclPattern(rule.pattern, q.clientid, q.username);
    if (levels === undefined) continue;
    const applies = publish ? matchLevels(levels, requested as string[]) : walk!.rule(rule.allow, levels, requested) !== undefined;
    if (applies) return rule.allow ? 'allow' : 'deny';
  }
  return undefined;
}
