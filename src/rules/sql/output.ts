// The output object of a rule with a field list: where each field's value goes, built from the
// values of one evaluation.
// - An alias names its value; a path without alias nests (`payload.a.b` outputs
//   {payload: {a: {b: v}}}, as EMQX does); a field without alias keeps its name as written;
//   anything else is named by its source text.
// - Fields whose value is undefined (a missing path) are left out of the object; null stays.
// The common case (every value defined, no two fields on the same key) is one object literal
// generated once per rule with new Function from the field names (no evaluation per event),
// which V8 builds far faster than keyed stores; otherwise the fields are placed one by one.

import type { ParsedField } from './ast.ts';

export type Output = Record<string, unknown>;
type Build = (values: unknown[]) => Output;

/** The builder of a rule's output from its field values, in field order. */
export function outputBuilder(fields: readonly ParsedField[]): Build {
  const keyPaths = fields.map(keyPath);
  const slow = placeEach(keyPaths);
  const literal = literalBuilder(keyPaths);
  if (literal === null) return slow;
  return function build(values) {
    for (let i = 0; i < values.length; i++) if (values[i] === undefined) return slow(values);
    return literal(values);
  };
}

// Where a field goes: one key, or the keys of a nested path.
function keyPath(f: ParsedField): string[] {
  if (f.alias !== null) return [f.alias];
  if (f.expr.type === 'path') return [f.expr.root, ...f.expr.path.map(String)];
  return [f.expr.type === 'field' ? f.expr.name : f.text];
}

// ---- one object literal ----

type Node = { leaf: number } | { children: Map<string, Node> };

// `(v) => ({"t": v[0], "payload": {"a": v[1]}})`, or null when two fields claim the same key.
function literalBuilder(keyPaths: readonly string[][]): Build | null {
  const root = new Map<string, Node>();
  for (let i = 0; i < keyPaths.length; i++) {
    let level = root;
    const keys = keyPaths[i];
    for (let k = 0; k < keys.length - 1; k++) {
      let node = level.get(keys[k]);
      if (node === undefined) level.set(keys[k], (node = { children: new Map() }));
      if (!('children' in node)) return null;
      level = node.children;
    }
    if (level.has(keys[keys.length - 1])) return null;
    level.set(keys[keys.length - 1], { leaf: i });
  }
  return new Function('v', `return ${emit(root)};`) as Build;
}

function emit(level: Map<string, Node>): string {
  const entries = [...level].map(([key, node]) => {
    // A literal "__proto__" key would set the prototype; the computed form defines a property.
    const name = key === '__proto__' ? '["__proto__"]' : JSON.stringify(key);
    return `${name}: ${'leaf' in node ? `v[${node.leaf}]` : emit(node.children)}`;
  });
  return `{${entries.join(', ')}}`;
}

// ---- field by field ----

function placeEach(keyPaths: readonly string[][]): Build {
  const puts = keyPaths.map((keys, i) => {
    if (keys.length === 1) {
      const key = keys[0];
      return (out: Output, v: unknown) => {
        out[key] = v;
      };
    }
    // When no earlier field put a value where this path has an intermediate object, every
    // intermediate object found in the output was created by an earlier path: write into it.
    const shared = keyPaths.slice(0, i).some((p) => p.length < keys.length && p.every((k, j) => k === keys[j]));
    return shared ? (out: Output, v: unknown) => nestCopying(out, keys, v) : (out: Output, v: unknown) => nest(out, keys, v);
  });
  return function placeFields(values) {
    const out: Output = {};
    for (let i = 0; i < values.length; i++) if (values[i] !== undefined) puts[i](out, values[i]);
    return out;
  };
}

// Puts `v` at `keys` in `out`, creating the objects along the way that are not there yet.
function nest(out: Output, keys: readonly string[], v: unknown): void {
  let cur = out;
  for (let i = 0; i < keys.length - 1; i++) {
    const next = cur[keys[i]];
    cur = next === undefined ? (cur[keys[i]] = {}) : (next as Output);
  }
  cur[keys[keys.length - 1]] = v;
}

// nest() where an object along the way may be an event value (the payload's parsed JSON, shared
// with other rules): such objects are copied, never written into.
function nestCopying(out: Output, keys: readonly string[], v: unknown): void {
  let cur = out;
  for (let i = 0; i < keys.length - 1; i++) {
    const existing = cur[keys[i]];
    const next: Output = isMap(existing) ? { ...existing } : {};
    cur[keys[i]] = next;
    cur = next;
  }
  cur[keys[keys.length - 1]] = v;
}

function isMap(v: unknown): v is Output {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
}
