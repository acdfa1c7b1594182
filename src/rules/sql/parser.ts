// The rule SQL parser: recursive descent over the lexer's tokens, one function per precedence
// level. Checks everything that can be checked without an event: function names and arities,
// literal regular expressions, literal topic filters of =~, FROM sources. Every error is a
// SqlSyntaxError at the offending token.
//
// Precedence, loosest first: OR; AND; NOT; comparisons (= != <> < <= > >= =~ LIKE IN IS);
// + -; * / div mod; unary -.
//
//   rule   := SELECT ('*' | field (',' field)*) FROM source (',' source)* [WHERE expr] [';']
//   field  := expr [AS name]
//   source := "topic/filter" | "$EVENT.NAME" | "$events/name"

import { topicFilterProblem } from '../../auth/topic-filter.ts';
import type { ArithmeticOp, CompareOp, Expr, ParsedField, ParsedRule, RuleSource } from './ast.ts';
import { SqlSyntaxError } from './errors.ts';
import { lookupFunction } from './functions.ts';
import { tokenize, type Token } from './lexer.ts';
import { listenedTo, resolveSource } from './sources.ts';

const KEYWORDS = new Set([
  'SELECT', 'FROM', 'WHERE', 'AS', 'AND', 'OR', 'NOT', 'LIKE', 'IN', 'IS', 'NULL', 'TRUE', 'FALSE',
  'CASE', 'WHEN', 'THEN', 'ELSE', 'END', 'DIV', 'MOD',
]);

const COMPARE_OPS: Record<string, CompareOp> = { '=': '=', '!=': '!=', '<>': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };

const END_OF_INPUT = 'end of input';

/** Parses a rule's SQL; throws SqlSyntaxError. */
export function parseRule(sql: string): ParsedRule {
  return new Parser(sql).rule();
}

/** Parses one expression (for tests and tools); throws SqlSyntaxError. */
export function parseExpression(text: string): Expr {
  const p = new Parser(text);
  const e = p.expression();
  p.expectEnd([END_OF_INPUT]);
  return e;
}

class Parser {
  private readonly tokens: Token[];
  private at = 0;

  constructor(private readonly source: string) {
    this.tokens = tokenize(source);
  }

  rule(): ParsedRule {
    this.expectKeyword('SELECT');
    const fields = this.fields();
    this.expectKeyword('FROM');
    const sources = [this.source_()];
    while (this.acceptOp(',')) sources.push(this.source_());
    let where: Expr | null = null;
    if (this.acceptKeyword('WHERE')) {
      where = this.expression();
      this.expectEnd([END_OF_INPUT]);
    } else {
      this.expectEnd(['","', 'WHERE', END_OF_INPUT]);
    }
    return { fields, sources, where, ...listenedTo(sources) };
  }

  expression(): Expr {
    return this.or();
  }

  /** An optional ';', then the end; `expected` names what else could have come. */
  expectEnd(expected: string[]): void {
    this.acceptOp(';');
    if (this.peek().kind !== 'eof') this.fail(this.peek(), expected);
  }

  // ---- clauses ----

  private fields(): ParsedField[] | '*' {
    if (this.acceptOp('*')) return '*';
    const fields = [this.field()];
    while (this.acceptOp(',')) fields.push(this.field());
    return fields;
  }

  private field(): ParsedField {
    const first = this.peek();
    const expr = this.expression();
    const text = this.source.slice(first.start, this.tokens[this.at - 1].end);
    let alias: string | null = null;
    if (this.acceptKeyword('AS')) {
      const t = this.peek();
      if ((t.kind === 'ident' && !this.isKeyword(t)) || t.kind === 'quoted_ident' || t.kind === 'string') {
        alias = String(this.next().value);
      } else {
        this.fail(t, ['an alias']);
      }
    }
    return { expr, alias, text };
  }

  private source_(): RuleSource {
    const t = this.peek();
    if (t.kind !== 'string') this.fail(t, ['a quoted topic filter or event']);
    this.next();
    const source = resolveSource(String(t.value));
    if (typeof source === 'string') throw this.error(t, source);
    return source;
  }

  // ---- expressions, loosest first ----

  private or(): Expr {
    let left = this.and();
    while (this.acceptKeyword('OR')) left = { type: 'binary', op: 'OR', left, right: this.and() };
    return left;
  }

