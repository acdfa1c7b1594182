// Topic rewrite rules (EMQX's `rewrite`): their shape, their checking (the field named), and their
// compiled form a worker applies to PUBLISH topic names, SUBSCRIBE/UNSUBSCRIBE filters (the filter
// inside `$share/{group}/` too) and will topics. In order, the first rule whose action applies,
// whose source filter matches the topic and whose regex matches it rewrites it to its destination,
// `$1..$n` standing for the regex's groups; no rule: the topic stays as it is.
import { DomainError } from '../../errors/domain-error.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';

export const REWRITE_ACTIONS = ['publish', 'subscribe', 'all'] as const;
export type RewriteAction = (typeof REWRITE_ACTIONS)[number];

export interface RewriteRule {
  action: RewriteAction;
  sourceFilter: string;
  regex: string;
  destination: string;
}

/** At most this many rules (each is checked in turn for every topic its source filter may match). */
export const MAX_REWRITE_RULES = 1000;

/** Why `value` is not a rule, naming the field (`[i].regex`), as a 400 DomainError. */
export function checkRewriteRule(value: unknown, at = ''): RewriteRule {
  const bad = (field: string, why: string) => new DomainError('INVALID_PARAMETER', `${at}${field}: ${why}`, { field: `${at}${field}` });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DomainError('INVALID_PARAMETER', `${at || 'rule'}: expected an object {action, sourceFilter, regex, destination}`, { field: at || 'rule' });
  const v = value as Record<string, unknown>;
  for (const k of Object.keys(v)) if (!['action', 'sourceFilter', 'regex', 'destination'].includes(k)) throw bad(k, 'unknown field');
  if (typeof v.action !== 'string' || !(REWRITE_ACTIONS as readonly string[]).includes(v.action)) throw bad('action', `expected one of ${REWRITE_ACTIONS.join(', ')}`);
  if (typeof v.sourceFilter !== 'string') throw bad('sourceFilter', 'expected a topic filter');
  const fp = topicFilterProblem(v.sourceFilter);
  if (fp) throw bad('sourceFilter', fp);
  if (typeof v.regex !== 'string' || v.regex.length === 0) throw bad('regex', 'expected a regular expression');
  let re: RegExp;
  try {
    re = new RegExp(v.regex);
  } catch (err) {
    throw bad('regex', (err as Error).message);
  }
  if (typeof v.destination !== 'string' || v.destination.length === 0) throw bad('destination', 'expected a topic with $1..$n');
  const groups = new RegExp(`${re.source}|`).exec('')!.length - 1;
  for (const m of v.destination.matchAll(/\$(\d+)/g)) {
    const n = Number(m[1]);
    if (n < 1 || n > groups) throw bad('destination', `$${m[1]} names no group of the regex (it has ${groups})`);
  }
  const literal = v.destination.replace(/\$\d+/g, 'x');
  const dp = topicFilterProblem(literal);
  if (dp) throw bad('destination', dp);
  if (v.action !== 'subscribe' && /(^|\/)[+#](\/|$)/.test(literal)) throw bad('destination', `a ${v.action} rule's destination must not contain wildcards (it names a topic)`);
  return { action: v.action as RewriteAction, sourceFilter: v.sourceFilter, regex: v.regex, destination: v.destination };
}

/** Checks a whole list (the field of a bad rule named `[i].field`). */
export function checkRewriteRules(value: unknown): RewriteRule[] {
  if (!Array.isArray(value)) throw new DomainError('INVALID_PARAMETER', 'rules: expected a list', { field: 'rules' });
  if (value.length > MAX_REWRITE_RULES) throw new DomainError('INVALID_PARAMETER', `rules: at most ${MAX_REWRITE_RULES}`, { field: 'rules' });
  return value.map((r, i) => checkRewriteRule(r, `[${i}].`));
}

const SINGLE = 1;
const MULTI = 2;

interface Compiled {
  /** Bit 1: applies to PUBLISH (and wills); bit 2: to SUBSCRIBE/UNSUBSCRIBE. */
  on: number;
  /** The source filter's levels: a string, or SINGLE / MULTI. */
  levels: (string | number)[];
  /** A first level that is a wildcard matches no `$` topic. */
  wildFirst: boolean;
  re: RegExp;
  /** The destination cut at its `$n`: text, group number, text, ... */
  parts: (string | number)[];
}

/**
 * Whether `topic` (a name, or a filter whose `+`/`#` levels are then literal) is matched by the
 * filter `levels`, without splitting the topic (nothing allocated).
 */
function matchesLevels(levels: (string | number)[], wildFirst: boolean, topic: string): boolean {
  if (wildFirst && topic.charCodeAt(0) === 36) return false; // '$'
  let pos = 0;
  const n = levels.length;
  for (let i = 0; i < n; i++) {
    const l = levels[i];
    if (l === MULTI) return true; // 'a/#' matches 'a' too
    if (pos > topic.length) return false; // no level left
    let end = topic.indexOf('/', pos);
    if (end === -1) end = topic.length;
    if (l !== SINGLE) {
      const s = l as string;
      if (end - pos !== s.length || !topic.startsWith(s, pos)) return false;
    }
    pos = end + 1;
  }
  return pos === topic.length + 1;
}

/** The rules of a worker, compiled once. */
export class CompiledRewrite {
  /** False without rules: the handlers then do nothing more. */
  readonly active: boolean;
  readonly count: number;
  private readonly rules: Compiled[];

  /** `counts[i]`: topics rule i rewrote (shared with the main thread, Atomics). */
  constructor(rules: readonly RewriteRule[], private readonly counts: Uint32Array | null) {
    this.rules = rules.map((r) => {
      const levels = r.sourceFilter.split('/').map((l) => (l === '+' ? SINGLE : l === '#' ? MULTI : l));
      const parts: (string | number)[] = [];
      let last = 0;
      for (const m of r.destination.matchAll(/\$(\d+)/g)) {
        parts.push(r.destination.slice(last, m.index), Number(m[1]));
        last = m.index! + m[0].length;
      }
      parts.push(r.destination.slice(last));
      return { on: r.action === 'publish' ? 1 : r.action === 'subscribe' ? 2 : 3, levels, wildFirst: levels[0] === SINGLE || levels[0] === MULTI, re: new RegExp(r.regex), parts };
    });
    this.count = rules.length;
    this.active = rules.length > 0;
  }

  /** A PUBLISH topic name (or a will's) rewritten, or the same string. */
  publish(topic: string): string {
    return this.apply(1, topic);
  }

  /** A SUBSCRIBE/UNSUBSCRIBE filter rewritten (inside `$share/{group}/` and `$exclusive/`). */
  filter(filter: string): string {
    if (filter.startsWith('$share/')) {
      const slash = filter.indexOf('/', 7);
      if (slash === -1) return filter;
      const inner = filter.slice(slash + 1);
      const out = this.apply(2, inner);
      return out === inner ? filter : filter.slice(0, slash + 1) + out;
    }
    if (filter.startsWith('$exclusive/')) {
      const inner = filter.slice(11);
      const out = this.apply(2, inner);
      return out === inner ? filter : `$exclusive/${out}`;
    }
    return this.apply(2, filter);
  }

  private apply(bit: number, topic: string): string {
    const rules = this.rules;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if ((r.on & bit) === 0 || !matchesLevels(r.levels, r.wildFirst, topic)) continue;
      const m = r.re.exec(topic);
      if (m === null) continue;
      let out = '';
      const parts = r.parts;
      for (let k = 0; k < parts.length; k++) {
        const p = parts[k];
        out += typeof p === 'number' ? m[p] ?? '' : p;
      }
      if (this.counts !== null) Atomics.add(this.counts, i, 1);
      return out;
    }
    return topic;
  }
}

/** What every worker holds (WorkerStates.rewrite): the rules and their shared counters. */
export interface RewriteWorkerState {
  rules: RewriteRule[];
  /** One Uint32 per rule: the topics it rewrote, added to by every worker. */
  counts: SharedArrayBuffer;
}
