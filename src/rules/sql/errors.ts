// The two errors of the rule SQL: SqlSyntaxError when a rule's text cannot be compiled (with the
// 1-based line and column of the offending token, and what the parser expected there), and
// SqlRuntimeError when evaluating a compiled rule on one event fails (bad arithmetic, junk base64).
// Both carry a stable `code` so they survive postMessage as {code, message}.

/** The rule's text is wrong: syntax, an unknown function or event, a wrong arity, a bad filter. */
export class SqlSyntaxError extends Error {
  readonly code = 'SQL_SYNTAX';

  constructor(
    readonly detail: string,
    readonly line: number,
    readonly column: number,
    readonly expected: string[] = [],
    readonly found: string = '',
  ) {
    super(`line ${line}, column ${column}: ${detail}`);
    this.name = 'SqlSyntaxError';
  }
}

/** Evaluating a compiled rule on one event failed; the rule produces no output for that event. */
export class SqlRuntimeError extends Error {
  readonly code = 'SQL_RUNTIME';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SqlRuntimeError';
  }
}