  private and(): Expr {
    let left = this.not();
    while (this.acceptKeyword('AND')) left = { type: 'binary', op: 'AND', left, right: this.not() };
    return left;
  }

  private not(): Expr {
    if (this.acceptKeyword('NOT')) return { type: 'unary', op: 'NOT', operand: this.not() };
    return this.comparison();
  }

  private comparison(): Expr {
    const left = this.additive();
    const t = this.peek();
    if (t.kind === 'op' && Object.hasOwn(COMPARE_OPS, t.text)) {
      this.next();
      return { type: 'binary', op: COMPARE_OPS[t.text], left, right: this.additive() };
    }
    if (t.kind === 'op' && t.text === '=~') {
      this.next();
      const filterToken = this.peek();
      const filter = this.additive();
      if (filter.type === 'literal') {
        const problem = typeof filter.value === 'string' ? topicFilterProblem(filter.value) : 'a topic filter is a string';
        if (problem !== undefined) throw this.error(filterToken, `invalid topic filter ${JSON.stringify(filter.value)}: ${problem}`);
      }
      return { type: 'match', operand: left, filter };
    }
    if (this.acceptKeyword('IS')) {
      const negated = this.acceptKeyword('NOT');
      this.expectKeyword('NULL');
      return { type: 'is_null', negated, operand: left };
    }
    const negated = this.isKeyword(t, 'NOT') && (this.isKeyword(this.peek(1), 'LIKE') || this.isKeyword(this.peek(1), 'IN'));
    if (negated) this.next();
    if (this.acceptKeyword('LIKE')) return { type: 'like', negated, operand: left, pattern: this.additive() };
    if (this.acceptKeyword('IN')) {
      this.expectOp('(');
      const list = [this.expression()];
      while (this.acceptOp(',')) list.push(this.expression());
      this.expectOp(')', ['","', '")"']);
      return { type: 'in', negated, operand: left, list };
    }
    return left;
  }

  private additive(): Expr {
    let left = this.multiplicative();
    for (;;) {
      const t = this.peek();
      if (t.kind !== 'op' || (t.text !== '+' && t.text !== '-')) return left;
      this.next();
      left = { type: 'binary', op: t.text as ArithmeticOp, left, right: this.multiplicative() };
    }
  }

