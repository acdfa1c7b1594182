// Store errors: a stable code, and the driver's error as `cause`.
import { SpindleError } from '../native/index.ts';

export type StoreErrorCode = 'STORE_UNAVAILABLE' | 'STORE_IO' | 'STORE_CLOSED' | 'STORE_MIGRATION' | 'STORE_INVALID';

export class StoreError extends SpindleError {
  declare readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, undefined, options);
  }
}
