// Topic rewrite rules (EMQX's `rewrite`): their shape, their checking (the field named), and their
// compiled form a worker applies to PUBLISH topic names, SUBSCRIBE/UNSUBSCRIBE filters (the filter
// inside `$share/{group}/` too) and will topics. In order, the first rule whose action applies,
// whose source filter matches the topic and whose regex matches it rewrites it to its destination,
// `$1..$n` standing for the regex's groups and `${clientid}`, `${username}` for the client's; no
// rule: the topic stays as it is. A rule whose destination names a client's value it cannot use
// (no username, or one with `+`, `#` or `/`, which would change the topic's levels or make it a
// filter) does not apply to that client: the next rule is tried.
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

/** What a destination may name of the client besides the regex's groups. */
const PLACEHOLDERS = ['${clientid}', '${username}'];
/** What a destination has substituted: a group (`$n`, group 1) or a placeholder (group 2). */
const SUBSTITUTED = /\$(\d+)|\$\{(clientid|username)\}/g;
/** The parts of a compiled destination standing for the client's id and username. */
const CLIENTID = -1;
const USERNAME = -2;

/** Whose topic is rewritten: the values `${clientid}` and `${username}` stand for. */
export interface RewriteClient {
  readonly clientId: string;
  readonly username?: string;
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
  for (const m of v.destination.matchAll(/\$\{([^}]*)\}?/g)) {
    if (!PLACEHOLDERS.includes(m[0])) throw bad('destination', `${m[0]}: the placeholders are ${PLACEHOLDERS.join(' and ')}`);
  }
  const literal = v.destination.replace(SUBSTITUTED, 'x');
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

/** A client's last PUBLISH topic and its answer (the engine's RewriteMemo, Client.rewriteMemo;
 * declared here by its shape: the config's validators import this file). */
interface RewriteMemo {
  rules: object;
  topic: string;
  out: string;
  rule: number;
}

interface Compiled {
  /** Bit 1: applies to PUBLISH (and wills); bit 2: to SUBSCRIBE/UNSUBSCRIBE. */
  on: number;
  re: RegExp;
  /** The destination cut at its `$n` and placeholders: text, group number (CLIENTID, USERNAME for
   * the placeholders), text, ... */
  parts: (string | number)[];
}

/** A level of the source filters' trie: its literal children in an open-addressing table keyed
 * by a hash of the level's text (found without cutting the topic into strings or calling a Map),
 * its `+` child, and the rules ending here. */
interface Node {
  /** Pairs (hash | 1, index in `kids`); 0: an empty slot. null: no literal child. */
  table: Int32Array | null;
  mask: number;
  kids: { level: string; node: Node }[];
  single: Node | null;
  /** Rules whose filter has `#` here (matching this level's parent and below). */
  multi: number[];
  /** Rules whose filter ends at this level. */
  end: number[];
}

const newNode = (): Node => ({ table: null, mask: 0, kids: [], single: null, multi: [], end: [] });

/** FNV-1a of topic[from, to) (32 bits), never 0 (0 marks an empty slot). */
function hashOf(topic: string, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ topic.charCodeAt(i), 0x01000193);
  return h | 1;
}

/** Fills each node's table from its children (at most a third full, so probes stay short). */
function seal(node: Node): void {
  if (node.kids.length > 0) {
    let size = 4;
    while (size < node.kids.length * 3) size <<= 1;
    node.mask = size - 1;
    const table = (node.table = new Int32Array(size * 2));
    node.kids.forEach((k, i) => {
      const h = hashOf(k.level, 0, k.level.length);
      let j = h & node.mask;
      while (table[j * 2] !== 0) j = (j + 1) & node.mask;
      table[j * 2] = h;
      table[j * 2 + 1] = i;
    });
    for (const k of node.kids) seal(k.node);
  }
  if (node.single !== null) seal(node.single);
}

/** The rules of a worker, compiled once: their source filters in one trie, walked once per topic
 * without allocating, their regexes run only for the rules whose filter matched. */
export class CompiledRewrite {
  /** False without rules: the handlers then do nothing more. */
  readonly active: boolean;
  readonly count: number;
  private readonly rules: Compiled[];
  private readonly root = newNode();
  /** The rules whose filter matched the topic being rewritten (reused). */
  private hits: number[] = [];
  /** The rule that rewrote the last topic apply() was given; -1: none. */
  private lastRule = -1;

  /** `counts[i]`: topics rule i rewrote (shared with the main thread, Atomics). */
  constructor(rules: readonly RewriteRule[], private readonly counts: Uint32Array | null) {
    this.rules = rules.map((r, i) => {
      this.insert(r.sourceFilter, i);
      const parts: (string | number)[] = [];
      let last = 0;
      for (const m of r.destination.matchAll(SUBSTITUTED)) {
        parts.push(r.destination.slice(last, m.index), m[1] !== undefined ? Number(m[1]) : m[2] === 'clientid' ? CLIENTID : USERNAME);
        last = m.index! + m[0].length;
      }
      parts.push(r.destination.slice(last));
      return { on: r.action === 'publish' ? 1 : r.action === 'subscribe' ? 2 : 3, re: new RegExp(r.regex), parts };
    });
    seal(this.root);
    this.count = rules.length;
    this.active = rules.length > 0;
  }

