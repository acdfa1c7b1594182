// Owns the errors of the source registry, each with a stable `code` the admin API maps to a status:
// SOURCE_NOT_FOUND (404), SOURCE_NAME_CONFLICT (409), SOURCE_IN_USE (409).

export type SourceRegistryErrorCode = 'SOURCE_NOT_FOUND' | 'SOURCE_NAME_CONFLICT' | 'SOURCE_IN_USE';

export class SourceRegistryError extends Error {
  constructor(
    readonly code: SourceRegistryErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SourceRegistryError';
  }
}

export class SourceNotFoundError extends SourceRegistryError {
  constructor(readonly id: string) {
    super('SOURCE_NOT_FOUND', `no source ${id}`);
    this.name = 'SourceNotFoundError';
  }
}

export class SourceNameConflictError extends SourceRegistryError {
  constructor(readonly sourceName: string) {
    super('SOURCE_NAME_CONFLICT', `a source named ${JSON.stringify(sourceName)} exists`);
    this.name = 'SourceNameConflictError';
  }
}

export class SourceInUseError extends SourceRegistryError {
  constructor(readonly id: string) {
    super('SOURCE_IN_USE', `source ${id} is used by a rule; remove the rule's action first`);
    this.name = 'SourceInUseError';
  }
}
