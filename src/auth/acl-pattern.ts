// Owns ACL topic patterns: an MQTT topic filter whose levels may contain the placeholders %c
// (client id) and %u (username); %% is a literal '%'. A pattern is compiled once and expanded per
// client. Substituted text is always literal: a '+' or '#' in a client id is not a wildcard, and a
// '/' in it splits the level (the pattern expands exactly as its text would read).
import { MULTI, SINGLE, topicFilterProblem, type FilterLevel } from './topic-filter.ts';

type Part = string | typeof CLIENT_ID | typeof USERNAME;
const CLIENT_ID: unique symbol = Symbol('%c');
const USERNAME: unique symbol = Symbol('%u');

/** A level of a pattern: a wildcard, or text made of literal parts and placeholders. */
type PatternLevel = typeof SINGLE | typeof MULTI | { parts: Part[] };

export interface AclPattern {
  readonly source: string;
  /** Levels ready to use when the pattern has no placeholder. */
  readonly fixed: FilterLevel[] | undefined;
  readonly usesUsername: boolean;
  readonly levels: readonly PatternLevel[];
}

/** Why `topic` is not a valid ACL pattern, or undefined when it is. */
export function aclPatternProblem(topic: string): string | undefined {
  const placeholder = /%(.?)/g;
  for (const m of topic.matchAll(placeholder)) {
    if (m[1] !== 'c' && m[1] !== 'u' && m[1] !== '%') {
      return `unknown placeholder '%${m[1]}' (use %c for the client id, %u for the username, %% for '%')`;
    }
  }
  const filterProblem = topicFilterProblem(topic);
  if (filterProblem !== undefined) return filterProblem;
  for (const level of topic.split('/')) {
    if ((level.includes('+') || level.includes('#')) && level.includes('%')) return 'a wildcard level cannot hold a placeholder';
  }
  return undefined;
}

/** Compiles a pattern already checked with aclPatternProblem(). */
export function compileAclPattern(topic: string): AclPattern {
  const levels = topic.split('/').map(compileLevel);
  const hasPlaceholder = levels.some((l) => typeof l === 'object' && l.parts.some((p) => typeof p !== 'string'));
  const usesUsername = levels.some((l) => typeof l === 'object' && l.parts.includes(USERNAME));
  const fixed = hasPlaceholder ? undefined : levels.map(fixedLevel);
  return { source: topic, fixed, usesUsername, levels };
}

function compileLevel(level: string): PatternLevel {
  if (level === '+') return SINGLE;
  if (level === '#') return MULTI;
  const parts: Part[] = [];
  let text = '';
  for (let i = 0; i < level.length; i++) {
    const ch = level[i];
    if (ch !== '%') {
      text += ch;
      continue;
    }
    const next = level[++i];
    if (next === '%') {
      text += '%';
      continue;
    }
    if (text !== '') parts.push(text);
    text = '';
    parts.push(next === 'c' ? CLIENT_ID : USERNAME);
  }
  if (text !== '' || parts.length === 0) parts.push(text);
  return { parts };
}

function fixedLevel(level: PatternLevel): FilterLevel {
  return typeof level === 'object' ? (level.parts as string[]).join('') : level;
}

/**
 * The filter levels of `pattern` for one client, or undefined when the pattern uses %u and the
 * client has no username (such a rule never applies).
 */
export function expandAclPattern(pattern: AclPattern, clientId: string, username: string | undefined): FilterLevel[] | undefined {
  if (pattern.fixed !== undefined) return pattern.fixed;
  if (pattern.usesUsername && username === undefined) return undefined;
  const out: FilterLevel[] = [];
  for (const level of pattern.levels) {
    if (typeof level !== 'object') {
      out.push(level);
      continue;
    }
    let text = '';
    for (const part of level.parts) text += part === CLIENT_ID ? clientId : part === USERNAME ? (username as string) : part;
    for (const piece of text.split('/')) out.push(piece);
  }
  return out;
}
