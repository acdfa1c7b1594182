// Refusals of the script and extension manager: domain errors (src/errors/domain-error.ts) with the
// status the admin API answers with, the request field at fault, and (a script that does not
// compile: SCRIPT_SYNTAX_ERROR) where in the script.
import { DomainError, codeOfStatus } from '../../errors/domain-error.ts';

export class ProcessorError extends DomainError {
  constructor(status: 400 | 404 | 409, field: string | undefined, message: string, details?: Record<string, unknown>) {
    super(status === 400 && details ? 'SCRIPT_SYNTAX_ERROR' : codeOfStatus(status), message, { field, details });
    this.name = 'ProcessorError';
  }
}
