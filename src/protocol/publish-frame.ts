// A PUBLISH frame without properties, written in JavaScript: the common case of delivery
// (MQTT 3.1/3.1.1, and 5.0 when nothing is forwarded). A native call costs ~300 ns here only to
// reach three Buffer arguments, more than writing 80 bytes; frames with properties go to the
// native encoder. test/protocol/publish-frame.test.ts checks it byte for byte against it.

/**
 * Writes a PUBLISH into `out` (exactly `len` bytes, from send.publishLength): `flags` are the
 * fixed header's low nibble (QoS, DUP, RETAIN); a QoS > 0 frame carries the packet identifier
 * `packetId` (patched per subscriber later); `v5` adds an empty property block.
 */
export function writePublishFrame(out: Buffer, flags: number, packetId: number, topic: Uint8Array, payload: Uint8Array, v5: boolean): void {
  let remaining = 2 + topic.length + ((flags & 6) !== 0 ? 2 : 0) + (v5 ? 1 : 0) + payload.length;
  out[0] = 0x30 | flags;
  let at = 1;
  do {
    let byte = remaining & 0x7f;
    remaining >>>= 7;
    if (remaining > 0) byte |= 0x80;
    out[at++] = byte;
  } while (remaining > 0);
  out[at++] = topic.length >>> 8;
  out[at++] = topic.length & 0xff;
  if (topic.length > 0) {
    out.set(topic, at);
    at += topic.length;
  }
  if ((flags & 6) !== 0) {
    out[at++] = packetId >>> 8;
    out[at++] = packetId & 0xff;
  }
  if (v5) out[at++] = 0;
  if (payload.length > 0) out.set(payload, at);
}
