// Refusals of the script and extension manager, with the HTTP status the admin API answers with,
// the request field at fault, and (syntax errors) where in the script.
export class ProcessorError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly field: string | undefined,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ProcessorError';
  }
}
