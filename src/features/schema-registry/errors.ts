// The schema registry's refusals: domain errors (src/errors/domain-error.ts) with the status the
// admin API answers with and the request field at fault.
import { DomainError, codeOfStatus } from '../../errors/domain-error.ts';

export class SchemaRegistryError extends DomainError {
  constructor(status: 400 | 404 | 409, field: string, message: string) {
    super(codeOfStatus(status), message, { field });
    this.name = 'SchemaRegistryError';
  }
}

/** A payload that does not decode (or a value that does not encode) with a schema. */
export class SchemaCodecError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SchemaCodecError';
  }
}
