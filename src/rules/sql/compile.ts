// Compiles a parsed rule into a tree of closures, once; evaluating a rule on an event then only
// calls them (no parsing, no string evaluation per event). Literal LIKE patterns, =~ filters and
// regular expressions are prepared at compile time.
//
// Semantics worth knowing:
// - WHERE passes only when it is exactly true; AND, OR and NOT read anything but true as false.
// - Comparisons (and IN, CASE x WHEN) with null or undefined are false; a number compares
//   numerically with a numeric string.
// - `+` adds numbers and concatenates when either side is a string; - * / div mod need numbers
//   (numeric strings are read as numbers); anything else, and division by zero, is a
//   SqlRuntimeError, as in EMQX.
// - An identifier is a SELECT alias when one of that name (any case) is visible: in WHERE every
//   alias, in a field the aliases of the fields before it. Otherwise it is an event field.
//   `payload` reads as text, `payload.x` reads the payload's JSON.
// - The output object is built by output.ts (names, nesting, fields left out when undefined).

import { matchLevels, parseFilter } from '../../auth/topic-filter.ts';
import type { ArithmeticOp, Expr, ParsedField, ParsedRule } from './ast.ts';
import type { RuleContext } from './context.ts';
import { SqlRuntimeError } from './errors.ts';
import { lookupFunction, type Impl } from './functions.ts';
import { outputBuilder, type Output } from './output.ts';
import { compare, describe, equals, needNumber, textOf, toStr, walk } from './values.ts';

export type CompiledRule = (ctx: RuleContext) => Record<string, unknown> | null;

/** One compiled expression: reads the event, and `row`, the values of the fields so far. */
type Eval = (ctx: RuleContext, row: unknown[]) => unknown;

const NO_ROW: unknown[] = [];
/** The payload as it came (a Buffer), for the arguments of functions that read bytes. */
const rawPayload: Eval = (c) => c.fields.payload;
const NO_ARGS: unknown[] = Object.freeze([]) as unknown as unknown[];

/** Compiles a parsed rule. */
export function compileRule(parsed: ParsedRule): CompiledRule {
  if (parsed.fields === '*') {
    const where = parsed.where === null ? null : new Compiler(new Map()).compile(parsed.where);
    return function selectAll(ctx) {
      if (where !== null && where(ctx, NO_ROW) !== true) return null;
      return allFields(ctx);
    };
  }
  return compileFields(parsed.fields, parsed.where);
}

function compileFields(fields: ParsedField[], whereExpr: Expr | null): CompiledRule {
  const scope = new Map<string, number>();
  const evals: Eval[] = [];
  fields.forEach((f, i) => {
    evals.push(new Compiler(scope).compile(f.expr));
    if (f.alias !== null) scope.set(f.alias.toLowerCase(), i);
  });
  let where: Eval | null = null;
  let whereAfter = false; // WHERE reads aliases, so it runs after the fields (EMQX's order)
  if (whereExpr !== null) {
    const c = new Compiler(scope);
    where = c.compile(whereExpr);
    whereAfter = c.usesRow;
  }
  const build = outputBuilder(fields);
  const n = evals.length;
  return function selectFields(ctx) {
    if (where !== null && !whereAfter && where(ctx, NO_ROW) !== true) return null;
    const row = new Array(n);
    for (let i = 0; i < n; i++) row[i] = evals[i](ctx, row);
    if (whereAfter && where!(ctx, row) !== true) return null;
    return build(row);
  };
}

/** `SELECT *`: every event field, buffers as text, in a fresh object. */
function allFields(ctx: RuleContext): Output {
  const out: Output = {};
  for (const k in ctx.fields) {
    const v = ctx.fields[k];
    if (v !== undefined) out[k] = textOf(v);
  }
  return out;
}

class Compiler {
  /** True once an expression read a SELECT alias. */
  usesRow = false;

  constructor(private readonly aliases: ReadonlyMap<string, number>) {}

