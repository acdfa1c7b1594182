// Owns the one error every layer throws when it refuses a request: a stable `code` from the table
// below, the HTTP `status` that code answers with, a message, and the request `field` at fault.
// A leaf: it imports nothing, so the broker, the workers, the modules and the admin API may all
// use it. The admin API maps it to its envelope in one place (src/admin/server.ts, errorReply);
// a module's own error is a thin named subclass (RuleError, SourceError, ...), never a new shape.
// Across postMessage an error loses its class: send toPlain(err) and rebuild with fromPlain.

/** One code per fault, with the status it answers with. Add a code only for a fault a client must
 * tell apart from the others (a syntax error carries a position; a resource the configuration
 * file owns must be changed there). */
export const ERROR_CODES = {
  /** A missing, mistyped, out-of-range or unknown field (named in `field`). */
  INVALID_PARAMETER: 400,
  /** The body is not JSON. */
  INVALID_JSON: 400,
  /** A rule's SQL does not parse (details: line, column, expected, found). */
  SQL_SYNTAX_ERROR: 400,
  /** A script does not compile (details: line, column). */
  SCRIPT_SYNTAX_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  /** No such client, endpoint, rule, source, ... (or not in the caller's scope). */
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  /** A duplicate id or name, a port in use, a resource still used by another. */
  CONFLICT: 409,
  /** A bridge of the configuration file: change it there. */
  BRIDGE_FROM_CONFIG: 409,
  /** A cluster node other than this one holds the client: ask that node. */
  ON_OTHER_NODE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  /** A part the request needs is down (no worker running, the log store off, a node missing). */
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The code a bare status answers with (the first code of the table with that status). */
export function codeOfStatus(status: number): ErrorCode {
  for (const [code, s] of Object.entries(ERROR_CODES)) if (s === status) return code as ErrorCode;
  return 'INTERNAL_ERROR';
}

export interface DomainErrorOptions {
  /** The request field at fault, e.g. `port`, `config.table`, `endpoints[1].maxConnectionSize`. */
  field?: string;
  /** More about the fault, answered beside `field` (a syntax error's line and column). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly field: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: DomainErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DomainError';
    this.code = code;
    this.status = ERROR_CODES[code];
    this.field = options.field;
    this.details = options.details;
  }

  /** The same refusal of a value found at `at` in a larger request (the item of a list, a section
   * of an import): `port` becomes `endpoints[1].port`, in the field and in the message. */
  under(at: string): DomainError {
    const field = this.field === undefined || this.field === 'body' ? at : `${at}${this.field.startsWith('[') ? '' : '.'}${this.field}`;
    const message = this.field !== undefined && this.message.startsWith(`${this.field}: `) ? `${field}: ${this.message.slice(this.field.length + 2)}` : `${at}: ${this.message}`;
    return new DomainError(this.code, message, { field, details: this.details, cause: this });
  }
}

/** A bad or missing field: 400 INVALID_PARAMETER, the message led by the field. */
export function invalid(field: string, message: string): DomainError {
  return new DomainError('INVALID_PARAMETER', `${field}: ${message}`, { field });
}

export function notFound(message: string, field?: string): DomainError {
  return new DomainError('NOT_FOUND', message, { field });
}

/** A conflict (duplicate, in use): 409, the message led by the field. */
export function conflict(field: string, message: string): DomainError {
  return new DomainError('CONFLICT', `${field}: ${message}`, { field });
}

/** What crosses a thread boundary (postMessage keeps no class). */
export interface PlainError {
  code: string;
  message: string;
  status?: number;
  field?: string;
  details?: Record<string, unknown>;
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

export function toPlain(err: DomainError): PlainError {
  return { code: err.code, message: err.message, status: err.status, field: err.field, details: err.details };
}

/** Rebuilds a DomainError sent as PlainError; an unknown code takes the code of its status. */
export function fromPlain(e: PlainError): DomainError {
  const code = isErrorCode(e.code) ? e.code : codeOfStatus(e.status ?? 500);
  return new DomainError(code, e.message, { field: e.field, details: e.details });
}
