// Owns the errors of the auth module: AuthError with stable codes.
import { SpindleError } from '../native/index.ts';

export type AuthErrorCode =
  /** An ACL rule or user entry handed to a provider is malformed. */
  | 'AUTH_CONFIG_INVALID';

export class AuthError extends SpindleError {
  declare readonly code: AuthErrorCode;
  constructor(code: AuthErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, undefined, options);
  }
}
