// `${field}` templates of rule actions: topics, payloads, keys, table columns. A template is
// parsed once when the action is added and then only reads the rule's output object: no string
// evaluation per message. `${payload.temp}` walks into objects (and into a payload that is JSON
// text); a missing field renders as the empty string (as a value: null).

export type Data = Record<string, unknown>;
export type Template = (data: Data) => string;
export type ValueTemplate = (data: Data) => unknown;

const PLACEHOLDER = /\$\{([^}]*)\}/g;
const PATH = /^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z0-9_$]+|\[\d+\])*$/;

/** A template's text is wrong (unclosed `${`, an empty or invalid path). */
export class TemplateError extends Error {
  constructor(message: string, readonly column: number) {
    super(message);
    this.name = 'TemplateError';
  }
}

type Part = string | string[];

function parse(text: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    const path = m[1].trim();
    if (!PATH.test(path)) throw new TemplateError(`invalid field path \${${m[1]}} at column ${m.index! + 1}`, m.index! + 1);
    if (m.index! > last) parts.push(text.slice(last, m.index));
    parts.push(splitPath(path));
    last = m.index! + m[0].length;
  }
  const open = text.indexOf('${', last);
  if (open >= 0) throw new TemplateError(`unclosed \${ at column ${open + 1}`, open + 1);
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

function splitPath(path: string): string[] {
  return path.replace(/\[(\d+)\]/g, '.$1').split('.');
}

/** The value at `path` in `data`; a string that is JSON text is walked into (payload.x). */
export function lookup(data: unknown, path: readonly string[]): unknown {
  let v: unknown = data;
  for (const key of path) {
    if (typeof v === 'string' || v instanceof Uint8Array) v = parseJson(v);
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function parseJson(v: string | Uint8Array): unknown {
  const text = typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  const c = text.charCodeAt(0);
  if (c !== 0x7b && c !== 0x5b) return undefined; // { or [
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A value as template text: strings as they are, buffers as UTF-8, objects as JSON. */
export function render(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** A text template: literal text and `${path}` placeholders. */
export function compileTemplate(text: string): Template {
  const parts = parse(text);
  if (parts.length === 0) return () => '';
  if (parts.length === 1 && typeof parts[0] === 'string') {
    const s = parts[0];
    return () => s;
  }
  return (data) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : render(lookup(data, p));
    return out;
  };
}

/** A value template: exactly `${path}` gives the raw value (a number stays a number, missing is
 * null); anything else renders as text. For SQL columns, documents and JSON bodies. */
export function compileValue(text: string): ValueTemplate {
  const parts = parse(text);
  if (parts.length === 1 && Array.isArray(parts[0])) {
    const path = parts[0];
    return (data) => {
      const v = lookup(data, path);
      return v === undefined ? null : v;
    };
  }
  const t = compileTemplate(text);
  return t;
}

/** Whether a template has placeholders (a constant topic can be checked when the rule is added). */
export function isConstant(text: string): boolean {
  return parse(text).every((p) => typeof p === 'string');
}
