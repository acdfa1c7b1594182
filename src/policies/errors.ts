// Owns the refusals of the policy manager: domain errors (src/errors/domain-error.ts), 404 for no
// such policy and 409 for a name taken.
import { DomainError } from '../errors/domain-error.ts';

export class PolicyError extends DomainError {
  constructor(code: 'NOT_FOUND' | 'CONFLICT', message: string, field: string) {
    super(code, message, { field });
    this.name = 'PolicyError';
  }
}
