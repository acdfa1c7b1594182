// The built-in functions of the rule SQL, by lower-case name, each with its arity. Most are pure
// functions of their arguments; a few read the event (topic(n), clientid(), payload(), ...). A
// function whose argument is a regular expression compiles it once when that argument is a
// literal (prepare), so the parser can reject a bad pattern with its position and no message pays
// for compiling it. Failures on one event's values throw SqlRuntimeError.

import { createHash } from 'node:crypto';

import type { RuleContext } from './context.ts';
import { SqlRuntimeError } from './errors.ts';
import { decodeSparkplug, SparkplugDecodeError } from './sparkplug.ts';
import { describe, needNumber, parseJsonObject, textOf, toStr, walk } from './values.ts';
import { schemaCodecs } from './schemas.ts';

export type Impl = (args: unknown[], ctx: RuleContext) => unknown;

export interface FunctionDef {
  min: number;
  max: number;
  call: Impl;
  /**
   * Called once with the arguments that are literals (undefined where an argument is not): the
   * call specialised for them, or undefined to keep `call`. Throws Error for a bad literal at
   * position `preparedArg`.
   */
  prepare?: (literals: unknown[]) => Impl | undefined;
  preparedArg?: number;
  /** Reads bytes: an argument that is the event's `payload` field gets the payload as it came (a
   * Buffer), not as UTF-8 text. */
  binary?: boolean;
}

const VARIADIC = Number.POSITIVE_INFINITY;

function str(name: string, v: unknown): string {
  if (v === undefined || v === null) throw new SqlRuntimeError(`${name}() needs a string, got ${describe(v)}`);
  return toStr(v);
}

function finite(name: string, n: number): number {
  if (!Number.isFinite(n)) throw new SqlRuntimeError(`${name}() has no finite result for these arguments`);
  return n;
}

function math(name: string, f: (x: number) => number): FunctionDef {
  return { min: 1, max: 1, call: (a) => finite(name, f(needNumber(a[0], `${name}()`))) };
}

function string1(name: string, f: (s: string) => unknown): FunctionDef {
  return { min: 1, max: 1, call: (a) => f(str(name, a[0])) };
}

function field(name: string): FunctionDef {
  return { min: 0, max: 0, call: (_a, ctx) => ctx.fields[name] };
}

function regex(name: string, pattern: unknown, flags: string): RegExp {
  try {
    return new RegExp(str(name, pattern), flags);
  } catch (err) {
    throw new SqlRuntimeError(`${name}(): invalid regular expression ${describe(pattern)}`, { cause: err });
  }
}

// Splits on `sep`, dropping empty parts as EMQX does ("/a//b/" by "/" is ["a", "b"]).
function split(s: string, sep: string): string[] {
  if (sep === '') return [...s];
  return s.split(sep).filter((p) => p !== '');
}

// Splits on any of the characters of `seps`, dropping empty parts.
function tokens(s: string, seps: string): string[] {
  const out: string[] = [];
  let part = '';
  for (const c of s) {
    if (seps.includes(c)) {
      if (part !== '') out.push(part);
      part = '';
    } else {
      part += c;
    }
  }
  if (part !== '') out.push(part);
  return out;
}

function asMap(name: string, v: unknown): Record<string, unknown> {
  if (typeof v === 'string' || v instanceof Uint8Array) v = parseJsonObject(v);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new SqlRuntimeError(`${name}() needs a map, got ${describe(v)}`);
  return v as Record<string, unknown>;
}

function keyPath(name: string, key: unknown): string[] {
  return str(name, key).split('.');
}

// A copy of `map` with `value` at `path`, copying each object along the path.
function putPath(map: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const copy = { ...map };
  const [head, ...rest] = path;
  if (rest.length === 0) {
    copy[head] = value;
  } else {
    const child = Object.hasOwn(map, head) ? map[head] : undefined;
    const inner = child !== null && typeof child === 'object' && !Array.isArray(child) ? (child as Record<string, unknown>) : {};
    copy[head] = putPath(inner, rest, value);
  }
  return copy;
}

// ---- time ----

type Unit = 'second' | 'millisecond' | 'microsecond' | 'nanosecond';
const UNITS: Record<Unit, number> = { second: 1e-3, millisecond: 1, microsecond: 1e3, nanosecond: 1e6 }; // per millisecond

function unit(name: string, v: unknown, fallback: Unit): Unit {
  if (v === undefined) return fallback;
  const u = str(name, v).toLowerCase();
  if (!Object.hasOwn(UNITS, u)) throw new SqlRuntimeError(`${name}(): unknown time unit ${describe(v)}: expected second, millisecond, microsecond or nanosecond`);
  return u as Unit;
}

