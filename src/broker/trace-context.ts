// Owns the W3C trace context of a message as the broker carries it (OpenTelemetry traces, src/
// features/otel-traces): the `traceparent` and `tracestate` MQTT 5 user properties (read from a
// PUBLISH's properties, replaced in the ones forwarded), the trace state a sampled message carries
// through the worker (Message.trace), and what the engine asks of the worker's tracer. Pure
// functions over property bytes; nothing here is on the path of a message that is not sampled.

/** A sampled message's trace, as the broker carries it. Only sampled messages have one. */
export interface MessageTrace {
  /** 32 lower-case hex digits. */
  readonly traceId: string;
  /** The broker's span of this message (`received`), 16 hex digits: the parent of every other
   * span of the message here, and of the subscribers' (the traceparent they receive names it). */
  readonly spanId: string;
  /** The publisher's span (16 hex digits) when its PUBLISH carried a traceparent; '' none. */
  readonly parentId: string;
  /** The publisher's tracestate, passed on as it came; '' none. */
  readonly tracestate: string;
  /** When the broker's span started (ms since the epoch, fractional). */
  readonly start: number;
  /** When the message was routed (its deliveries start there); 0 until then. */
  routedAt: number;
  /** When the current step started (scripts); 0 none. */
  mark: number;
  /** The trace came with a delivery batch from another worker: the spans of the publish side
   * (received, authorized, routed) are that worker's. */
  readonly remote: boolean;
  /** The broker's span was recorded (a message a processor made several of ends it once). */
  ended: boolean;
}

/** What a connection is to the tracer: its client id, whether it is under a client trace. */
export interface TracedClient {
  readonly clientId: string;
  readonly traced: boolean;
}

/**
 * The worker's tracer, as the engine sees it (src/features/otel-traces/worker-otel-traces.ts).
 * With `enabled` false the PUBLISH handler asks nothing more; every other call is made only for
 * a message with a `trace`, which only sampled messages have.
 */
export interface MessageTracer {
  readonly enabled: boolean;
  /** Messages until the sampling ratio selects one (at 0 or below, this one). Whoever receives a
   * PUBLISH counts it down first, then calls received(); it may skip the call while the count is
   * above 0 for a message without properties from a client not under a client trace (nothing else
   * could sample it). The PUBLISH handler does, so the common case costs a decrement, not a call:
   * a call there, even a small one inlined, took V8's inlining budget from the message path. */
  untilSelected: number;
  /** A PUBLISH was received (and counted down): decides whether it is sampled; if so sets
   * `m.trace` and puts the broker's traceparent into `m.props` (forwarded to MQTT 5 subscribers). */
  received(c: TracedClient, m: { props: Buffer | null; trace?: MessageTrace; topic: string }): void;
  /** A message the broker publishes on someone's behalf (a will, the admin API, a bridge, a
   * delayed message when due), traced as the client `clientId`: counts down and decides as for a
   * PUBLISH (its traceparent when parent-based, else the ratio). Returns its trace, routing
   * already started (the caller calls routed() and finished()), or undefined when not sampled. */
  originated(clientId: string, m: { props: Buffer | null; trace?: MessageTrace; topic: string }): MessageTrace | undefined;
  /** The ACL answered for a sampled message (not asked when the client may publish everywhere). */
  authorized(t: MessageTrace, allowed: boolean): void;
  /** The scripts and extensions start on a sampled message. */
  scriptsStart(t: MessageTrace): void;
  /** The scripts and extensions answered: `outputs` messages made of it. */
  scripts(t: MessageTrace, outputs: number): void;
  /** The message is about to be routed. */
  routing(t: MessageTrace): void;
  /** Routed to `matched` subscriptions. */
  routed(t: MessageTrace, matched: number): void;
  /** A PUBLISH of the message was written to a subscriber; `inflight` (null for QoS 0) is the
   * in-flight entry its acknowledgement will name. */
  delivered(t: MessageTrace, clientId: string, qos: number, packetId: number, inflight: object | null): void;
  /** The subscriber acknowledged (PUBACK, or PUBCOMP) the PUBLISH of the in-flight entry. */
  acknowledged(t: MessageTrace, clientId: string, inflight: object): void;
  /** The broker is done with the publish: acknowledged to the publisher (`matched`
   * subscriptions; -1 dropped by a processor), or refused (`refused`: why). Ends the broker's span. */
  finished(t: MessageTrace, clientId: string, topic: string, qos: number, matched: number, refused?: string): void;
  /** A PUBLISH to `$delayed/...` is held until `dueAt` (ms since the epoch): ends the broker's
   * span of it. Its release is traced as a publish of its own, under this span (the held
   * message's properties carry its traceparent). */
  held(t: MessageTrace, clientId: string, topic: string, qos: number, dueAt: number): void;
}

