// The parsed form of a rule: its fields, sources and WHERE condition as a JSON-serializable tree.
// The admin API's /rule/sql answers this tree as JSON, so node shapes favour readability: operators
// are spelled as in SQL, paths are arrays of keys, and no node holds a function or a position.

export type EventName = 'PUBLISH' | 'CONNECT' | 'DISCONNECT' | 'CLOSE' | 'SUBSCRIBE' | 'UNSUBSCRIBE' | 'ACK' | 'DELIVERED' | 'DROP' | 'FLAPPING';

export const EVENT_NAMES: readonly EventName[] = Object.freeze([
  'PUBLISH', 'CONNECT', 'DISCONNECT', 'CLOSE', 'SUBSCRIBE', 'UNSUBSCRIBE', 'ACK', 'DELIVERED', 'DROP', 'FLAPPING',
] as const);

/** A FROM source: a topic filter (the PUBLISH event on it) or a named event. */
export type RuleSource = { kind: 'topic'; filter: string } | { kind: 'event'; event: EventName };

export type Literal = string | number | boolean | null;

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type ArithmeticOp = '+' | '-' | '*' | '/' | 'div' | 'mod';
export type BinaryOp = CompareOp | ArithmeticOp | 'AND' | 'OR';

export type Expr =
  | { type: 'literal'; value: Literal }
  /** An event field (looked up by lower-case name) or a SELECT alias; `name` is as written. */
  | { type: 'field'; name: string }
  /** A path into a field: `payload.a.b[0]` is root "payload", path ["a", "b", 0]. */
  | { type: 'path'; root: string; path: (string | number)[] }
  /** A function call; `name` is lower-case. */
  | { type: 'call'; name: string; args: Expr[] }
  | { type: 'unary'; op: 'NOT' | '-'; operand: Expr }
  | { type: 'binary'; op: BinaryOp; left: Expr; right: Expr }
  | { type: 'in'; negated: boolean; operand: Expr; list: Expr[] }
  | { type: 'like'; negated: boolean; operand: Expr; pattern: Expr }
  /** `topic =~ 'a/+/c'`: the operand is a topic name, the filter an MQTT topic filter. */
  | { type: 'match'; operand: Expr; filter: Expr }
  /** `CASE [subject] WHEN .. THEN .. [ELSE ..] END`; without a subject each `when` is a condition. */
  | { type: 'case'; subject: Expr | null; whens: { when: Expr; then: Expr }[]; else: Expr | null }
  | { type: 'is_null'; negated: boolean; operand: Expr };

export interface ParsedField {
  expr: Expr;
  alias: string | null;
  /** The source text of the expression, e.g. "lower(clientid)". */
  text: string;
}

export interface ParsedRule {
  fields: ParsedField[] | '*';
  sources: RuleSource[];
  where: Expr | null;
  /** Events this rule listens to (PUBLISH when any topic source), and the topic filters of PUBLISH. */
  events: EventName[];
  /** Topic filters of PUBLISH; `$EVENT.PUBLISH` contributes "#" (every topic not starting with '$'). */
  filters: string[];
}
