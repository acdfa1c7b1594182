// Refusals of the command manager: domain errors (src/errors/domain-error.ts) with the status the
// admin API answers with and the request field at fault (400: a bad field, 404: no such command,
// 409: a name taken).
import { DomainError, codeOfStatus } from '../../errors/domain-error.ts';

export class CommandError extends DomainError {
  constructor(status: 400 | 404 | 409, field: string, message: string) {
    super(codeOfStatus(status), message, { field });
    this.name = 'CommandError';
  }
}