  private multiplicative(): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      let op: ArithmeticOp;
      if (t.kind === 'op' && (t.text === '*' || t.text === '/')) op = t.text;
      else if (this.isKeyword(t, 'DIV') && !this.isOp(this.peek(1), '(')) op = 'div';
      else if (this.isKeyword(t, 'MOD') && !this.isOp(this.peek(1), '(')) op = 'mod';
      else return left;
      this.next();
      left = { type: 'binary', op, left, right: this.unary() };
    }
  }

  private unary(): Expr {
    if (this.acceptOp('-')) {
      const operand = this.unary();
      if (operand.type === 'literal' && typeof operand.value === 'number') return { type: 'literal', value: -operand.value };
      return { type: 'unary', op: '-', operand };
    }
    if (this.acceptOp('+')) return this.unary();
    return this.primary();
  }

  private primary(): Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'number':
        this.next();
        return { type: 'literal', value: t.value as number };
      case 'string':
        this.next();
        return { type: 'literal', value: t.value as string };
      case 'quoted_ident':
        this.next();
        return this.pathFrom(String(t.value));
      case 'op':
        if (t.text === '(') {
          this.next();
          const e = this.expression();
          this.expectOp(')');
          return e;
        }
        break;
      case 'ident': {
        if (this.isOp(this.peek(1), '(')) return this.call();
        const word = String(t.value).toUpperCase();
        if (word === 'TRUE' || word === 'FALSE' || word === 'NULL') {
          this.next();
          return { type: 'literal', value: word === 'NULL' ? null : word === 'TRUE' };
        }
        if (word === 'CASE') return this.case_();
        if (KEYWORDS.has(word)) break;
        this.next();
        return this.pathFrom(String(t.value));
      }
      case 'eof':
        break;
    }
    return this.fail(t, ['an expression']);
  }

  // A field, and a path into it when '.key' or '[n]' follows.
  private pathFrom(root: string): Expr {
    const path: (string | number)[] = [];
    for (;;) {
      if (this.acceptOp('.')) {
        const t = this.peek();
        if (t.kind === 'ident' || t.kind === 'quoted_ident') path.push(String(this.next().value));
        else if (t.kind === 'number' && Number.isInteger(t.value)) path.push(this.next().value as number);
        else this.fail(t, ['a field name']);
      } else if (this.acceptOp('[')) {
        const t = this.peek();
        if (t.kind === 'number' && Number.isInteger(t.value)) path.push(this.next().value as number);
        else if (t.kind === 'string') path.push(String(this.next().value));
        else this.fail(t, ['an array index']);
        this.expectOp(']');
      } else {
        return path.length === 0 ? { type: 'field', name: root } : { type: 'path', root, path };
      }
    }
  }

  private call(): Expr {
    const nameToken = this.next();
    const name = String(nameToken.value).toLowerCase();
    const def = lookupFunction(name);
    if (def === undefined) throw this.error(nameToken, `unknown function "${nameToken.text}"`, [], nameToken.text);
    this.expectOp('(');
    const args: Expr[] = [];
    const argTokens: Token[] = [];
    if (!this.acceptOp(')')) {
      do {
        argTokens.push(this.peek());
        args.push(this.expression());
      } while (this.acceptOp(','));
      this.expectOp(')', ['","', '")"']);
    }
    if (args.length < def.min || args.length > def.max) {
      const takes = def.min === def.max ? `${def.min}` : def.max === Number.POSITIVE_INFINITY ? `at least ${def.min}` : `${def.min} to ${def.max}`;
      const plural = def.min === 1 && def.max === 1 ? 'argument' : 'arguments';
      throw this.error(nameToken, `function ${name}() takes ${takes} ${plural}, found ${args.length}`, [], nameToken.text);
    }
    if (def.prepare !== undefined) {
      try {
        def.prepare(args.map((a) => (a.type === 'literal' ? a.value : undefined)));
      } catch (err) {
        const at = argTokens[def.preparedArg ?? 0] ?? nameToken;
        throw this.error(at, (err as Error).message, [], at.text);
      }
    }
    return { type: 'call', name, args };
  }

  private case_(): Expr {
    this.next(); // CASE
    const subject = this.isKeyword(this.peek(), 'WHEN') ? null : this.expression();
    const whens: { when: Expr; then: Expr }[] = [];
    do {
      this.expectKeyword('WHEN', whens.length === 0 ? ['WHEN'] : ['WHEN', 'ELSE', 'END']);
      const when = this.expression();
      this.expectKeyword('THEN');
      whens.push({ when, then: this.expression() });
    } while (this.isKeyword(this.peek(), 'WHEN'));
    const otherwise = this.acceptKeyword('ELSE') ? this.expression() : null;
    this.expectKeyword('END', otherwise === null ? ['WHEN', 'ELSE', 'END'] : ['END']);
    return { type: 'case', subject, whens, else: otherwise };
  }

  // ---- tokens ----

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.at + ahead, this.tokens.length - 1)];
  }

  private next(): Token {
    const t = this.tokens[this.at];
    if (t.kind !== 'eof') this.at++;
    return t;
  }

  private isKeyword(t: Token, word?: string): boolean {
    if (t.kind !== 'ident') return false;
    const upper = String(t.value).toUpperCase();
    return word === undefined ? KEYWORDS.has(upper) : upper === word;
  }

  private isOp(t: Token, op: string): boolean {
    return t.kind === 'op' && t.text === op;
  }

  private acceptKeyword(word: string): boolean {
    if (!this.isKeyword(this.peek(), word)) return false;
    this.next();
    return true;
  }

  private expectKeyword(word: string, expected: string[] = [word]): void {
    if (!this.acceptKeyword(word)) this.fail(this.peek(), expected);
  }

  private acceptOp(op: string): boolean {
    if (!this.isOp(this.peek(), op)) return false;
    this.next();
    return true;
  }

  private expectOp(op: string, expected: string[] = [JSON.stringify(op)]): void {
    if (!this.acceptOp(op)) this.fail(this.peek(), expected);
  }

  private fail(t: Token, expected: string[]): never {
    const found = t.kind === 'eof' ? END_OF_INPUT : t.text;
    const shown = t.kind === 'eof' ? END_OF_INPUT : JSON.stringify(t.text);
    throw this.error(t, `expected ${list(expected)}, found ${shown}`, expected, found);
  }

  private error(t: Token, detail: string, expected: string[] = [], found = t.kind === 'eof' ? END_OF_INPUT : t.text): SqlSyntaxError {
    return new SqlSyntaxError(detail, t.line, t.column, expected, found);
  }
}

function list(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