/** Tracing off. */
export const NO_TRACER: MessageTracer = {
  enabled: false,
  untilSelected: Infinity,
  received() {},
  originated: () => undefined,
  authorized() {},
  scriptsStart() {},
  scripts() {},
  routing() {},
  routed() {},
  delivered() {},
  acknowledged() {},
  finished() {},
  held() {},
};

/** Milliseconds since the epoch, fractional, the same on every thread of the process. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A parsed traceparent header (W3C Trace Context level 1), or null when it is not valid. */
export interface Traceparent {
  traceId: string;
  parentId: string;
  sampled: boolean;
}

export function parseTraceparent(value: string): Traceparent | null {
  const m = TRACEPARENT.exec(value.trim());
  if (m === null || m[1] === 'ff') return null;
  if (/^0+$/.test(m[2]) || /^0+$/.test(m[3])) return null; // all-zero ids are invalid
  return { traceId: m[2], parentId: m[3], sampled: (parseInt(m[4], 16) & 1) === 1 };
}

export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

// MQTT 5 property identifiers by the form of their value (MQTT 5.0 section 2.2.2.2).
const ONE_BYTE = new Set([0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2a]);
const TWO_BYTES = new Set([0x13, 0x21, 0x22, 0x23]);
const FOUR_BYTES = new Set([0x02, 0x11, 0x18, 0x27]);
const LENGTH_PREFIXED = new Set([0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1a, 0x1c, 0x1f]);
const USER_PROPERTY = 0x26;
const VARINT = 0x0b;

/** The bytes a PUBLISH's properties hold when they may carry a traceparent: a cheap first test. */
const NEEDLE = Buffer.from('traceparent');

/** One user property: where its whole entry lies, its name and value. */
interface UserProperty {
  from: number;
  to: number;
  name: string;
  value: string;
}

/** The user properties of `props` (property bytes, no length prefix); null when malformed. */
function userProperties(props: Buffer): UserProperty[] | null {
  const out: UserProperty[] = [];
  let at = 0;
  while (at < props.length) {
    const id = props[at];
    const from = at++;
    if (ONE_BYTE.has(id)) at += 1;
    else if (TWO_BYTES.has(id)) at += 2;
    else if (FOUR_BYTES.has(id)) at += 4;
    else if (id === VARINT) {
      while (at < props.length && (props[at] & 0x80) !== 0) at++;
      at++;
    } else if (LENGTH_PREFIXED.has(id)) {
      if (at + 2 > props.length) return null;
      at += 2 + props.readUInt16BE(at);
    } else if (id === USER_PROPERTY) {
      if (at + 2 > props.length) return null;
      const nl = props.readUInt16BE(at);
      const name = props.toString('utf8', at + 2, at + 2 + nl);
      at += 2 + nl;
      if (at + 2 > props.length) return null;
      const vl = props.readUInt16BE(at);
      const value = props.toString('utf8', at + 2, at + 2 + vl);
      at += 2 + vl;
      out.push({ from, to: at, name, value });
    } else {
      return null;
    }
    if (at > props.length) return null;
  }
  return out;
}

