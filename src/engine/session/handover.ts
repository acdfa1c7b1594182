// Session state as it travels between worker threads when a client connects to a worker other
// than the one holding its session: exported by the old owner, adopted by the new one (a
// structured-clone value; messages as binary records), and the messages of the hand-over.
import { toRecord, readRecord, type Message } from '../../broker/message.ts';
import { Session, type SessionLimits, type SubscriptionEntry, type Will } from './session.ts';

export interface SessionState {
  handle: number;
  clientId: string;
  username: string | undefined;
  expiryInterval: number;
  disconnectedAt: number;
  subscriptions: SubscriptionEntry[];
  inflight: { packetId: number; state: 'publish' | 'pubrel'; qos: 0 | 1 | 2; retain: boolean; ids: number[] | null; record: Uint8Array }[];
  queue: { qos: 0 | 1 | 2; retain: boolean; ids: number[] | null; record: Uint8Array }[];
  incomingQos2: number[];
  will: { record: Uint8Array; delay: number; expiryInterval: number } | null;
  stored: boolean;
  endpointSlot: number;
  /** The identities of the cluster messages it took lately (Session.firstCopy), oldest first. */
  seen?: [string, number][];
  /** Between nodes: the filters whose exclusive place it held (src/features/exclusive), taken
   * again where it continues. */
  exclusive?: string[];
}

/** Between workers: the hand-over of sessions (claims) and the fences after it. */
export type HandoverMessage = ClaimMessage | FenceMessage;

/** The next claim of a client id asks the worker of the claim before it for the session
 * (`generation` is that earlier claim); the answer names the asking claim (see claim-chain.ts). */
export type ClaimMessage =
  | { t: 'handover'; clientId: string; generation: number; resume: boolean; from: number; forGeneration: number }
  | { t: 'handover-reply'; forGeneration: number; state: SessionState | null };

/** The fence after a session moved between workers (see fences.ts): `to` is the session's new
 * worker, `via` its old one, `worker` the worker whose deliveries the fence is about. */
export type FenceMessage =
  | { t: 'fence'; fence: number; via: number; to: number }
  | { t: 'fence-relay'; fence: number; to: number; worker: number }
  | { t: 'fence-done'; fence: number; worker: number };

export function exportState(s: Session): SessionState {
  const rec = (m: Message) => new Uint8Array(toRecord(m));
  return {
    handle: s.handle,
    clientId: s.clientId,
    username: s.username,
    expiryInterval: s.expiryInterval,
    disconnectedAt: s.disconnectedAt,
    subscriptions: [...s.subscriptions.values()],
    inflight: [...s.inflight.values()].map((e) => ({ packetId: e.packetId, state: e.state, qos: e.qos, retain: e.retain, ids: e.subscriptionIds, record: rec(e.message) })),
    queue: [...s.queue].map((d) => ({ qos: d.qos, retain: d.retain, ids: d.subscriptionIds, record: rec(d.message) })),
    incomingQos2: [...s.incomingQos2],
    will: s.will ? { record: rec(s.will.message), delay: s.will.delay, expiryInterval: s.will.expiryInterval } : null,
    stored: s.stored,
    endpointSlot: s.endpointSlot,
    seen: s.seen,
  };
}

/** A Session rebuilt from a state another worker exported (its subscriptions are not routed
 * here yet: the caller points them at this worker). */
export function importState(state: SessionState, limits: SessionLimits): Session {
  const msg = (r: Uint8Array) => readRecord(Buffer.from(r.buffer, r.byteOffset, r.byteLength), 0).message;
  const s = new Session(state.handle, state.clientId, limits, state.username);
  s.expiryInterval = state.expiryInterval;
  s.disconnectedAt = state.disconnectedAt;
  s.stored = state.stored;
  s.endpointSlot = state.endpointSlot;
  if (state.seen) s.seen = state.seen;
  for (const sub of state.subscriptions) {
    s.subscriptions.set(sub.filter, sub);
    if (sub.readChecked === true) s.readChecks++;
  }
  for (const e of state.inflight) s.inflight.set(e.packetId, { message: msg(e.record), qos: e.qos, retain: e.retain, subscriptionIds: e.ids, packetId: e.packetId, state: e.state });
  for (const q of state.queue) s.queue.push({ message: msg(q.record), qos: q.qos, retain: q.retain, subscriptionIds: q.ids });
  for (const id of state.incomingQos2) s.incomingQos2.add(id);
  if (state.will) {
    const will: Will = { message: msg(state.will.record), delay: state.will.delay, expiryInterval: state.will.expiryInterval };
    s.will = will;
  }
  return s;
}

/** What a cluster's claim answers, in place of a session state, when the session was taken from
 * the store the nodes share (its node went down): the CONNECT loads it from there. */
export const LOAD_FROM_STORE = 'spindle:from-store';
