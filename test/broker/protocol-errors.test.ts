// needs: broker
// Packets that parse but are not allowed from a client are a Protocol Error (MQTT 5.0 section
// 4.13.1: DISCONNECT 0x82), not a Malformed Packet (0x81, kept for what does not parse, such as a
// property not valid for its packet type, 2.2.2.2): a packet only a server sends, a packet
// identifier of 0 [MQTT-2.2.1-3], an acknowledgement with a reason code its type does not have.
// MQTT 3.1.1 has no DISCONNECT from the server: the connection just closes [MQTT-4.8.0-1].
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(() => broker.stop());

const V5_CASES: { name: string; bytes: number[]; reason: number }[] = [
  // SUBACK: packet id 1, no properties, granted QoS 0.
  { name: 'a SUBACK (only a server sends it)', bytes: [0x90, 0x04, 0x00, 0x01, 0x00, 0x00], reason: 0x82 },
  { name: 'a PINGRESP (only a server sends it)', bytes: [0xD0, 0x00], reason: 0x82 },
  // PUBLISH QoS 1: topic "t", packet id 0, no properties, payload "x".
  { name: 'a PUBLISH QoS 1 with packet id 0', bytes: [0x32, 0x07, 0x00, 0x01, 0x74, 0x00, 0x00, 0x00, 0x78], reason: 0x82 },
  { name: 'a PUBACK with packet id 0', bytes: [0x40, 0x02, 0x00, 0x00], reason: 0x82 },
  // PUBACK: packet id 1, reason 0x92 (Packet Identifier not found: PUBREL's and PUBCOMP's only).
  { name: 'a PUBACK with a reason code PUBACK does not have (0x92)', bytes: [0x40, 0x03, 0x00, 0x01, 0x92], reason: 0x82 },
  { name: 'a PUBREL with a reason code PUBREL does not have (0x80)', bytes: [0x62, 0x03, 0x00, 0x01, 0x80], reason: 0x82 },
  // Still malformed: PUBACK with a Topic Alias property (PUBLISH only), 2.2.2.2.
  { name: 'a PUBACK with a property not valid for it (still 0x81)', bytes: [0x40, 0x07, 0x00, 0x01, 0x00, 0x03, 0x23, 0x00, 0x01], reason: 0x81 },
];

for (const c of V5_CASES) {
  test(`v5: ${c.name} gets DISCONNECT 0x${c.reason.toString(16)}`, async () => {
    const { client, connack } = await RawClient.connect(broker.url, { clientId: `pe-${c.bytes[0].toString(16)}-${c.bytes.length}`, protocolVersion: 5 });
    try {
      assert.equal(connack.reasonCode, 0);
      client.write(c.bytes);
      const disconnect = await client.next('disconnect');
      assert.equal(disconnect.reasonCode, c.reason);
      await client.waitClosed();
    } finally {
      client.destroy();
    }
  });
}

for (const c of V5_CASES.filter((x) => x.reason === 0x82 && x.bytes[0] !== 0x40 && x.bytes[0] !== 0x62)) {
  test(`v3.1.1: ${c.name} closes the connection without a DISCONNECT`, async () => {
    const { client } = await RawClient.connect(broker.url, { clientId: `pe4-${c.bytes[0].toString(16)}`, protocolVersion: 4 });
    try {
      // The same packets without the v5 property length byte.
      const v4 = c.bytes[0] === 0x90 ? [0x90, 0x03, 0x00, 0x01, 0x00] : c.bytes[0] === 0x32 ? [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x00, 0x78] : c.bytes;
      client.write(v4);
      await client.waitClosed();
      assert.deepEqual(client.packets.map((p) => p.cmd), [], 'nothing is sent before the close');
    } finally {
      client.destroy();
    }
  });
}
