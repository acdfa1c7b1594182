// Conversions between Store records and SQL column values shared by the SQL backends: delivery
// state codes, session expiry deadline, and whole-row decoding helpers.
import { StoreError } from '../errors.ts';
import { NEVER_EXPIRES, type DeliveryState, type StoredSession } from '../types.ts';

const STATES: readonly DeliveryState[] = ['queued', 'inflight', 'pubrel'];

export function stateCode(state: DeliveryState): number {
  const code = STATES.indexOf(state);
  if (code < 0) throw new StoreError('STORE_INVALID', `unknown delivery state ${String(state)}`);
  return code;
}

export function stateName(code: number): DeliveryState {
  const state = STATES[code];
  if (state === undefined) throw new StoreError('STORE_IO', `stored delivery state ${code} is unknown`);
  return state;
}

/** When a session expires (ms since the epoch), or null while connected or never expiring. */
export function sessionDeadline(s: StoredSession): number | null {
  if (s.disconnectedAt === null || s.expiryInterval === NEVER_EXPIRES) return null;
  return s.disconnectedAt + s.expiryInterval * 1000;
}

export function qos(n: number): 0 | 1 | 2 {
  if (n !== 0 && n !== 1 && n !== 2) throw new StoreError('STORE_IO', `stored QoS ${n} is invalid`);
  return n;
}
