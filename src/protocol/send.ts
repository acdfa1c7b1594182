// Outbound control packets (send_<packet> in Mosquitto's naming). Acks and PINGRESP are a few
// fixed bytes and are written here directly; the rest go through the native encoder.
import { encodePacket, type Properties } from '../native/index.ts';
import { RC, v3ConnackCode } from './reason-codes.ts';

export type Version = 3 | 4 | 5;

export const PINGRESP = Buffer.from([0xd0, 0x00]);

/** PUBACK (0x40), PUBREC (0x50), PUBREL (0x62) or PUBCOMP (0x70) for `packetId`. In v5 the reason
 * code is omitted when it is Success and there are no properties (MQTT 5.0 section 3.4.2.1). */
export function ack(header: 0x40 | 0x50 | 0x62 | 0x70, packetId: number, version: Version, reason = 0): Buffer {
  if (version === 5 && reason !== 0) return Buffer.from([header, 3, packetId >> 8, packetId & 0xff, reason]);
  return Buffer.from([header, 2, packetId >> 8, packetId & 0xff]);
}

export const PUBACK = 0x40;
export const PUBREC = 0x50;
export const PUBREL = 0x62;
export const PUBCOMP = 0x70;

export function connack(version: Version, sessionPresent: boolean, reason: number, properties?: Properties): Buffer {
  // [MQTT-3.2.2-4] session present is 0 when the CONNECT is refused.
  const present = reason === RC.SUCCESS && sessionPresent;
  if (version === 5) return encodePacket(5, { cmd: 'connack', sessionPresent: present, reasonCode: reason, properties });
  // v3: four fixed bytes, shared (sockets only read them) [MQTT-3.2.2-1, MQTT-3.2.2-2].
  const code = v3ConnackCode(reason);
  return V3_CONNACK_FRAMES[(version === 4 && present ? 8 : 0) + code] ??= Buffer.from([0x20, 2, version === 4 && present ? 1 : 0, code]);
}

/** The v3 CONNACK frames by session present * 8 + return code, made on first use. */
const V3_CONNACK_FRAMES: Buffer[] = [];

export function suback(version: Version, packetId: number, codes: number[], properties?: Properties): Buffer {
  // v3.1.1 has only 0x00-0x02 and 0x80 [MQTT-3.9.3-2].
  const granted = version === 5 ? codes : codes.map((c) => (c < 0x80 ? c : 0x80));
  return encodePacket(version, { cmd: 'suback', messageId: packetId, granted, properties: version === 5 ? properties : undefined });
}

export function unsuback(version: Version, packetId: number, codes: number[]): Buffer {
  return encodePacket(version, { cmd: 'unsuback', messageId: packetId, granted: version === 5 ? codes : undefined });
}

/** Server DISCONNECT: v5 only; v3 has no server DISCONNECT, the connection is just closed. */
/** A v5 DISCONNECT; `serverReference` (0x1C) names the server to use instead (with 0x9C Use
 * another server). */
export function disconnect(reason: number, reasonString?: string, serverReference?: string): Buffer {
  const properties = reasonString || serverReference ? { ...(reasonString ? { reasonString } : {}), ...(serverReference ? { serverReference } : {}) } : undefined;
  return encodePacket(5, { cmd: 'disconnect', reasonCode: reason, properties });
}

export function auth(reason: number, properties: Properties): Buffer {
  return encodePacket(5, { cmd: 'auth', reasonCode: reason, properties });
}

/** Bytes of a variable byte integer. */
export function varintLength(n: number): number {
  return n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : 4;
}

export function writeVarint(out: Buffer, at: number, n: number): number {
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n > 0) b |= 0x80;
    out[at++] = b;
  } while (n > 0);
  return at;
}

/**
 * The v5 property block of one outgoing PUBLISH: the message's forwarded properties, then the
 * remaining Message Expiry Interval, the subscriber's Subscription Identifiers and the Topic
 * Alias chosen for this connection.
 */
export function publishProperties(base: Buffer | null, expiry: number | undefined, subscriptionIds: number[] | null, alias: number): Buffer | null {
  let extra = 0;
  if (expiry !== undefined) extra += 5;
  if (subscriptionIds) for (const id of subscriptionIds) extra += 1 + varintLength(id);
  if (alias) extra += 3;
  if (extra === 0) return base;
  const baseLen = base?.length ?? 0;
  const out = Buffer.allocUnsafe(baseLen + extra);
  if (base) base.copy(out, 0);
  let at = baseLen;
  if (expiry !== undefined) {
    out[at] = 0x02;
    out.writeUInt32BE(expiry, at + 1);
    at += 5;
  }
  if (subscriptionIds) {
    for (const id of subscriptionIds) {
      out[at++] = 0x0b;
      at = writeVarint(out, at, id);
    }
  }
  if (alias) {
    out[at] = 0x23;
    out.writeUInt16BE(alias, at + 1);
  }
  return out;
}

/** Total bytes of a PUBLISH frame. */
export function publishLength(version: Version, qos: number, topicLen: number, propsLen: number, payloadLen: number): number {
  const remaining = 2 + topicLen + (qos > 0 ? 2 : 0) + (version === 5 ? varintLength(propsLen) + propsLen : 0) + payloadLen;
  return 1 + varintLength(remaining) + remaining;
}

/** Offset of the packet identifier inside a QoS > 0 PUBLISH frame, to patch it per subscriber:
 * after the remaining length, and the topic (whose length the frame carries; empty after an alias). */
export function packetIdOffset(frame: Buffer): number {
  let at = 1;
  while (frame[at] & 0x80) at++;
  return at + 3 + frame.readUInt16BE(at + 1);
}

/**
 * A PUBLISH property block from properties given as an object (a will, an HTTP publish): the
 * properties a PUBLISH forwards unchanged (MQTT 5.0 section 3.3.2.3). Expiry, alias and
 * subscription identifiers are added per delivery, not here.
 */
export function forwardedProperties(p: Properties | null | undefined): Buffer | null {
  if (!p) return null;
  const parts: Buffer[] = [];
  const str = (id: number, s: string) => {
    const b = Buffer.from(s, 'utf8');
    const out = Buffer.allocUnsafe(3 + b.length);
    out[0] = id;
    out.writeUInt16BE(b.length, 1);
    b.copy(out, 3);
    return out;
  };
  const bin = (id: number, b: Buffer) => {
    const out = Buffer.allocUnsafe(3 + b.length);
    out[0] = id;
    out.writeUInt16BE(b.length, 1);
    b.copy(out, 3);
    return out;
  };
  if (p.payloadFormatIndicator !== undefined && p.payloadFormatIndicator !== null) parts.push(Buffer.from([0x01, p.payloadFormatIndicator ? 1 : 0]));
  if (p.contentType) parts.push(str(0x03, p.contentType));
  if (p.responseTopic) parts.push(str(0x08, p.responseTopic));
  if (p.correlationData) parts.push(bin(0x09, Buffer.from(p.correlationData)));
  for (const [k, v] of p.userProperties ?? []) parts.push(Buffer.concat([Buffer.from([0x26]), str(0, k).subarray(1), str(0, v).subarray(1)]));
  return parts.length ? Buffer.concat(parts) : null;
}