  compile(e: Expr): Eval {
    switch (e.type) {
      case 'literal': {
        const value = e.value;
        return () => value;
      }
      case 'field':
        return this.field(e.name);
      case 'path':
        return this.path(e.root, e.path);
      case 'call':
        return this.call(e.name, e.args);
      case 'unary': {
        const operand = this.compile(e.operand);
        if (e.op === 'NOT') return (c, r) => operand(c, r) !== true;
        return (c, r) => -needNumber(operand(c, r), 'unary -');
      }
      case 'binary':
        return this.binary(e.op, this.compile(e.left), this.compile(e.right));
      case 'in': {
        const operand = this.compile(e.operand);
        const list = e.list.map((x) => this.compile(x));
        const negated = e.negated;
        return (c, r) => {
          const v = operand(c, r);
          if (v === null || v === undefined) return false;
          for (let i = 0; i < list.length; i++) if (equals(v, list[i](c, r))) return !negated;
          return negated;
        };
      }
      case 'like':
        return this.like(e.negated, this.compile(e.operand), e.pattern);
      case 'match':
        return this.match(this.compile(e.operand), e.filter);
      case 'case':
        return this.case_(e);
      case 'is_null': {
        const operand = this.compile(e.operand);
        const negated = e.negated;
        return (c, r) => {
          const v = operand(c, r);
          return (v === null || v === undefined) !== negated;
        };
      }
    }
  }

  private alias(name: string): number | undefined {
    const i = this.aliases.get(name.toLowerCase());
    if (i !== undefined) this.usesRow = true;
    return i;
  }

  private field(name: string): Eval {
    const i = this.alias(name);
    if (i !== undefined) return (_c, r) => r[i];
    const key = name.toLowerCase();
    if (key === 'payload') return (c) => textOf(c.fields.payload);
    return (c) => c.fields[key];
  }

  private path(root: string, path: (string | number)[]): Eval {
    const i = this.alias(root);
    if (i !== undefined) return (_c, r) => walk(r[i], path);
    const key = root.toLowerCase();
    if (key !== 'payload') return (c) => walk(c.fields[key], path);
    if (path.length === 1) {
      const k = path[0];
      return (c) => {
        const j = c.json();
        return j !== null && typeof j === 'object' && Object.hasOwn(j, k) ? (j as Output)[k] : undefined;
      };
    }
    return (c) => walk(c.json(), path);
  }

  private call(name: string, argExprs: Expr[]): Eval {
    const def = lookupFunction(name);
    if (def === undefined) throw new SqlRuntimeError(`unknown function ${name}()`); // the parser rejects these
    const impl: Impl = def.prepare?.(argExprs.map((a) => (a.type === 'literal' ? a.value : undefined))) ?? def.call;
    const args = argExprs.map((a) => (def.binary === true && a.type === 'field' && this.rawPayload(a.name) ? rawPayload : this.compile(a)));
    switch (args.length) {
      case 0:
        return (c) => impl(NO_ARGS, c);
      case 1: {
        const [a] = args;
        return (c, r) => impl([a(c, r)], c);
      }
      case 2: {
        const [a, b] = args;
        return (c, r) => impl([a(c, r), b(c, r)], c);
      }
      default:
        return (c, r) => impl(args.map((a) => a(c, r)), c);
    }
  }

  // Whether the identifier `name` is the event's payload (not an alias of that name).
  private rawPayload(name: string): boolean {
    return name.toLowerCase() === 'payload' && this.aliases.get('payload') === undefined;
  }

  private binary(op: string, l: Eval, r: Eval): Eval {
    switch (op) {
      case 'AND':
        return (c, w) => l(c, w) === true && r(c, w) === true;
      case 'OR':
        return (c, w) => l(c, w) === true || r(c, w) === true;
      case '=':
        return (c, w) => equals(l(c, w), r(c, w));
      case '!=':
        return (c, w) => {
          const d = compare(l(c, w), r(c, w));
          return d !== undefined && d !== 0;
        };
      case '<':
        return (c, w) => {
          const a = l(c, w);
          const b = r(c, w);
          if (typeof a === 'number' && typeof b === 'number') return a < b;
          const d = compare(a, b);
          return d !== undefined && d < 0;
        };
      case '<=':
        return (c, w) => {
          const a = l(c, w);
          const b = r(c, w);
          if (typeof a === 'number' && typeof b === 'number') return a <= b;
          const d = compare(a, b);
          return d !== undefined && d <= 0;
        };
      case '>':
        return (c, w) => {
          const a = l(c, w);
          const b = r(c, w);
          if (typeof a === 'number' && typeof b === 'number') return a > b;
          const d = compare(a, b);
          return d !== undefined && d > 0;
        };
      case '>=':
        return (c, w) => {
          const a = l(c, w);
          const b = r(c, w);
          if (typeof a === 'number' && typeof b === 'number') return a >= b;
          const d = compare(a, b);
          return d !== undefined && d >= 0;
        };
      default: {
        const f = arithmetic(op as ArithmeticOp);
        return (c, w) => f(l(c, w), r(c, w));
      }
    }
  }

