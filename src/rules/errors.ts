// Refusals of the rule engine: domain errors (src/errors/domain-error.ts), each with the status the
// admin API answers with and the request field at fault; a syntax error (SQL_SYNTAX_ERROR) also
// carries where in the SQL.
import { DomainError, codeOfStatus } from '../errors/domain-error.ts';

export class RuleError extends DomainError {
  constructor(
    status: 400 | 404 | 409,
    field: string | undefined,
    message: string,
    /** Where in the SQL (syntax errors): 1-based line and column, and what was expected. */
    readonly position?: { line: number; column: number; expected: string[]; found: string },
  ) {
    super(status === 400 && position ? 'SQL_SYNTAX_ERROR' : codeOfStatus(status), message, { field, details: position });
    this.name = 'RuleError';
  }
}
