// Owns what the rows of a database ACL policy mean and how they decide. A row is
// {permission, action, topic} (a mongodb document may give `topics`, an array, instead of or
// besides `topic`: one rule per topic, in order):
//   permission  'allow' | 'deny' (any case); also true/false, 1/0 and '1'/'0' (EMQX 4's allow column)
//   action      'publish' | 'subscribe' | 'all' | 'pubsub' (any case); also EMQX 4's access
//               integers 1 (subscribe), 2 (publish), 3 (both), as numbers or text
//   topic       an ACL pattern (a topic filter with %u and %c, acl-pattern.ts)
// The rows are tried in their order: the first whose action covers the asked one and whose expanded
// pattern applies decides (publish: the pattern matches the topic; subscribe: it covers the whole
// requested filter, so `a/+` does not grant `a/#`). A pattern using %u never applies to a client
// without a username. A row that cannot be read is skipped and reported; no row applying: undefined.
import { aclPatternProblem, compileAclPattern, expandAclPattern, type AclPattern } from '../auth/acl-pattern.ts';
import type { ScopeWalk } from '../auth/acl-scope.ts';
import { coverLevels, matchLevels, parseFilter } from '../auth/topic-filter.ts';
import type { Row } from '../sources/types.ts';
import type { AclQuery } from './types.ts';

export interface AclRowRule {
  allow: boolean;
  publish: boolean;
  subscribe: boolean;
  pattern: AclPattern;
}

const PERMISSIONS = new Map<string, boolean>([
  ['allow', true],
  ['deny', false],
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
]);

const ACTIONS = new Map<string, { publish: boolean; subscribe: boolean }>([
  ['publish', { publish: true, subscribe: false }],
  ['subscribe', { publish: false, subscribe: true }],
  ['all', { publish: true, subscribe: true }],
  ['pubsub', { publish: true, subscribe: true }],
  ['1', { publish: false, subscribe: true }],
  ['2', { publish: true, subscribe: false }],
  ['3', { publish: true, subscribe: true }],
]);

/** The decision of `rows` for `q`, or undefined when no row applies. `skipped` hears of every
 * row that cannot be read (with why). For a subscribe question, `walk` collects the rows met
 * before the decision that apply to some, not all, of the filter's topics (auth/acl-scope.ts). */
export function decideAcl(rows: readonly Row[], q: AclQuery, skipped: (problem: string) => void, walk?: ScopeWalk): 'allow' | 'deny' | undefined {
  const publish = q.action === 'publish';
  const requested = publish ? q.topic.split('/') : parseFilter(q.topic);
  for (const row of rows) {
    const rules = rulesOfRow(row);
    if (typeof rules === 'string') {
      skipped(rules);
      continue;
    }
    for (const rule of rules) {
      if (publish ? !rule.publish : !rule.subscribe) continue;
      const levels = expandAclPattern(rule.pattern, q.clientid, q.username);
      if (levels === undefined) continue;
      const applies = publish ? matchLevels(levels, requested as string[]) : walk ? walk.rule(rule.allow, levels, requested) !== undefined : coverLevels(levels, requested);
      if (applies) return rule.allow ? 'allow' : 'deny';
    }
  }
  return undefined;
}

/** The rules of one row, or why it cannot be read. */
export function rulesOfRow(row: Row): AclRowRule[] | string {
  const allow = PERMISSIONS.get(keyOf(row.permission));
  if (allow === undefined) return `permission ${show(row.permission)} is not allow or deny`;
  const action = ACTIONS.get(keyOf(row.action));
  if (action === undefined) return `action ${show(row.action)} is not publish, subscribe, all, pubsub (or 1, 2, 3)`;
  const topics = topicsOf(row);
  if (typeof topics === 'string') return topics;
  const rules: AclRowRule[] = [];
  for (const topic of topics) {
    const problem = aclPatternProblem(topic);
    if (problem !== undefined) return `topic ${show(topic)} is not a valid pattern: ${problem}`;
    rules.push({ allow, ...action, pattern: compileAclPattern(topic) });
  }
  return rules;
}

function topicsOf(row: Row): string[] | string {
  const topics: string[] = [];
  if (row.topic !== undefined && row.topic !== null) {
    if (typeof row.topic !== 'string') return `topic ${show(row.topic)} is not text`;
    topics.push(row.topic);
  }
  if (row.topics !== undefined && row.topics !== null) {
    if (!Array.isArray(row.topics) || row.topics.some((t) => typeof t !== 'string')) return 'topics is not an array of text';
    topics.push(...(row.topics as string[]));
  }
  if (topics.length === 0) return 'the row has no topic';
  return topics;
}

/** The lookup key of a permission or action cell: text lower-cased, numbers and booleans as text. */
function keyOf(v: unknown): string {
  if (typeof v === 'string') return v.trim().toLowerCase();
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Buffer.isBuffer(v)) return v.length === 1 && v[0] <= 1 ? String(v[0]) : v.toString('utf8').trim().toLowerCase();
  return '';
}

function show(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
