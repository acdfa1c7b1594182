// The frames messages cross nodes in: one NATS message per destination node per tick, holding
// every message of that tick for it. Per message: topic length (u16), topic (UTF-8), qos (u8),
// flags (u8: bit 0 retain, bit 1 deliver to the plain subscribers), expiry (f64, ms since the
// epoch; 0: never), the publisher's client-id hash (u32), the number of shared groups (u32), per
// group its length (u32) and `$share/<group>/<filter>` (UTF-8; the groups the destination was
// picked for: one member there gets the message), MQTT 5 properties length (u32; 0: none),
// properties (as encoded in a PUBLISH), payload length (u32), payload, the message's identity
// across the cluster (u16 length, UTF-8; 0: none: see `origin`), and the client ids it is only
// for (u16 count, then per client id u16 length and UTF-8; 0: for whoever matches).
import type { BatchMessage } from '../worker/messages.ts';

export interface FrameMessage {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  expiresAt: number;
  props: Uint8Array | null;
  /** For the destination's plain (non-shared) subscribers. */
  plain: boolean;
  /** The shared groups the destination was picked for (`$share/<group>/<filter>`); null: none. */
  shares: readonly string[] | null;
  /** The publisher's client-id hash (the hash_clientid strategy picks the member by it). */
  publisherHash: number;
  /** The message's identity across the cluster: its first node's name, run and routing tick
   * (`<node>/<run>/<tick>`, made by that node's worker), the same in every copy, so a session
   * that may get two copies (a move between nodes) takes one. '' for QoS 0. */
  origin: string;
  /** Only for the sessions of these client ids on the destination (a message forwarded to the
   * node a session moved to, or the frames of a node gone taken by the node adopting its
   * sessions); null: for whoever matches there. */
  only: readonly string[] | null;
}

const FIXED = 2 + 2 + 8 + 4 + 4 + 4 + 4 + 2 + 2;
const RETAIN = 1;
const PLAIN = 2;

/** Bytes a message takes in a frame. */
export function frameSize(m: FrameMessage): number {
  let n = FIXED + Buffer.byteLength(m.topic, 'utf8') + (m.props?.length ?? 0) + m.payload.length;
  if (m.shares) for (const s of m.shares) n += 4 + Buffer.byteLength(s, 'utf8');
  n += Buffer.byteLength(m.origin, 'utf8');
  if (m.only) for (const c of m.only) n += 2 + Buffer.byteLength(c, 'utf8');
  return n;
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
  for (const m of messages) size += frameSize(m);
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (const m of messages) {
    const tl = out.write(m.topic, o + 2, 'utf8');
    out.writeUInt16BE(tl, o);
    o += 2 + tl;
    o = out.writeUInt8(m.qos, o);
    o = out.writeUInt8((m.retain ? RETAIN : 0) | (m.plain ? PLAIN : 0), o);
    o = out.writeDoubleBE(m.expiresAt, o);
    o = out.writeUInt32BE(m.publisherHash >>> 0, o);
    const shares = m.shares ?? [];
    o = out.writeUInt32BE(shares.length, o);
    for (const s of shares) {
      const sl = out.write(s, o + 4, 'utf8');
      out.writeUInt32BE(sl, o);
      o += 4 + sl;
    }
    const props = m.props ?? EMPTY;
    o = out.writeUInt32BE(props.length, o);
    out.set(props, o);
    o += props.length;
    o = out.writeUInt32BE(m.payload.length, o);
    out.set(m.payload, o);
    o += m.payload.length;
    const ol = out.write(m.origin, o + 2, 'utf8');
    out.writeUInt16BE(ol, o);
    o += 2 + ol;
    const only = m.only ?? [];
    o = out.writeUInt16BE(only.length, o);
    for (const c of only) {
      const cl = out.write(c, o + 2, 'utf8');
      out.writeUInt16BE(cl, o);
      o += 2 + cl;
    }
  }
  return out;
}

/** The messages of a frame; a frame that does not parse throws (the caller counts it). */
export function decodeBatch(data: Uint8Array): BatchMessage[] {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: BatchMessage[] = [];
  let o = 0;
  const cut = (n: number) => {
    if (o + n > b.length) throw new Error('cluster frame cut short');
  };
  while (o < b.length) {
    cut(2);
    const tl = b.readUInt16BE(o);
    o += 2;
    cut(tl + 18);
    const topic = b.toString('utf8', o, o + tl);
    o += tl;
    const qos = b.readUInt8(o);
    const flags = b.readUInt8(o + 1);
    const expiresAt = b.readDoubleBE(o + 2);
    const publisherHash = b.readUInt32BE(o + 10);
    const ns = b.readUInt32BE(o + 14);
    o += 18;
    if (qos > 2) throw new Error('cluster frame with a bad qos');
    let shares: string[] | null = null;
    if (ns > 0) {
      shares = [];
      for (let i = 0; i < ns; i++) {
        cut(4);
        const sl = b.readUInt32BE(o);
        o += 4;
        cut(sl);
        shares.push(b.toString('utf8', o, o + sl));
        o += sl;
      }
    }
    cut(4);
    const ppl = b.readUInt32BE(o);
    o += 4;
    cut(ppl + 4);
    const props = ppl > 0 ? new Uint8Array(b.subarray(o, o + ppl)) : null;
    o += ppl;
    const pl = b.readUInt32BE(o);
    o += 4;
    cut(pl + 2);
    const payload = new Uint8Array(b.subarray(o, o + pl));
    o += pl;
    const ol = b.readUInt16BE(o);
    o += 2;
    cut(ol + 2);
    const origin = b.toString('utf8', o, o + ol);
    o += ol;
    const nc = b.readUInt16BE(o);
    o += 2;
    let only: string[] | null = null;
    if (nc > 0) {
      only = [];
      for (let i = 0; i < nc; i++) {
        cut(2);
        const cl = b.readUInt16BE(o);
        o += 2;
        cut(cl);
        only.push(b.toString('utf8', o, o + cl));
        o += cl;
      }
    }
    out.push({ topic, payload, qos: qos as 0 | 1 | 2, retain: (flags & RETAIN) !== 0, expiresAt, props, plain: (flags & PLAIN) !== 0, shares, publisherHash, origin, only });
  }
  return out;
}
