// The control platform's refusals: domain errors (src/errors/domain-error.ts) with a status (400 a
// field is wrong, 403 not allowed, 404 not in the caller's scope, 409 a conflict), the field at
// fault (400 and 409 only: a 404 must not tell what exists), and a message.
import { DomainError, codeOfStatus } from '../errors/domain-error.ts';

export class PlatformError extends DomainError {
  constructor(status: 400 | 403 | 404 | 409, message: string, field?: string) {
    const named = field !== undefined && (status === 400 || status === 409);
    super(codeOfStatus(status), named ? `${field}: ${message}` : message, { field: named ? field : undefined });
    this.name = 'PlatformError';
  }
}

export const invalid = (field: string, message: string) => new PlatformError(400, message, field);
export const missing = (what: string, id: string) => new PlatformError(404, `${what} ${id} not found`);
export const conflict = (field: string, message: string) => new PlatformError(409, message, field);
