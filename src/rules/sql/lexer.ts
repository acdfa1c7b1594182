// The tokens of the rule SQL and the lexer that cuts a rule's text into them, with the 1-based
// line and column of each token for error messages. Keywords are not special here: they are
// identifiers that the parser compares case-insensitively. Comments (`-- ...` to the end of the
// line and `/* ... */`) and whitespace are skipped.

import { SqlSyntaxError } from './errors.ts';

export type TokenKind =
  | 'ident' //         plain identifier or keyword: clientid, SELECT, payload
  | 'quoted_ident' //  `back-quoted identifier`
  | 'string' //        'single' or "double" quoted literal (and FROM sources)
  | 'number'
  | 'op' //            punctuation and operators: , ( ) . [ ] ; * + - / = != <> < <= > >= =~
  | 'eof';

export interface Token {
  kind: TokenKind;
  /** The token's source text ("" at the end of input). */
  text: string;
  /** Identifier name, unescaped string contents, or the number's value. */
  value: string | number;
  /** Offsets into the source: the token is source.slice(start, end). */
  start: number;
  end: number;
  line: number;
  column: number;
}

const OPERATORS = ['!=', '<>', '<=', '>=', '=~', ',', '(', ')', '.', '[', ']', ';', '*', '+', '-', '/', '=', '<', '>'];
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0', '\\': '\\', "'": "'", '"': '"' };

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === '$';
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c);
}

/** Cuts `source` into tokens, ending with one 'eof' token. Throws SqlSyntaxError. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let line = 1;
  let lineStart = 0;

  const fail = (at: number, detail: string, expected: string[] = [], found = ''): never => {
    const before = source.slice(0, at);
    const atLine = before.split('\n').length;
    const atColumn = at - (before.lastIndexOf('\n') + 1) + 1;
    throw new SqlSyntaxError(detail, atLine, atColumn, expected, found);
  };

  // Whitespace and comments, counting lines.
  const skip = (): void => {
    while (pos < source.length) {
      const c = source[pos];
      if (c === '\n') {
        pos++;
        line++;
        lineStart = pos;
      } else if (c === ' ' || c === '\t' || c === '\r') {
        pos++;
      } else if (c === '-' && source[pos + 1] === '-') {
        while (pos < source.length && source[pos] !== '\n') pos++;
      } else if (c === '/' && source[pos + 1] === '*') {
        const close = source.indexOf('*/', pos + 2);
        if (close < 0) fail(pos, 'unterminated comment: expected "*/", found end of input', ['"*/"'], 'end of input');
        for (let i = pos; i < close; i++) {
          if (source[i] === '\n') {
            line++;
            lineStart = i + 1;
          }
        }
        pos = close + 2;
      } else {
        return;
      }
    }
  };

  for (;;) {
    skip();
    const start = pos;
    const startLine = line;
    const column = start - lineStart + 1;
    const push = (kind: TokenKind, value: string | number): void => {
      tokens.push({ kind, text: source.slice(start, pos), value, start, end: pos, line: startLine, column });
    };
    if (pos >= source.length) {
      tokens.push({ kind: 'eof', text: '', value: '', start, end: start, line, column });
      return tokens;
    }
    const c = source[pos];
    if (isIdentStart(c)) {
      while (pos < source.length && isIdentPart(source[pos])) pos++;
      push('ident', source.slice(start, pos));
    } else if (isDigit(c)) {
      // After a '.', a number is a path key (payload.list.0.x), so no fraction or exponent.
      const afterDot = tokens.length > 0 && tokens[tokens.length - 1].text === '.';
      while (isDigit(source[pos] ?? '')) pos++;
      if (!afterDot) {
        if (source[pos] === '.' && isDigit(source[pos + 1] ?? '')) {
          pos++;
          while (isDigit(source[pos] ?? '')) pos++;
        }
        if ((source[pos] === 'e' || source[pos] === 'E') && (isDigit(source[pos + 1] ?? '') || ((source[pos + 1] === '+' || source[pos + 1] === '-') && isDigit(source[pos + 2] ?? '')))) {
          pos += 2;
          while (isDigit(source[pos] ?? '')) pos++;
        }
      }
      push('number', Number(source.slice(start, pos)));
    } else if (c === "'" || c === '"' || c === '`') {
      const value = readQuoted(c);
      push(c === '`' ? 'quoted_ident' : 'string', value);
    } else {
      const op = OPERATORS.find((o) => source.startsWith(o, pos));
      if (op === undefined) fail(pos, `unexpected character "${c}"`, [], c);
      pos += op!.length;
      push('op', op!);
    }
  }

  // A quoted string or identifier; the closing quote may be escaped by doubling it or with '\'.
  function readQuoted(quote: string): string {
    const open = pos;
    let value = '';
    pos++;
    for (;;) {
      if (pos >= source.length) {
        return fail(open, `unterminated ${quote === '`' ? 'identifier' : 'string'}: expected closing ${quote}, found end of input`, [quote], 'end of input');
      }
      const c = source[pos];
      if (c === quote) {
        if (source[pos + 1] === quote) {
          value += quote;
          pos += 2;
          continue;
        }
        pos++;
        return value;
      }
      if (c === '\\' && quote !== '`' && pos + 1 < source.length) {
        const e = source[pos + 1];
        value += ESCAPES[e] ?? '\\' + e;
        pos += 2;
        continue;
      }
      if (c === '\n') {
        line++;
        lineStart = pos + 1;
      }
      value += c;
      pos++;
    }
  }
}