/** The trace context a PUBLISH's properties carry (its first `traceparent` and `tracestate`
 * user properties), or null when they carry no valid traceparent. */
export function findTraceContext(props: Buffer): { parent: Traceparent; tracestate: string } | null {
  if (props.length < NEEDLE.length || !props.includes(NEEDLE)) return null;
  const users = userProperties(props);
  if (users === null) return null;
  let parent: Traceparent | null = null;
  let tracestate = '';
  for (const u of users) {
    if (parent === null && u.name === 'traceparent') parent = parseTraceparent(u.value);
    else if (tracestate === '' && u.name === 'tracestate') tracestate = u.value;
  }
  return parent === null ? null : { parent, tracestate };
}

function userProperty(name: string, value: string): Buffer {
  const n = Buffer.from(name, 'utf8');
  const v = Buffer.from(value, 'utf8');
  const out = Buffer.allocUnsafe(5 + n.length + v.length);
  out[0] = USER_PROPERTY;
  out.writeUInt16BE(n.length, 1);
  n.copy(out, 3);
  out.writeUInt16BE(v.length, 3 + n.length);
  v.copy(out, 5 + n.length);
  return out;
}

/** Properties holding only a `traceparent` user property (a sampled message that had none, the
 * common case): written in one small buffer, without the general path's four. The value is
 * ASCII (formatTraceparent, or a publisher's that parseTraceparent accepted). */
function traceparentAlone(traceparent: string): Buffer {
  const n = NEEDLE.length;
  const v = traceparent.length;
  const out = Buffer.allocUnsafe(5 + n + v);
  out[0] = USER_PROPERTY;
  out[1] = 0;
  out[2] = n;
  for (let i = 0; i < n; i++) out[3 + i] = NEEDLE[i];
  out[3 + n] = v >> 8;
  out[4 + n] = v & 0xff;
  for (let i = 0; i < v; i++) out[5 + n + i] = traceparent.charCodeAt(i);
  return out;
}

/** `props` (null: none) with their traceparent and tracestate user properties replaced by the
 * broker's: `traceparent`, and `tracestate` unless empty. The other properties keep their order. */
export function withTraceContext(props: Buffer | null, traceparent: string, tracestate: string): Buffer {
  if ((props === null || props.length === 0) && tracestate === '') return traceparentAlone(traceparent);
  const added = [userProperty('traceparent', traceparent)];
  if (tracestate !== '') added.push(userProperty('tracestate', tracestate));
  if (props === null || props.length === 0) return Buffer.concat(added);
  const users = props.includes(NEEDLE) || props.includes('tracestate') ? userProperties(props) : [];
  const kept: Buffer[] = [];
  let at = 0;
  for (const u of users ?? []) {
    if (u.name !== 'traceparent' && u.name !== 'tracestate') continue;
    if (u.from > at) kept.push(props.subarray(at, u.from));
    at = u.to;
  }
  if (at < props.length) kept.push(props.subarray(at));
  return Buffer.concat([...kept, ...added]);
}

/** W3C Trace Context: a tracestate is printable ASCII, and a vendor may cut one longer than 512. */
const TRACESTATE = /^[\x20-\x7e]{0,512}$/;

/** `props` (null: none) with the trace context a message brought from outside MQTT (a command's
 * source record's `traceparent` and `tracestate` headers) as the user properties an MQTT 5
 * publisher would send; a tracestate that is not printable ASCII or is longer than 512
 * characters is left out. `props` as they are when it brought no valid traceparent. */
export function withSourceTrace(props: Buffer | null, m: { traceparent?: string; tracestate?: string }): Buffer | null {
  if (m.traceparent === undefined) return props;
  const traceparent = m.traceparent.trim();
  if (parseTraceparent(traceparent) === null) return props;
  const tracestate = m.tracestate !== undefined && TRACESTATE.test(m.tracestate) ? m.tracestate.trim() : '';
  return withTraceContext(props, traceparent, tracestate);
}
