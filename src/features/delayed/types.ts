// What a delayed message is, as a worker hands it to the main thread and as the store keeps it.
import type { AclGrant } from '../../auth/types.ts';

/** The publisher as its ACL needs it, kept with the message for the check at due time. */
export interface DelayedPublisher {
  clientId: string;
  username: string | null;
  superuser?: boolean;
  /** ACL rules that came with the credentials (a JWT's acl claim). */
  acl?: readonly AclGrant[];
}

/** A delayed PUBLISH a worker accepted, for the main thread to store (worker -> main). */
export interface DelayedAccept {
  /** The worker's id for its reply. */
  id: number;
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** MQTT 5 properties as they came, without topic alias and message expiry (null: none). */
  props: Uint8Array | null;
  /** When the message expires, ms since the epoch (0: never); counted from its receipt. */
  expiresAt: number;
  receivedAt: number;
  dueAt: number;
  publisher: DelayedPublisher;
}

/** The main thread's answer to one DelayedAccept: 0 stored, else an MQTT reason code. */
export interface DelayedReply {
  id: number;
  rc: number;
}

/** A delayed message as the store keeps it (admin kind `delayed`). */
export interface DelayedDoc {
  topic: string;
  /** base64 */
  payload: string;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** base64 of the MQTT 5 properties, or null. */
  props: string | null;
  expiresAt: number;
  receivedAt: number;
  dueAt: number;
  publisher: DelayedPublisher;
  /** The node that accepted it. */
  node: string;
}

/** The worker state of the feature (WorkerStates.delayed). */
export interface DelayedWorkerState {
  enabled: boolean;
  maxInterval: number;
}
