// Owns the ACL from the configuration: rules tried in order, the first that applies decides,
// otherwise a Mosquitto ACL file when one is set (it denies what it does not grant), otherwise
// aclDefault. A rule applies when its username and clientId (if set) equal the
// client's, its action matches ('pubsub' matches both), and its topic pattern (%c, %u expanded)
// matches the published topic, or covers the whole requested subscription filter. A subscription
// is granted when some topic of its filter may be read (subscribeScope): the deliveries of one
// that a rule only partly covers are checked one by one, as Mosquitto does.
import { aclPatternProblem, compileAclPattern, expandAclPattern, type AclPattern } from './acl-pattern.ts';
import { AuthError } from './errors.ts';
import { coverLevels, matchLevels, parseFilter } from './topic-filter.ts';
import type { Action, Authorizer, ClientIdentity, Overlaps, ReadScope } from './types.ts';
import { scopeOfRules, ScopeWalk } from './acl-scope.ts';
import { aclFileAllows, aclFileScope, type AclFile } from './mosquitto/acl-file.ts';

export interface AclRule {
  permission: 'allow' | 'deny';
  action: 'publish' | 'subscribe' | 'pubsub';
  topic: string;
  username?: string;
  clientId?: string;
}

export interface StaticAuthorizerOptions {
  acl: readonly AclRule[];
  aclDefault: 'allow' | 'deny';
  /** A Mosquitto ACL file, consulted when no rule applies; its contents may be replaced (reload). */
  mosquittoAcl?: { readonly current: AclFile; readonly generation: number };
}

interface CompiledRule {
  allow: boolean;
  publish: boolean;
  subscribe: boolean;
  username: string | undefined;
  clientId: string | undefined;
  pattern: AclPattern;
}

export class StaticAuthorizer implements Authorizer {
  readonly allowsEverything: boolean;
  private readonly rules: CompiledRule[];
  private readonly defaultAllow: boolean;
  private readonly aclFile: StaticAuthorizerOptions['mosquittoAcl'];

  constructor(options: StaticAuthorizerOptions) {
    if (options.aclDefault !== 'allow' && options.aclDefault !== 'deny') {
      throw new AuthError('AUTH_CONFIG_INVALID', `aclDefault must be 'allow' or 'deny' (got ${JSON.stringify(options.aclDefault)})`);
    }
    this.rules = options.acl.map(compileRule);
    this.defaultAllow = options.aclDefault === 'allow';
    this.aclFile = options.mosquittoAcl;
    this.allowsEverything = this.rules.length === 0 && this.defaultAllow && this.aclFile === undefined;
  }

  /** Changes when the ACL file is reloaded: decisions cached before are stale. */
  get generation(): number {
    return this.aclFile?.generation ?? 0;
  }

  authorize(who: ClientIdentity, action: Action, topic: string): boolean {
    if (this.allowsEverything) return true;
    const publish = action === 'publish';
    const requested = publish ? topic.split('/') : parseFilter(subscriptionFilter(topic));
    for (const rule of this.rules) {
      if (publish ? !rule.publish : !rule.subscribe) continue;
      if (rule.username !== undefined && rule.username !== who.username) continue;
      if (rule.clientId !== undefined && rule.clientId !== who.clientId) continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      const applies = publish ? matchLevels(levels, requested as string[]) : coverLevels(levels, requested);
      if (applies) return rule.allow;
    }
    if (this.aclFile) return aclFileAllows(this.aclFile.current, who, publish, requested);
    return this.defaultAllow;
  }

  /** What a subscription to `filter` may read: the rules in order (acl-scope.ts), then the ACL
   * file's scope or aclDefault for the topics no rule decided. `before`: the overlaps of the ACLs
   * asked before this one (a policy chain that ignored). */
  subscribeScope(who: ClientIdentity, filter: string, before?: Overlaps): ReadScope {
    const walk = new ScopeWalk(before);
    if (this.allowsEverything) return walk.decide(true);
    const requested = parseFilter(subscriptionFilter(filter));
    const applies = (rule: CompiledRule) => rule.subscribe && (rule.username === undefined || rule.username === who.username) && (rule.clientId === undefined || rule.clientId === who.clientId);
    const decided = scopeOfRules(this.rules, applies, who, requested, walk);
    if (decided !== undefined) return decided;
    if (this.aclFile) return walk.then(aclFileScope(this.aclFile.current, who, requested));
    return walk.decide(this.defaultAllow);
  }
}

/** The filter a subscription really asks for: '$share/<group>/<f>' and '$queue/<f>' ask for <f>. */
export function subscriptionFilter(filter: string): string {
  if (filter.startsWith('$queue/')) return filter.slice('$queue/'.length);
  if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', '$share/'.length);
    if (slash !== -1) return filter.slice(slash + 1);
  }
  return filter;
}

function compileRule(rule: AclRule, index: number): CompiledRule {
  const at = `acl[${index}]`;
  if (rule.permission !== 'allow' && rule.permission !== 'deny') {
    throw new AuthError('AUTH_CONFIG_INVALID', `${at}.permission must be 'allow' or 'deny' (got ${JSON.stringify(rule.permission)})`);
  }
  if (rule.action !== 'publish' && rule.action !== 'subscribe' && rule.action !== 'pubsub') {
    throw new AuthError('AUTH_CONFIG_INVALID', `${at}.action must be 'publish', 'subscribe' or 'pubsub' (got ${JSON.stringify(rule.action)})`);
  }
  const problem = typeof rule.topic === 'string' ? aclPatternProblem(rule.topic) : 'must be a string';
  if (problem !== undefined) {
    throw new AuthError('AUTH_CONFIG_INVALID', `${at}.topic ${JSON.stringify(rule.topic)} is not a valid topic pattern: ${problem}`);
  }
  return {
    allow: rule.permission === 'allow',
    publish: rule.action !== 'subscribe',
    subscribe: rule.action !== 'publish',
    username: rule.username,
    clientId: rule.clientId,
    pattern: compileAclPattern(rule.topic),
  };
}
