// Refusals of the MQTT bridges (main thread), each with the HTTP status the admin API answers
// with and the field at fault; the admin routes turn them into their error envelope.

/** A bridge configuration that does not validate; `field` is its path, e.g. `forwards[0].qos`. */
export class BridgeConfigError extends Error {
  constructor(readonly field: string, readonly reason: string) {
    super(`${field}: ${reason}`);
    this.name = 'BridgeConfigError';
  }
}

export type BridgeErrorCode = 'BRIDGE_NOT_FOUND' | 'BRIDGE_EXISTS' | 'BRIDGE_FROM_CONFIG' | 'BRIDGE_TLS_FILE';

const STATUS: Record<BridgeErrorCode, 400 | 404 | 409> = {
  BRIDGE_NOT_FOUND: 404,
  BRIDGE_EXISTS: 409,
  BRIDGE_FROM_CONFIG: 409,
  BRIDGE_TLS_FILE: 400,
};

export class BridgeError extends Error {
  readonly status: 400 | 404 | 409;
  constructor(readonly code: BridgeErrorCode, readonly field: string, message: string) {
    super(message);
    this.name = 'BridgeError';
    this.status = STATUS[code];
  }
}
