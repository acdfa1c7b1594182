// Refusals of the rule engine, each with the HTTP status the admin API answers with and the
// request field at fault. The admin routes turn them into their error envelope.

export class RuleError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly field: string | undefined,
    message: string,
    /** Where in the SQL (syntax errors): 1-based line and column, and what was expected. */
    readonly position?: { line: number; column: number; expected: string[]; found: string },
  ) {
    super(message);
    this.name = 'RuleError';
  }
}
