// The refusals of log topics and client traces, with the HTTP status the admin API answers with
// and the request field at fault.

export class TraceError extends Error {
  constructor(readonly status: 400 | 404 | 409, readonly field: string, message: string) {
    super(message);
    this.name = 'TraceError';
  }
}
