// The function calls a parsed rule makes, found by walking its fields and WHERE once at compile
// time (the rule engine asks which rules call a heavy decoder, src/rules/offload.ts).
import type { Expr, ParsedRule } from './ast.ts';

/** Calls `visit(name, args)` for each function call in `parsed` (name lower-case), nested ones
 * included. */
export function eachCall(parsed: ParsedRule, visit: (name: string, args: readonly Expr[]) => void): void {
  if (parsed.fields !== '*') for (const f of parsed.fields) walk(f.expr, visit);
  if (parsed.where !== null) walk(parsed.where, visit);
}

function walk(e: Expr, visit: (name: string, args: readonly Expr[]) => void): void {
  switch (e.type) {
    case 'literal':
    case 'field':
    case 'path':
      return;
    case 'call':
      visit(e.name, e.args);
      for (const a of e.args) walk(a, visit);
      return;
    case 'unary':
      walk(e.operand, visit);
      return;
    case 'binary':
      walk(e.left, visit);
      walk(e.right, visit);
      return;
    case 'in':
      walk(e.operand, visit);
      for (const a of e.list) walk(a, visit);
      return;
    case 'like':
      walk(e.operand, visit);
      walk(e.pattern, visit);
      return;
    case 'match':
      walk(e.operand, visit);
      walk(e.filter, visit);
      return;
    case 'case':
      if (e.subject !== null) walk(e.subject, visit);
      for (const w of e.whens) {
        walk(w.when, visit);
        walk(w.then, visit);
      }
      if (e.else !== null) walk(e.else, visit);
      return;
    case 'is_null':
      walk(e.operand, visit);
      return;
  }
}
