// Owns reading a JWT's ACL claim into AclGrant[], in either of EMQX's formats:
//   old: {"pub": [topics], "sub": [topics], "all": [topics]}, every rule an allow;
//   new: [{"permission": "allow" | "deny", "action": "publish" | "subscribe" | "all" (or "pub",
//        "sub"), "topic": t} or {..., "topics": [t, ...]}, ...], in order.
// A topic is an ACL pattern (%u, %c); EMQX's ${username} and ${clientid} are read as %u and %c, and
// "eq <topic>" (an exact match) as the topic with its '%' escaped. A claim that is not one of these
// shapes (a rule without a permission, an unknown action...) is a problem: the token is refused,
// since dropping a deny rule would grant more than the token says. A single topic that cannot be
// used is dropped and named in `dropped`, as is what we cannot represent: an allow rule limited by
// qos/retain or an "eq" allow with wildcards is dropped (it would otherwise grant more); the same
// limits on a deny rule are widened (it then denies more). Unknown keys of the old format are
// dropped too (every rule there is an allow).
import { aclPatternProblem } from '../auth/acl-pattern.ts';
import type { AclGrant } from './types.ts';

export type ClaimAcl = { grants: AclGrant[]; dropped: string[] } | { problem: string };

type Permission = AclGrant['permission'];
type Action = AclGrant['action'];

const OLD_KEYS: Record<string, Action> = { pub: 'publish', sub: 'subscribe', all: 'all' };
const ACTIONS: Record<string, Action> = { pub: 'publish', publish: 'publish', sub: 'subscribe', subscribe: 'subscribe', all: 'all' };

export function aclOfClaim(claim: unknown): ClaimAcl {
  if (Array.isArray(claim)) return rulesOf(claim);
  if (claim !== null && typeof claim === 'object') return oldFormatOf(claim as Record<string, unknown>);
  return { problem: `must be a list of rules or {"pub", "sub", "all"}, not ${JSON.stringify(claim)}` };
}

function oldFormatOf(claim: Record<string, unknown>): ClaimAcl {
  const out: AclGrant[] = [];
  const dropped: string[] = [];
  for (const [key, topics] of Object.entries(claim)) {
    const action = OLD_KEYS[key];
    if (action === undefined) {
      dropped.push(`key "${key}": not one of pub, sub, all`);
      continue;
    }
    if (!isStringList(topics)) return { problem: `"${key}" must be a list of topics` };
    for (const topic of topics) addGrant(out, dropped, 'allow', action, topic, false);
  }
  return { grants: out, dropped };
}

function rulesOf(rules: unknown[]): ClaimAcl {
  const out: AclGrant[] = [];
  const dropped: string[] = [];
  for (const [i, rule] of rules.entries()) {
    if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) return { problem: `rule ${i} is not an object` };
    const r = rule as Record<string, unknown>;
    if (r.permission !== 'allow' && r.permission !== 'deny') return { problem: `rule ${i}: permission must be "allow" or "deny"` };
    const action = typeof r.action === 'string' ? ACTIONS[r.action] : undefined;
    if (action === undefined) return { problem: `rule ${i}: action must be "publish", "subscribe" or "all"` };
    const topics = typeof r.topic === 'string' ? [r.topic] : isStringList(r.topics) ? r.topics : undefined;
    if (topics === undefined) return { problem: `rule ${i}: needs "topic" (a string) or "topics" (a list of strings)` };
    const limited = !isAny(r.qos, isAllQos) || !isAny(r.retain, (v) => v === 'all');
    for (const topic of topics) addGrant(out, dropped, r.permission, action, topic, limited);
  }
  return { grants: out, dropped };
}

/** Adds the grant of one topic, or says in `dropped` why it cannot be used. */
function addGrant(out: AclGrant[], dropped: string[], permission: Permission, action: Action, topic: string, limited: boolean): void {
  if (limited && permission === 'allow') {
    dropped.push(`${JSON.stringify(topic)}: qos/retain conditions are not supported on an allow rule`);
    return;
  }
  const pattern = patternOf(topic, permission);
  if ('drop' in pattern) {
    dropped.push(`${JSON.stringify(topic)}: ${pattern.drop}`);
    return;
  }
  const problem = aclPatternProblem(pattern.topic);
  if (problem !== undefined) {
    dropped.push(`${JSON.stringify(topic)}: ${problem}`);
    return;
  }
  out.push({ permission, action, topic: pattern.topic });
}

/** The ACL pattern of a claim's topic, in our %u/%c syntax. */
function patternOf(topic: string, permission: Permission): { topic: string } | { drop: string } {
  if (topic.startsWith('eq ')) {
    const exact = topic.slice(3);
    if (/[+#]/.test(exact) && permission === 'allow') return { drop: 'an exact-match (eq) allow rule with wildcards is not supported' };
    return { topic: exact.replaceAll('%', '%%') };
  }
  const unknown = /\$\{(?!username\}|clientid\})[^}]*\}/.exec(topic);
  if (unknown !== null) return { drop: `unknown placeholder ${unknown[0]} (use \${username}, \${clientid}, %u or %c)` };
  return { topic: topic.replaceAll('${username}', '%u').replaceAll('${clientid}', '%c') };
}

function isStringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((t) => typeof t === 'string');
}

/** Whether a qos/retain condition is absent or allows everything. */
function isAny(v: unknown, all: (v: unknown) => boolean): boolean {
  return v === undefined || v === null || all(v);
}

function isAllQos(v: unknown): boolean {
  const list = typeof v === 'string' ? v.split(',').map((s) => s.trim()) : Array.isArray(v) ? v.map(String) : [];
  return ['0', '1', '2'].every((q) => list.includes(q));
}
