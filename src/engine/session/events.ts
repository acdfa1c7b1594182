// What the engine tells the rule engine: client and message events ($EVENT.CONNECT, ...). The
// engine checks `wants` before it builds an event's fields, so an event no rule listens to costs
// one array read. The worker wires the rule engine's implementation; tests may give NO_EVENTS.

/** Event indexes into `EngineEvents.wants` (PUBLISH is not here: rules find publishes through
 * the routing core, see RouterHost.tapMatched). */
export const EV = {
  CONNECT: 0,
  DISCONNECT: 1,
  CLOSE: 2,
  SUBSCRIBE: 3,
  UNSUBSCRIBE: 4,
  ACK: 5,
  DELIVERED: 6,
  DROP: 7,
  /** A client id went past the flapping limit (src/features/bans, flapping detection). */
  FLAPPING: 8,
} as const;

export type EngineEvent = keyof typeof EV;

export interface EngineEvents {
  /** By EV index: whether any enabled rule listens to that event now. */
  readonly wants: Uint8Array;
  /** An event with its fields (lower-case names; see the event table of docs/features/rules.md). */
  emit(event: EngineEvent, fields: Record<string, unknown>): void;
}

export const NO_EVENTS: EngineEvents = { wants: new Uint8Array(Object.keys(EV).length), emit() {} };
