// The rule engine's SQL dialect (EMQX-like): `SELECT <fields | *> FROM "<filter or $EVENT.name>"
// [, ...] [WHERE <condition>]`. Pure: parse once (parseRule), compile once (compileRule), then
// evaluate per event on a RuleContext. Nothing here knows the broker.

export { EVENT_NAMES } from './ast.ts';
export type { EventName, RuleSource, ParsedRule, ParsedField, Expr, Literal, BinaryOp, CompareOp, ArithmeticOp } from './ast.ts';
export { SqlSyntaxError, SqlRuntimeError } from './errors.ts';
export { parseRule, parseExpression } from './parser.ts';
export { compileRule, type CompiledRule } from './compile.ts';
export { makeContext, EventContext, type RuleContext } from './context.ts';
export { explain } from './explain.ts';
export { FUNCTIONS } from './functions.ts';
export { eachCall } from './calls.ts';
