// What a compiled rule reads: the event's name and fields, and the payload parsed as JSON. The
// caller (the rule engine) builds one context per event and shares it across the rules that
// event reaches, so the payload is parsed at most once. makeContext() is the plain version for
// /rule/test and the tests.

import type { EventName } from './ast.ts';
import { textOf } from './values.ts';

export interface RuleContext {
  readonly event: EventName;
  /** The event's fields by lower-case name: topic, payload (Buffer or string), qos, retain, clientid, username, peerhost, timestamp, id, ... */
  readonly fields: Record<string, unknown>;
  /** The payload parsed as JSON, memoized by the caller across the rules of one message (undefined when not JSON). */
  json(): unknown;
}

const NOT_PARSED = Symbol('not parsed');

/**
 * A RuleContext over `fields` (keys are lower-cased, so test data may say clientId). json() parses
 * fields.payload once; a payload that is already an object (test data) is its own JSON.
 */
export function makeContext(event: EventName, fields: Record<string, unknown>): RuleContext {
  const lower: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) lower[k.toLowerCase()] = v;
  return new EventContext(event, lower);
}

/** A RuleContext over fields whose names are already lower-case (the engine's events): no copy.
 * `fields` may have enumerable getters (computed on first read); SELECT * reads them too. */
export class EventContext implements RuleContext {
  private parsed: unknown = NOT_PARSED;

  constructor(
    readonly event: EventName,
    readonly fields: Record<string, unknown>,
  ) {}

  json(): unknown {
    if (this.parsed === NOT_PARSED) this.parsed = parsePayload(this.fields.payload);
    return this.parsed;
  }
}

function parsePayload(payload: unknown): unknown {
  const text = textOf(payload);
  if (typeof text !== 'string') return payload === null ? undefined : payload;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // a payload that is not JSON: payload.x reads as missing
  }
}