  private insert(filter: string, rule: number): void {
    let node = this.root;
    for (const level of filter.split('/')) {
      if (level === '#') {
        node.multi.push(rule);
        return;
      }
      if (level === '+') {
        node = node.single ??= newNode();
        continue;
      }
      let child = node.kids.find((c) => c.level === level);
      if (child === undefined) node.kids.push((child = { level, node: newNode() }));
      node = child.node;
    }
    node.end.push(rule);
  }

  /** A PUBLISH topic name (or a will's) of `who` rewritten, or the same string. */
  publish(topic: string, who: RewriteClient): string {
    return this.apply(1, topic, who);
  }

  /** publish() for a client's PUBLISH, remembering its last topic in `holder.rewriteMemo` (the
   * client's id and username do not change while it is connected). */
  publishFrom(holder: { rewriteMemo?: RewriteMemo | null; identity: RewriteClient }, topic: string): string {
    const memo = holder.rewriteMemo;
    if (memo != null && memo.rules === this && memo.topic === topic) {
      if (memo.rule >= 0 && this.counts !== null) Atomics.add(this.counts, memo.rule, 1);
      return memo.out;
    }
    const out = this.apply(1, topic, holder.identity);
    if (memo == null) holder.rewriteMemo = { rules: this, topic, out, rule: this.lastRule };
    else {
      memo.rules = this;
      memo.topic = topic;
      memo.out = out;
      memo.rule = this.lastRule;
    }
    return out;
  }

  /** A SUBSCRIBE/UNSUBSCRIBE filter of `who` rewritten (inside `$share/{group}/` and `$exclusive/`). */
  filter(filter: string, who: RewriteClient): string {
    if (filter.startsWith('$share/')) {
      const slash = filter.indexOf('/', 7);
      if (slash === -1) return filter;
      const inner = filter.slice(slash + 1);
      const out = this.apply(2, inner, who);
      return out === inner ? filter : filter.slice(0, slash + 1) + out;
    }
    if (filter.startsWith('$exclusive/')) {
      const inner = filter.slice(11);
      const out = this.apply(2, inner, who);
      return out === inner ? filter : `$exclusive/${out}`;
    }
    return this.apply(2, filter, who);
  }

  /** Adds to `hits` the rules of `node`'s subtree whose filter matches topic[pos..]. */
  private walk(node: Node, topic: string, pos: number, first: boolean): void {
    // A filter starting with a wildcard matches no '$' topic.
    const wild = !first || topic.charCodeAt(0) !== 36;
    const multi = node.multi;
    if (wild) for (let i = 0; i < multi.length; i++) this.hits.push(multi[i]);
    // The level's end and its hash in one pass.
    const len = topic.length;
    let h = 0x811c9dc5 | 0;
    let end = pos;
    for (; end < len; end++) {
      const ch = topic.charCodeAt(end);
      if (ch === 47) break;
      h = Math.imul(h ^ ch, 0x01000193);
    }
    h |= 1;
    const last = end === len;
    const table = node.table;
    if (table !== null) {
      const mask = node.mask;
      for (let j = h & mask; ; j = (j + 1) & mask) {
        const k = table[j * 2];
        if (k === 0) break;
        if (k !== h) continue;
        const c = node.kids[table[j * 2 + 1]];
        if (c.level.length === end - pos && topic.startsWith(c.level, pos)) {
          this.reach(c.node, topic, end, last);
          break;
        }
      }
    }
    if (node.single !== null && wild) this.reach(node.single, topic, end, last);
  }

  /** At `node` after a level that ended at `end`. */
  private reach(node: Node, topic: string, end: number, last: boolean): void {
    if (last) {
      for (let i = 0; i < node.end.length; i++) this.hits.push(node.end[i]);
      for (let i = 0; i < node.multi.length; i++) this.hits.push(node.multi[i]); // 'a/#' matches 'a'
    } else {
      this.walk(node, topic, end + 1, false);
    }
  }

  private apply(bit: number, topic: string, who: RewriteClient): string {
    this.lastRule = -1;
    const hits = this.hits;
    hits.length = 0;
    this.walk(this.root, topic, 0, true);
    if (hits.length === 0) return topic;
    if (hits.length > 1) hits.sort((a, b) => a - b);
    const rules = this.rules;
    for (let k = 0; k < hits.length; k++) {
      const i = hits[k];
      const r = rules[i];
      if ((r.on & bit) === 0) continue;
      const m = r.re.exec(topic);
      if (m === null) continue;
      const out = destination(r.parts, m, who);
      if (out === null) continue;
      if (this.counts !== null) Atomics.add(this.counts, i, 1);
      this.lastRule = i;
      return out;
    }
    return topic;
  }
}

/** A rule's destination for a match of its regex and a client; null when it names a value of the
 * client that it cannot use (absent or empty, or holding `+`, `#` or `/`). */
function destination(parts: readonly (string | number)[], m: RegExpExecArray, who: RewriteClient): string | null {
  let out = '';
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p];
    if (typeof part === 'string') out += part;
    else if (part > 0) out += m[part] ?? '';
    else {
      const v = part === CLIENTID ? who.clientId : who.username;
      if (v === undefined || v === '' || /[+#/]/.test(v)) return null;
      out += v;
    }
  }
  return out;
}

/** What every worker holds (WorkerStates.rewrite): the rules and their shared counters. */
export interface RewriteWorkerState {
  rules: RewriteRule[];
  /** One Uint32 per rule: the topics it rewrote, added to by every worker. */
  counts: SharedArrayBuffer;
}