const FRACTION_DIGITS: Record<Unit, number> = { second: 0, millisecond: 3, microsecond: 6, nanosecond: 9 };

// RFC 3339 in UTC, with as many fraction digits as the unit has (ts counted in `u`).
function rfc3339(ts: number, u: Unit): string {
  const perSecond = UNITS[u] * 1000;
  const seconds = Math.floor(ts / perSecond);
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  const digits = FRACTION_DIGITS[u];
  if (digits === 0) return iso + 'Z';
  const fraction = Math.round(ts - seconds * perSecond);
  return `${iso}.${String(fraction).padStart(digits, '0')}Z`;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseRfc3339(name: string, s: string, u: Unit): number {
  const m = RFC3339.exec(s);
  const ms = m ? Date.parse(`${m[1].replace(/[t ]/, 'T')}${m[3].toUpperCase()}`) : NaN;
  if (!m || Number.isNaN(ms)) throw new SqlRuntimeError(`${name}(): not an RFC 3339 time: ${describe(s)}`);
  const fraction = m[2] === undefined ? 0 : Number('0' + m[2]);
  const seconds = ms / 1000 + fraction;
  return Math.floor(seconds * UNITS[u] * 1000 + 1e-6);
}

function nowIn(u: Unit): number {
  if (u === 'millisecond') return Date.now();
  if (u === 'second') return Math.floor(Date.now() / 1000);
  // Microseconds and nanoseconds: wall clock plus the sub-millisecond part of the monotonic clock.
  // Nanoseconds exceed 2^53, so they are as precise as a double is (about 256 ns).
  const subMs = Number(process.hrtime.bigint() % 1_000_000n) / 1e6;
  return Math.floor((Date.now() + subMs) * UNITS[u]);
}

// ---- encoding ----

const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;
const HEX = /^([0-9a-fA-F]{2})*$/;

function bytes(v: unknown): Buffer {
  return v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : Buffer.from(toStr(v), 'utf8');
}

function digest(algorithm: string): FunctionDef {
  return { min: 1, max: 1, call: (a) => createHash(algorithm).update(bytes(a[0])).digest('hex') };
}

const hexEncode: FunctionDef = { min: 1, max: 1, call: (a) => bytes(a[0]).toString('hex') };
const hexDecode: FunctionDef = {
  min: 1,
  max: 1,
  call: (a) => {
    const s = str('hex_decode', a[0]);
    if (!HEX.test(s)) throw new SqlRuntimeError(`hex_decode(): not hexadecimal: ${describe(s)}`);
    return Buffer.from(s, 'hex').toString('utf8');
  },
};

// ---- types ----

function toInt(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return Math.trunc(needNumber(textOf(v), 'int()'));
}

function toBool(v: unknown): boolean {
  if (v === true || v === 'true' || v === 1) return true;
  if (v === false || v === 'false' || v === 0) return false;
  throw new SqlRuntimeError(`bool() needs true, false, "true", "false", 1 or 0, got ${describe(v)}`);
}

function isNull(v: unknown): boolean {
  return v === null || v === undefined;
}

// ---- the table ----

const regexMatch: FunctionDef = {
  min: 2,
  max: 2,
  call: (a) => regex('regex_match', a[1], '').test(str('regex_match', a[0])),
  preparedArg: 1,
  prepare: (lit) => {
    if (typeof lit[1] !== 'string') return undefined;
    const re = regex('regex_match', lit[1], '');
    return (a) => re.test(str('regex_match', a[0]));
  },
};

const regexReplace: FunctionDef = {
  min: 3,
  max: 3,
  call: (a) => str('regex_replace', a[0]).replace(regex('regex_replace', a[1], 'g'), str('regex_replace', a[2])),
  preparedArg: 1,
  prepare: (lit) => {
    if (typeof lit[1] !== 'string') return undefined;
    const re = regex('regex_replace', lit[1], 'g');
    return (a) => str('regex_replace', a[0]).replace(re, str('regex_replace', a[2]));
  },
};

const length: FunctionDef = {
  min: 1,
  max: 1,
  call: (a) => (Array.isArray(a[0]) ? a[0].length : [...str('strlen', a[0])].length),
};

const mod: FunctionDef = {
  min: 2,
  max: 2,
  call: (a) => {
    const y = needNumber(a[1], 'mod()');
    if (y === 0) throw new SqlRuntimeError('mod(): division by zero');
    return needNumber(a[0], 'mod()') % y;
  },
};

// schema_decode(name, payload[, messageType]) and schema_encode(name, map[, messageType]): the
// schema registry's codecs (./schemas.ts); a payload that does not decode fails the row.
function schemaCall(name: string, a: unknown[], fn: (name: string, type: string | undefined) => unknown): unknown {
  const schema = str(name, a[0]);
  const type = a.length > 2 && a[2] !== undefined && a[2] !== null ? str(name, a[2]) : undefined;
  try {
    return fn(schema, type);
  } catch (err) {
    throw new SqlRuntimeError(`${name}(${describe(schema)}): ${(err as Error).message}`, { cause: err });
  }
}

function codecs(name: string) {
  const c = schemaCodecs();
  if (c === null) throw new SqlRuntimeError(`${name}(): the schema registry is not running`);
  return c;
}

const schemaDecode: FunctionDef = {
  min: 2,
  max: 3,
  binary: true,
  call: (a) => {
    const c = codecs('schema_decode');
    const p = a[1];
    const payload = p instanceof Uint8Array ? p : typeof p === 'string' ? Buffer.from(p) : null;
    if (payload === null) throw new SqlRuntimeError(`schema_decode() needs a payload, got ${describe(p)}`);
    return schemaCall('schema_decode', a, (s, t) => c.decode(s, payload, t));
  },
};

const schemaEncode: FunctionDef = {
  min: 2,
  max: 3,
  call: (a) => {
    const c = codecs('schema_encode');
    return schemaCall('schema_encode', a, (s, t) => c.encode(s, a[1], t));
  },
};

const power: FunctionDef = { min: 2, max: 2, call: (a) => finite('power', needNumber(a[0], 'power()') ** needNumber(a[1], 'power()')) };

export const FUNCTIONS: Readonly<Record<string, FunctionDef>> = Object.freeze({
  // strings
  lower: string1('lower', (s) => s.toLowerCase()),
  upper: string1('upper', (s) => s.toUpperCase()),
  trim: string1('trim', (s) => s.trim()),
  ltrim: string1('ltrim', (s) => s.trimStart()),
  rtrim: string1('rtrim', (s) => s.trimEnd()),
  reverse: string1('reverse', (s) => [...s].reverse().join('')),
  concat: { min: 2, max: VARIADIC, call: (a) => a.map(toStr).join('') },
  substr: {
    min: 2,
    max: 3,
    call: (a) => {
      const s = str('substr', a[0]);
      const start = Math.max(0, Math.trunc(needNumber(a[1], 'substr()')));
      return a.length > 2 ? s.slice(start, start + Math.max(0, Math.trunc(needNumber(a[2], 'substr()')))) : s.slice(start);
    },
  },
  replace: { min: 3, max: 3, call: (a) => str('replace', a[0]).replaceAll(str('replace', a[1]), str('replace', a[2])) },
  split: { min: 2, max: 2, call: (a) => split(str('split', a[0]), str('split', a[1])) },
  tokens: { min: 2, max: 2, call: (a) => tokens(str('tokens', a[0]), str('tokens', a[1])) },
  nth: {
    min: 2,
    max: 2,
    call: (a) => {
      const n = Math.trunc(needNumber(a[0], 'nth()'));
      if (!Array.isArray(a[1])) throw new SqlRuntimeError(`nth() needs an array, got ${describe(a[1])}`);
      return n >= 1 && n <= a[1].length ? a[1][n - 1] : undefined;
    },
  },
  strlen: length,
  length,
  regex_match: regexMatch,
  regex_replace: regexReplace,
  // math
  abs: math('abs', Math.abs),
  ceil: math('ceil', Math.ceil),
  floor: math('floor', Math.floor),
  round: math('round', Math.round),
  sqrt: math('sqrt', Math.sqrt),
  exp: math('exp', Math.exp),
  ln: math('ln', Math.log),
  log10: math('log10', Math.log10),
  log2: math('log2', Math.log2),
  sin: math('sin', Math.sin),
  cos: math('cos', Math.cos),
  tan: math('tan', Math.tan),
  power,
  pow: power,
  mod,
  random: { min: 0, max: 0, call: () => Math.random() },
  // types
  str: { min: 1, max: 1, call: (a) => toStr(a[0]) },
  int: { min: 1, max: 1, call: (a) => toInt(a[0]) },
  float: { min: 1, max: 1, call: (a) => (typeof a[0] === 'boolean' ? Number(a[0]) : needNumber(textOf(a[0]), 'float()')) },
  bool: { min: 1, max: 1, call: (a) => toBool(a[0]) },
  is_null: { min: 1, max: 1, call: (a) => isNull(a[0]) },
  is_not_null: { min: 1, max: 1, call: (a) => !isNull(a[0]) },
  is_num: { min: 1, max: 1, call: (a) => typeof a[0] === 'number' },
  is_str: { min: 1, max: 1, call: (a) => typeof a[0] === 'string' },
  is_bool: { min: 1, max: 1, call: (a) => typeof a[0] === 'boolean' },
  is_array: { min: 1, max: 1, call: (a) => Array.isArray(a[0]) },
  is_map: { min: 1, max: 1, call: (a) => a[0] !== null && typeof a[0] === 'object' && !Array.isArray(a[0]) && !(a[0] instanceof Uint8Array) },
  coalesce: { min: 1, max: VARIADIC, call: (a) => a.find((v) => !isNull(v)) ?? null },
  // JSON and maps
  json_decode: {
    min: 1,
    max: 1,
    call: (a) => {
      try {
        return JSON.parse(str('json_decode', a[0]));
      } catch (err) {
        throw new SqlRuntimeError(`json_decode(): not JSON: ${describe(a[0])}`, { cause: err });
      }
    },
  },
  // Sparkplug B (docs/features/sparkplug.md): the payload as a map {timestamp, seq, uuid, body, metrics}
  spb_decode: {
    min: 1,
    max: 1,
    binary: true,
    call: (a) => {
      if (a[0] === undefined || a[0] === null) throw new SqlRuntimeError(`spb_decode() needs a payload, got ${describe(a[0])}`);
      try {
        return decodeSparkplug(a[0] instanceof Uint8Array ? a[0] : Buffer.from(toStr(a[0]), 'utf8'));
      } catch (err) {
        if (err instanceof SparkplugDecodeError) throw new SqlRuntimeError(`spb_decode(): ${err.message}`, { cause: err });
        throw err;
      }
    },
  },
  json_encode: { min: 1, max: 1, call: (a) => JSON.stringify(textOf(a[0]) ?? null) },
  map_get: {
    min: 2,
    max: 3,
    call: (a) => {
      const v = walk(asMap('map_get', a[1]), keyPath('map_get', a[0]));
      return v === undefined ? a[2] : v;
    },
  },
  map_put: { min: 3, max: 3, call: (a) => putPath(asMap('map_put', a[2]), keyPath('map_put', a[0]), a[1]) },
  // time
  now_timestamp: { min: 0, max: 1, call: (a) => nowIn(unit('now_timestamp', a[0], 'millisecond')) },
  now_rfc3339: {
    min: 0,
    max: 1,
    call: (a) => {
      const u = unit('now_rfc3339', a[0], 'second');
      return rfc3339(nowIn(u), u);
    },
  },
  unix_ts_to_rfc3339: {
    min: 1,
    max: 2,
    call: (a) => rfc3339(Math.trunc(needNumber(a[0], 'unix_ts_to_rfc3339()')), unit('unix_ts_to_rfc3339', a[1], 'second')),
  },
  rfc3339_to_unix_ts: {
    min: 1,
    max: 2,
    call: (a) => parseRfc3339('rfc3339_to_unix_ts', str('rfc3339_to_unix_ts', a[0]), unit('rfc3339_to_unix_ts', a[1], 'second')),
  },
  // encoding
  base64_encode: { min: 1, max: 1, call: (a) => bytes(a[0]).toString('base64') },
  base64_decode: {
    min: 1,
    max: 1,
    call: (a) => {
      const s = str('base64_decode', a[0]).trim();
      if (!BASE64.test(s) || s.replace(/=+$/, '').length % 4 === 1) throw new SqlRuntimeError(`base64_decode(): not base64: ${describe(s)}`);
      return Buffer.from(s, 'base64').toString('utf8');
    },
  },
  hex_encode: hexEncode,
  bin2hexstr: hexEncode,
  hex_decode: hexDecode,
  hexstr2bin: hexDecode,
  md5: digest('md5'),
  // the schema registry
  schema_decode: schemaDecode,
  schema_encode: schemaEncode,
  sha: digest('sha1'),
  sha1: digest('sha1'),
  sha256: digest('sha256'),
  // the event
  topic: {
    min: 0,
    max: 1,
    call: (a, ctx) => {
      const topic = ctx.fields.topic;
      if (a.length === 0) return topic;
      if (typeof topic !== 'string') return undefined;
      const n = Math.trunc(needNumber(a[0], 'topic()'));
      return n >= 1 ? topic.split('/')[n - 1] : undefined;
    },
  },
  clientid: field('clientid'),
  username: field('username'),
  qos: field('qos'),
  timestamp: field('timestamp'),
  payload: { min: 0, max: 0, call: (_a, ctx) => textOf(ctx.fields.payload) },
} satisfies Record<string, FunctionDef>);

/** The function named `name` (any case), or undefined. */
export function lookupFunction(name: string): FunctionDef | undefined {
  const lower = name.toLowerCase();
  return Object.hasOwn(FUNCTIONS, lower) ? FUNCTIONS[lower] : undefined;
}
