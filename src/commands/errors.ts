// Refusals of the command manager, each with the HTTP status the admin API answers with and the
// request field at fault (400: a bad field, 404: no such command, 409: a name taken).

export class CommandError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}
