// Refusals of the alert engine's validation: domain errors (src/errors/domain-error.ts), a 400
// naming the request field at fault, the message led by it (main thread).
import { DomainError } from '../../errors/domain-error.ts';

export class AlertRuleError extends DomainError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_PARAMETER', `${field}: ${message}`, { field });
    this.name = 'AlertRuleError';
  }
}
