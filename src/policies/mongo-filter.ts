// Owns the mongodb query of a database policy: `collection` (fixed, no template) and `filter`, a
// JSON object (or its JSON text) whose string values may hold `${name}` templates; keys never do.
// A filled value is always a string, so a username cannot become an operator object. Templates are
// refused under operators that read a string as more than a value: $regex (a username `.*` would
// match everyone), $where/$function/$accumulator (JavaScript), $expr (a string starting with `$`
// is a field path there) and every other operator not in SAFE_OPERATORS.
import { fill, paramsOf } from './params.ts';
import { PolicyConfigError, type AclQuery, type AuthQuery, type PolicyParam } from './types.ts';

/** Operators whose string operands are compared as values. */
const SAFE_OPERATORS = new Set(['$eq', '$ne', '$in', '$nin', '$all', '$and', '$or', '$nor', '$elemMatch', '$gt', '$gte', '$lt', '$lte']);
const TEMPLATE = /\$\{[^}]*\}/;
const MAX_DEPTH = 16;

export interface MongoQuery {
  collection: string;
  filter: Record<string, unknown>;
}

/** The normalized collection name; throws PolicyConfigError('config.collection'). */
export function parseCollection(raw: unknown, field = 'config.collection'): string {
  if (typeof raw !== 'string' || raw === '') throw new PolicyConfigError(field, 'must be a non-empty collection name');
  if (TEMPLATE.test(raw)) throw new PolicyConfigError(field, 'cannot hold a template: put ${...} in the filter');
  if (/[$\0]/.test(raw) || raw.startsWith('system.')) throw new PolicyConfigError(field, 'may not contain $ or NUL, nor start with system.');
  return raw;
}

/** The normalized filter (an object) and the parameters it reads; throws PolicyConfigError(field). */
export function parseMongoFilter(raw: unknown, allowed: readonly PolicyParam[], field = 'config.filter'): { filter: Record<string, unknown>; params: Set<PolicyParam> } {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch (err) {
      throw new PolicyConfigError(field, `is not JSON: ${(err as Error).message}`);
    }
  }
  if (!isPlainObject(value)) throw new PolicyConfigError(field, 'must be an object, e.g. {"username": "${username}"}');
  const params = new Set<PolicyParam>();
  walk(value, { allowed, field, params, safe: true, depth: 0, path: '' });
  return { filter: value, params };
}

/** A copy of `filter` with every template filled (a missing value fills as ''). */
export function fillMongoFilter(filter: Record<string, unknown>, q: AuthQuery | AclQuery): Record<string, unknown> {
  return fillValue(filter, q) as Record<string, unknown>;
}

interface WalkState {
  allowed: readonly PolicyParam[];
  field: string;
  params: Set<PolicyParam>;
  /** No unsafe operator above this value. */
  safe: boolean;
  depth: number;
  path: string;
}

function walk(value: unknown, s: WalkState): void {
  if (s.depth > MAX_DEPTH) throw new PolicyConfigError(s.field, `is nested deeper than ${MAX_DEPTH} levels`);
  if (typeof value === 'string') {
    const used = paramsOf(value, s.allowed, s.field);
    if (used.size > 0 && !s.safe) throw new PolicyConfigError(s.field, `a template cannot be used under ${s.path} (only plain values and ${[...SAFE_OPERATORS].join(' ')} take templates)`);
    for (const p of used) s.params.add(p);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, { ...s, depth: s.depth + 1, path: `${s.path}[${i}]` }));
    return;
  }
  if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (TEMPLATE.test(key)) throw new PolicyConfigError(s.field, `a key cannot hold a template (${key}): only values can`);
      const safe = s.safe && (!key.startsWith('$') || SAFE_OPERATORS.has(key));
      walk(v, { ...s, safe, depth: s.depth + 1, path: s.path ? `${s.path}.${key}` : key });
    }
    return;
  }
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return;
  throw new PolicyConfigError(s.field, `holds a value that is not JSON at ${s.path || 'the top'}`);
}

function fillValue(value: unknown, q: AuthQuery | AclQuery): unknown {
  if (typeof value === 'string') return fill(value, q);
  if (Array.isArray(value)) return value.map((v) => fillValue(v, q));
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillValue(v, q)]));
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
