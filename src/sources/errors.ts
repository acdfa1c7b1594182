// Owns the refusals of the source registry: domain errors (src/errors/domain-error.ts) named by
// what went wrong: no such source (404 NOT_FOUND), a name taken or a source a rule still uses
// (409 CONFLICT).
import { DomainError, type ErrorCode } from '../errors/domain-error.ts';

export class SourceRegistryError extends DomainError {
  constructor(code: ErrorCode, message: string, field: string) {
    super(code, message, { field });
    this.name = 'SourceRegistryError';
  }
}

export class SourceNotFoundError extends SourceRegistryError {
  constructor(readonly id: string) {
    super('NOT_FOUND', `no source ${id}`, 'id');
    this.name = 'SourceNotFoundError';
  }
}

export class SourceNameConflictError extends SourceRegistryError {
  constructor(readonly sourceName: string) {
    super('CONFLICT', `a source named ${JSON.stringify(sourceName)} exists`, 'name');
    this.name = 'SourceNameConflictError';
  }
}

export class SourceInUseError extends SourceRegistryError {
  constructor(readonly id: string) {
    super('CONFLICT', `source ${id} is used by a rule; remove the rule's action first`, 'id');
    this.name = 'SourceInUseError';
  }
}
