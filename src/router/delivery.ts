// Deliveries: one message on its way to one session, as the router hands it to the session
// layer, and as `route` finds it before a publish that must be stored first is delivered. Plain
// data shared by the router, the sessions and the persistence of the worker thread that made it.
import type { Message } from '../broker/message.ts';

/** One message on its way to a session's client. */
export interface Delivery {
  message: Message;
  qos: 0 | 1 | 2;
  /** The RETAIN flag to send: the message's own with Retain As Published or for retained
   * messages sent on subscribe, else 0 [MQTT-3.3.1-12 .. MQTT-3.3.1-13]. */
  retain: boolean;
  subscriptionIds: number[] | null;
}

/** One delivery found by `WorkerRouter.route`, not yet made. */
export interface Routed {
  /** The receiving session's handle and the worker thread that owns it. */
  handle: number;
  worker: number;
  qos: 0 | 1 | 2;
  retain: boolean;
  subscriptionIds: number[] | null;
}

/** What a message another node of the cluster sent here may reach (the other node decided):
 * the plain subscribers if `plain`, and one local member of each shared group in `shares`
 * (`$share/<group>/<filter>`); no other shared group, and never a node handle. */
export interface NodeScope {
  plain: boolean;
  shares: readonly string[];
  /** Only to these sessions (by handle), never a tap: a message forwarded to this node for the
   * sessions that moved here, or taken from a node gone for the sessions adopted here. */
  only?: ReadonlySet<number> | null;
}
