// The ban list's refusals: domain errors (src/errors/domain-error.ts) with the status the admin
// API answers with and the request field at fault.
import { DomainError, codeOfStatus } from '../../errors/domain-error.ts';

export class BanError extends DomainError {
  constructor(status: 400 | 404 | 409, field: string, message: string) {
    super(codeOfStatus(status), message, { field });
    this.name = 'BanError';
  }
}
