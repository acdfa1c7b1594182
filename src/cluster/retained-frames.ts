// The frames retained messages cross nodes in (main thread): a flags byte (bit 0: the last frame of
// a catch-up reply), then entries. Per entry (big endian): kind (u8: 1 set, 0 clear), version
// (u64: ms << 22 | the origin node's tag, see retained.ts), topic length (u16), topic (UTF-8); a
// set goes on with qos (u8), expiry (f64, ms since the epoch; 0: never), properties length (u32),
// the MQTT 5 properties as in a PUBLISH, payload length (u32), payload. Frames are cut under NATS
// max_payload; an entry larger than that alone is left out and counted.

export const FLAG_LAST = 1;

export interface RetainedEntry {
  topic: string;
  version: bigint;
  /** null: the topic's retained message was cleared (a tombstone). */
  message: { qos: 0 | 1 | 2; expiresAt: number; props: Uint8Array | null; payload: Uint8Array } | null;
}

/** Bytes an entry takes in a frame (`topicBytes`: its topic's UTF-8 length). */
function entrySize(e: RetainedEntry, topicBytes: number): number {
  return 1 + 8 + 2 + topicBytes + (e.message ? 1 + 8 + 4 + (e.message.props?.length ?? 0) + 4 + e.message.payload.length : 0);
}

/** The entries cut into frames of at most `max` bytes; `last` marks the final frame (and an empty
 * list still makes one frame then, so the asker knows the reply is complete). */
export function encodeRetained(entries: readonly RetainedEntry[], max: number, last = false): { frames: Uint8Array[]; tooLarge: number } {
  const frames: Uint8Array[] = [];
  let tooLarge = 0;
  let part: { e: RetainedEntry; topic: Buffer; size: number }[] = [];
  let size = 1;
  const cut = (final: boolean) => {
    frames.push(encodeFrame(part, size, final));
    part = [];
    size = 1;
  };
  for (const e of entries) {
    const topic = Buffer.from(e.topic, 'utf8');
    const n = entrySize(e, topic.length);
    if (n + 1 > max || topic.length > 0xffff) {
      tooLarge++;
      continue;
    }
    if (size + n > max) cut(false);
    part.push({ e, topic, size: n });
    size += n;
  }
  if (part.length > 0 || (last && frames.length === 0)) cut(last);
  else if (last) frames[frames.length - 1][0] |= FLAG_LAST;
  return { frames, tooLarge };
}

function encodeFrame(part: readonly { e: RetainedEntry; topic: Buffer }[], size: number, last: boolean): Uint8Array {
  const out = Buffer.allocUnsafeSlow(size);
  let o = out.writeUInt8(last ? FLAG_LAST : 0, 0);
  for (const { e, topic } of part) {
    o = out.writeUInt8(e.message ? 1 : 0, o);
    o = out.writeBigUInt64BE(e.version, o);
    o = out.writeUInt16BE(topic.length, o);
    o += topic.copy(out, o);
    const m = e.message;
    if (!m) continue;
    o = out.writeUInt8(m.qos, o);
    o = out.writeDoubleBE(m.expiresAt, o);
    o = out.writeUInt32BE(m.props?.length ?? 0, o);
    if (m.props) {
      out.set(m.props, o);
      o += m.props.length;
    }
    o = out.writeUInt32BE(m.payload.length, o);
    out.set(m.payload, o);
    o += m.payload.length;
  }
  return out;
}

/** A frame's flags and entries (views into `data`); a frame that does not parse throws (the
 * caller counts it and drops the frame). */
export function decodeRetained(data: Uint8Array): { last: boolean; entries: RetainedEntry[] } {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (b.length < 1) throw new Error('empty retained frame');
  const need = (o: number, n: number) => {
    if (o + n > b.length) throw new Error('retained frame cut short');
  };
  const last = (b[0] & FLAG_LAST) !== 0;
  const entries: RetainedEntry[] = [];
  let o = 1;
  while (o < b.length) {
    need(o, 11);
    const kind = b[o];
    const version = b.readBigUInt64BE(o + 1);
    const tl = b.readUInt16BE(o + 9);
    o += 11;
    need(o, tl);
    const topic = b.toString('utf8', o, o + tl);
    o += tl;
    if (kind === 0) {
      entries.push({ topic, version, message: null });
      continue;
    }
    if (kind !== 1) throw new Error(`retained entry of unknown kind ${kind}`);
    need(o, 13);
    const qos = b[o];
    if (qos > 2) throw new Error(`retained entry with QoS ${qos}`);
    const expiresAt = b.readDoubleBE(o + 1);
    const pl = b.readUInt32BE(o + 9);
    o += 13;
    need(o, pl + 4);
    const props = pl > 0 ? b.subarray(o, o + pl) : null;
    o += pl;
    const len = b.readUInt32BE(o);
    o += 4;
    need(o, len);
    entries.push({ topic, version, message: { qos: qos as 0 | 1 | 2, expiresAt, props, payload: b.subarray(o, o + len) } });
    o += len;
  }
  return { last, entries };
}
