// Owns MQTT topic-filter semantics for access control, in pure TypeScript: parsing a filter into
// levels, matching a topic name against a filter, and deciding whether one filter covers another
// (every topic the requested filter can match is matched by the rule filter) or overlaps it (some
// topic is matched by both). Filters that start
// with a wildcard never match topics whose first level starts with '$' (MQTT 5.0 section 4.7.2).

/** The single-level wildcard '+' as a parsed level (a literal "+" level stays a string). */
export const SINGLE: unique symbol = Symbol('+');
/** The multi-level wildcard '#' as a parsed level; only ever the last level. */
export const MULTI: unique symbol = Symbol('#');
export type FilterLevel = string | typeof SINGLE | typeof MULTI;

const MAX_TOPIC_BYTES = 65535;

/** Splits a filter into levels; '+' and '#' levels become SINGLE and MULTI. */
export function parseFilter(filter: string): FilterLevel[] {
  return filter.split('/').map(parseLevel);
}

function parseLevel(level: string): FilterLevel {
  if (level === '+') return SINGLE;
  if (level === '#') return MULTI;
  return level;
}

/** Why `filter` is not a valid MQTT topic filter, or undefined when it is. */
export function topicFilterProblem(filter: string): string | undefined {
  if (filter.length === 0) return 'a topic filter must not be empty';
  if (Buffer.byteLength(filter) > MAX_TOPIC_BYTES) return `a topic filter is at most ${MAX_TOPIC_BYTES} bytes`;
  if (filter.includes('\u0000')) return 'a topic filter must not contain U+0000';
  const levels = filter.split('/');
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    if (level === '#' && i !== levels.length - 1) return "'#' must be the last level";
    if (level.length > 1 && level.includes('#')) return "'#' must occupy a whole level";
    if (level.length > 1 && level.includes('+')) return "'+' must occupy a whole level";
  }
  return undefined;
}

/** Why `topic` is not a valid MQTT topic name, or undefined when it is. */
export function topicNameProblem(topic: string): string | undefined {
  if (topic.length === 0) return 'a topic name must not be empty';
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) return `a topic name is at most ${MAX_TOPIC_BYTES} bytes`;
  if (topic.includes('\u0000')) return 'a topic name must not contain U+0000';
  if (topic.includes('+') || topic.includes('#')) return 'a topic name must not contain wildcards';
  return undefined;
}

/** True when the topic name `topic` is matched by the topic filter `filter`. */
export function matches(filter: string, topic: string): boolean {
  return matchLevels(parseFilter(filter), topic.split('/'));
}

/** True when every topic name `requested` can match is also matched by `rule`. */
export function covers(rule: string, requested: string): boolean {
  return coverLevels(parseFilter(rule), parseFilter(requested));
}

/** matches() on parsed levels: `topic` is the topic name split at '/'. */
export function matchLevels(filter: readonly FilterLevel[], topic: readonly string[]): boolean {
  if (isWildcard(filter[0]) && topic[0].startsWith('$')) return false;
  for (let i = 0; i < filter.length; i++) {
    const level = filter[i];
    if (level === MULTI) return true; // also matches the parent level: 'a/#' matches 'a'
    if (i >= topic.length) return false;
    if (level !== SINGLE && level !== topic[i]) return false;
  }
  return filter.length === topic.length;
}

/** covers() on parsed levels. */
export function coverLevels(rule: readonly FilterLevel[], requested: readonly FilterLevel[]): boolean {
  // A rule starting with a wildcard matches no '$' topic: it cannot cover a request naming one.
  // A request starting with a wildcard matches no '$' topic either, so that case is fine.
  if (isWildcard(rule[0]) && isDollarLiteral(requested[0])) return false;
  for (let i = 0; i < rule.length; i++) {
    const level = rule[i];
    if (level === MULTI) return true;
    if (i >= requested.length) return false;
    const want = requested[i];
    if (want === MULTI) return false; // only a rule '#' covers a request '#', handled above
    if (level === SINGLE) continue; // covers a literal level and a '+' alike
    if (want !== level) return false; // a literal rule level covers only the same literal
  }
  if (requested.length === rule.length) return true;
  // The request is longer than the rule: only 'a' + '/#' (matching 'a' itself) is still covered,
  // and that case returned above. A request 'a/#' is never covered by the rule 'a'.
  return false;
}

/** True when some topic name is matched by both filters (parsed levels). */
export function overlapLevels(a: readonly FilterLevel[], b: readonly FilterLevel[]): boolean {
  if ((isWildcard(a[0]) && isDollarLiteral(b[0])) || (isWildcard(b[0]) && isDollarLiteral(a[0]))) return false;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const y = b[i];
    if (x === MULTI || y === MULTI) return true;
    if (x === SINGLE || y === SINGLE) continue;
    if (x !== y) return false;
  }
  if (a.length === b.length) return true;
  // One is longer: they still share a topic only when it goes on with '#' ('a/#' matches 'a').
  const longer = a.length > b.length ? a : b;
  return longer.length === n + 1 && longer[n] === MULTI;
}

function isWildcard(level: FilterLevel | undefined): boolean {
  return level === SINGLE || level === MULTI;
}

function isDollarLiteral(level: FilterLevel | undefined): boolean {
  return typeof level === 'string' && level.startsWith('$');
}
