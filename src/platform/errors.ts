// The control platform's refusals: a status (400 a field is wrong, 404 not in the caller's scope,
// 409 a conflict), the field at fault, and a message. The admin API answers them as they are.
export class PlatformError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409,
    message: string,
    readonly field?: string,
  ) {
    super(field !== undefined && status !== 404 ? `${field}: ${message}` : message);
    this.name = 'PlatformError';
  }
}

export const invalid = (field: string, message: string) => new PlatformError(400, message, field);
export const missing = (what: string, id: string) => new PlatformError(404, `${what} ${id} not found`);
export const conflict = (field: string, message: string) => new PlatformError(409, message, field);
