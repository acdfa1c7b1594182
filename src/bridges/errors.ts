// Refusals of the MQTT bridges (main thread): domain errors (src/errors/domain-error.ts) with the
// status the admin API answers with and the field at fault.
import { DomainError } from '../errors/domain-error.ts';

/** A bridge configuration that does not validate; `field` is its path, e.g. `forwards[0].qos`. */
export class BridgeConfigError extends DomainError {
  declare readonly field: string;
  constructor(field: string, readonly reason: string) {
    super('INVALID_PARAMETER', `${field}: ${reason}`, { field });
    this.name = 'BridgeConfigError';
  }
}

/** No such bridge (NOT_FOUND), a name taken (CONFLICT), a bridge of the configuration file
 * (BRIDGE_FROM_CONFIG), a TLS file that cannot be read (INVALID_PARAMETER). */
export type BridgeErrorCode = 'NOT_FOUND' | 'CONFLICT' | 'BRIDGE_FROM_CONFIG' | 'INVALID_PARAMETER';

export class BridgeError extends DomainError {
  constructor(code: BridgeErrorCode, field: string, message: string) {
    super(code, message, { field });
    this.name = 'BridgeError';
  }
}
