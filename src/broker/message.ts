// Message: an application message as the broker routes it, and its binary record, the one form
// in which a message crosses threads (delivery batches) or is kept by the shared retained store.
// The topic and payload are stored once; per-subscriber details (QoS, RETAIN flag, subscription
// identifiers, topic alias, remaining expiry) are added when the PUBLISH is encoded.
import type { MessageTrace } from './trace-context.ts';

export interface Message {
  topic: string;
  topicBytes: Buffer;
  payload: Buffer;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** v5 properties to forward unchanged (no alias, expiry or subscription ids), or null. */
  props: Buffer | null;
  /** Absolute expiry in ms since the epoch; 0 = never [MQTT-3.3.2-5]. */
  expiresAt: number;
  /** When the broker received it (ms), for latency metrics and the admin API. */
  receivedAt: number;
  /** The message's id in the store, once stored for a persistent session (see persistence.ts). */
  storeId?: bigint;
  /** The shared routing clock's tick when the message was routed (WorkerRouter.tick); absent for
   * messages not routed (retained messages sent on subscribe). */
  seq?: number;
  /** A message that came from another node of a cluster: its identity there (`<node>/<run>/
   * <tick>`, src/cluster/batch.ts), which a session receiving copies of it by two ways keeps
   * once (Session.firstCopy). Absent for messages published here (their identity is this node's
   * tag and `seq`). Not part of the record. */
  origin?: string;
  /** A sampled message's trace (OpenTelemetry traces, src/features/otel-traces); undefined for
   * every other message. Not part of the record (a delivery batch carries it, src/router/batch.ts). */
  trace?: MessageTrace;
}

/** Whether `m` was routed before the clock showed `tick` (wrap-aware: valid while the two are
 * less than 2^31 ticks apart). */
export function routedBefore(m: Message, tick: number): boolean {
  return m.seq !== undefined && ((m.seq - tick) | 0) < 0;
}

const HEADER = 32;
const FLAG_RETAIN = 1 << 2;

/** Bytes of a message's record. */
export function recordLength(m: Message): number {
  return HEADER + m.topicBytes.length + (m.props?.length ?? 0) + m.payload.length;
}

/**
 * Writes a message record at `offset` and returns its length. Layout (little endian):
 * 0 flags (bits 0-1 QoS, bit 2 retain) | 1 zero | 2 u16 topic length | 4 u32 properties length |
 * 8 u32 payload length | 12 u32 receivedAt (seconds since the epoch; the admin API shows it for
 * retained messages) | 16 f64 expiresAt (ms) | 24 u64 store id (0: not stored) |
 * 32 topic | properties | payload.
 */
export function writeRecord(m: Message, out: Buffer, offset: number): number {
  const propsLen = m.props?.length ?? 0;
  out[offset] = m.qos | (m.retain ? FLAG_RETAIN : 0);
  out[offset + 1] = 0;
  out.writeUInt16LE(m.topicBytes.length, offset + 2);
  out.writeUInt32LE(propsLen, offset + 4);
  out.writeUInt32LE(m.payload.length, offset + 8);
  out.writeUInt32LE((m.receivedAt / 1000) >>> 0, offset + 12);
  out.writeDoubleLE(m.expiresAt, offset + 16);
  out.writeBigUInt64LE(m.storeId ?? 0n, offset + 24);
  let at = offset + HEADER;
  m.topicBytes.copy(out, at);
  at += m.topicBytes.length;
  if (propsLen) {
    m.props!.copy(out, at);
    at += propsLen;
  }
  m.payload.copy(out, at);
  return at + m.payload.length - offset;
}

/** Reads the record at `offset` of `buf` into a Message whose buffers are views into `buf`. */
export function readRecord(buf: Buffer, offset: number, receivedAt = Date.now()): { message: Message; length: number } {
  const flags = buf[offset];
  const topicLen = buf.readUInt16LE(offset + 2);
  const propsLen = buf.readUInt32LE(offset + 4);
  const payloadLen = buf.readUInt32LE(offset + 8);
  const expiresAt = buf.readDoubleLE(offset + 16);
  // Most messages are never stored: no BigInt for them.
  const storeId = buf.readUInt32LE(offset + 24) === 0 && buf.readUInt32LE(offset + 28) === 0 ? 0n : buf.readBigUInt64LE(offset + 24);
  let at = offset + HEADER;
  const topicBytes = buf.subarray(at, at + topicLen);
  at += topicLen;
  const props = propsLen ? buf.subarray(at, at + propsLen) : null;
  at += propsLen;
  const payload = buf.subarray(at, at + payloadLen);
  at += payloadLen;
  return {
    message: {
      topic: topicBytes.toString('utf8'),
      topicBytes,
      payload,
      qos: (flags & 3) as 0 | 1 | 2,
      retain: (flags & FLAG_RETAIN) !== 0,
      props,
      expiresAt,
      receivedAt,
      storeId: storeId === 0n ? undefined : storeId,
      seq: undefined,
      trace: undefined,
    },
    length: at - offset,
  };
}

/** When the message of the record at `offset` was received (ms, to the second; 0: unknown). */
export function recordReceivedAt(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset + 12) * 1000;
}

/** Sets the expiry (ms since the epoch) of the record at `offset`. */
export function setRecordExpiresAt(buf: Buffer, offset: number, expiresAt: number): void {
  buf.writeDoubleLE(expiresAt, offset + 16);
}

/** When the retained copy of `m` expires: its own expiry, or with none, `defaultMs` (0: never)
 * after it was received (config limits.retainedDefaultExpiry). */
export function retainedExpiresAt(m: Message, defaultMs: number): number {
  return m.expiresAt !== 0 || defaultMs === 0 ? m.expiresAt : m.receivedAt + defaultMs;
}

/** A record in a Buffer of its own (for the retained store). */
export function toRecord(m: Message): Buffer {
  const out = Buffer.allocUnsafe(recordLength(m));
  writeRecord(m, out, 0);
  return out;
}

/** Splits the `[u32 LE length][record]...` framing the retained store answers with. */
export function* records(buf: Buffer): Generator<Message> {
  for (let at = 0; at < buf.length;) {
    const len = buf.readUInt32LE(at);
    yield readRecord(buf, at + 4).message;
    at += 4 + len;
  }
}

export function isExpired(m: Message, now: number): boolean {
  return m.expiresAt !== 0 && now >= m.expiresAt;
}

/** Seconds left before expiry, rounded up, for the forwarded Message Expiry Interval [MQTT-3.3.2-6]. */
export function remainingExpiry(m: Message, now: number): number | undefined {
  return m.expiresAt === 0 ? undefined : Math.max(0, Math.ceil((m.expiresAt - now) / 1000));
}
