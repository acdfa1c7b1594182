// The frames messages cross nodes in: one NATS message per destination node per tick, holding
// every message of that tick for it. Per message: topic length (u16), topic (UTF-8), qos (u8),
// retain (u8), expiry (f64, ms since the epoch; 0: never), MQTT 5 properties length (u32; 0:
// none), properties (as encoded in a PUBLISH), payload length (u32), payload.
import type { BatchMessage } from '../worker/messages.ts';

export interface FrameMessage {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  expiresAt: number;
  props: Uint8Array | null;
}

const FIXED = 2 + 2 + 8 + 4 + 4;

/** Bytes a message takes in a frame. */
export function frameSize(m: FrameMessage): number {
  return FIXED + Buffer.byteLength(m.topic, 'utf8') + (m.props?.length ?? 0) + m.payload.length;
}

/** The messages cut into frames of at most `max` bytes each; a message larger than that alone is
 * left out and counted in `tooLarge`. */
export function encodeFrames(messages: readonly FrameMessage[], max: number): { frames: Uint8Array[]; tooLarge: number } {
  const frames: Uint8Array[] = [];
  let tooLarge = 0;
  let size = 0;
  const parts: FrameMessage[] = [];
  for (const m of messages) {
    const n = frameSize(m);
    if (n > max) {
      tooLarge++;
      continue;
    }
    if (size + n > max) {
      frames.push(encodeBatch(parts.splice(0)));
      size = 0;
    }
    parts.push(m);
    size += n;
  }
  if (parts.length > 0) frames.push(encodeBatch(parts));
  return { frames, tooLarge };
}

const EMPTY = new Uint8Array(0);

export function encodeBatch(messages: readonly FrameMessage[]): Uint8Array {
  let size = 0;
  const topics = messages.map((m) => Buffer.from(m.topic, 'utf8'));
  for (let i = 0; i < messages.length; i++) size += FIXED + topics[i].length + (messages[i].props?.length ?? 0) + messages[i].payload.length;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    o = out.writeUInt16BE(topics[i].length, o);
    o += topics[i].copy(out, o);
    o = out.writeUInt8(m.qos, o);
    o = out.writeUInt8(m.retain ? 1 : 0, o);
    o = out.writeDoubleBE(m.expiresAt, o);
    const props = m.props ?? EMPTY;
    o = out.writeUInt32BE(props.length, o);
    out.set(props, o);
    o += props.length;
    o = out.writeUInt32BE(m.payload.length, o);
    out.set(m.payload, o);
    o += m.payload.length;
  }
  return out;
}

/** The messages of a frame; a frame that does not parse throws (the caller counts it). */
export function decodeBatch(data: Uint8Array): BatchMessage[] {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: BatchMessage[] = [];
  let o = 0;
  while (o < b.length) {
    const tl = b.readUInt16BE(o);
    o += 2;
    if (o + tl + 14 > b.length) throw new Error('cluster frame cut short');
    const topic = b.toString('utf8', o, o + tl);
    o += tl;
    const qos = b.readUInt8(o);
    const retain = b.readUInt8(o + 1) === 1;
    const expiresAt = b.readDoubleBE(o + 2);
    const ppl = b.readUInt32BE(o + 10);
    o += 14;
    if (o + ppl + 4 > b.length || qos > 2) throw new Error('cluster frame cut short or bad qos');
    const props = ppl > 0 ? new Uint8Array(b.subarray(o, o + ppl)) : null;
    o += ppl;
    const pl = b.readUInt32BE(o);
    o += 4;
    if (o + pl > b.length) throw new Error('cluster frame cut short');
    out.push({ topic, payload: new Uint8Array(b.subarray(o, o + pl)), qos: qos as 0 | 1 | 2, retain, expiresAt, props });
    o += pl;
  }
  return out;
}
