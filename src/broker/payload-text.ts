// How the admin API shows a message payload in JSON: UTF-8 text when it is valid UTF-8, else
// base64 with `payloadEncoding: "base64"` (retained and session records; docs/api/mqtt.md).
import { isUtf8 } from 'node:buffer';

export interface PayloadText {
  payload: string;
  payloadEncoding?: 'base64';
}

export function payloadText(payload: Uint8Array): PayloadText {
  const b = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  return isUtf8(b) ? { payload: b.toString('utf8') } : { payload: b.toString('base64'), payloadEncoding: 'base64' };
}

/** ISO 8601 of a time in ms, or null when it is unknown (0). */
export function isoOrNull(ms: number): string | null {
  return ms > 0 ? new Date(ms).toISOString() : null;
}