  private like(negated: boolean, operand: Eval, patternExpr: Expr): Eval {
    const test = (re: RegExp, v: unknown): boolean => {
      if (v === null || v === undefined) return false;
      return re.test(toStr(v)) !== negated;
    };
    if (patternExpr.type === 'literal') {
      if (patternExpr.value === null) return () => false;
      const re = likeRegex(toStr(patternExpr.value));
      return (c, r) => test(re, operand(c, r));
    }
    const pattern = this.compile(patternExpr);
    return (c, r) => {
      const p = pattern(c, r);
      return p === null || p === undefined ? false : test(likeRegex(toStr(p)), operand(c, r));
    };
  }

  private match(operand: Eval, filterExpr: Expr): Eval {
    const test = (levels: ReturnType<typeof parseFilter>, topic: unknown): boolean => {
      topic = textOf(topic);
      return typeof topic === 'string' && matchLevels(levels, topic.split('/'));
    };
    if (filterExpr.type === 'literal') {
      const levels = parseFilter(toStr(filterExpr.value));
      return (c, r) => test(levels, operand(c, r));
    }
    const filter = this.compile(filterExpr);
    return (c, r) => {
      const f = textOf(filter(c, r));
      return typeof f === 'string' && f !== '' && test(parseFilter(f), operand(c, r));
    };
  }

  private case_(e: Extract<Expr, { type: 'case' }>): Eval {
    const subject = e.subject === null ? null : this.compile(e.subject);
    const whens = e.whens.map((w) => this.compile(w.when));
    const thens = e.whens.map((w) => this.compile(w.then));
    const otherwise = e.else === null ? () => null : this.compile(e.else);
    if (subject === null) {
      return (c, r) => {
        for (let i = 0; i < whens.length; i++) if (whens[i](c, r) === true) return thens[i](c, r);
        return otherwise(c, r);
      };
    }
    return (c, r) => {
      const s = subject(c, r);
      for (let i = 0; i < whens.length; i++) if (equals(s, whens[i](c, r))) return thens[i](c, r);
      return otherwise(c, r);
    };
  }
}

function arithmetic(op: ArithmeticOp): (a: unknown, b: unknown) => unknown {
  switch (op) {
    case '+':
      return function add(a, b) {
        if (typeof a === 'number' && typeof b === 'number') return a + b;
        a = textOf(a);
        b = textOf(b);
        const aText = typeof a === 'string';
        const bText = typeof b === 'string';
        if ((aText && (bText || typeof b === 'number')) || (bText && typeof a === 'number')) return toStr(a) + toStr(b);
        throw new SqlRuntimeError(`cannot add ${describe(a)} and ${describe(b)}`);
      };
    case '-':
      return (a, b) => needNumber(a, '-') - needNumber(b, '-');
    case '*':
      return (a, b) => needNumber(a, '*') * needNumber(b, '*');
    case '/':
      return (a, b) => needNumber(a, '/') / nonZero(needNumber(b, '/'));
    case 'div':
      return (a, b) => Math.trunc(needNumber(a, 'div') / nonZero(needNumber(b, 'div')));
    case 'mod':
      return (a, b) => needNumber(a, 'mod') % nonZero(needNumber(b, 'mod'));
  }
}

function nonZero(n: number): number {
  if (n === 0) throw new SqlRuntimeError('division by zero');
  return n;
}

/** A LIKE pattern as an anchored regular expression: % any run, _ one character, \ escapes. */
export function likeRegex(pattern: string): RegExp {
  let src = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\' && i + 1 < pattern.length) src += escapeRegex(pattern[++i]);
    else if (ch === '%') src += '.*';
    else if (ch === '_') src += '.';
    else src += escapeRegex(ch);
  }
  return new RegExp(src + '$', 'su');
}

function escapeRegex(ch: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(ch) ? '\\' + ch : ch;
}
