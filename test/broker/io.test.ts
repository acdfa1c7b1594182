// needs: broker
// The two I/O paths of TCP connections (mqtt.io): the native driver (the default: accept, read
// and write in the Rust core, one batch per event-loop turn) and Node's net sockets (kept for one
// release). The framer's malformed-input table (native/core/tests/codec_malformed.rs) goes
// through each, whole and a byte per write, and must end the same way: DISCONNECT with the
// row's reason code, then the close. TCP and TLS clients exchange messages on both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

const MALFORMED = 0x81;
const PROTOCOL = 0x82;
const t = 0x74;

/** MQTT 5 rows of the codec's malformed-input table: bytes after a good CONNECT, and the reason
 * code of the DISCONNECT the broker answers with. */
const ROWS: { name: string; bytes: number[]; reason: number }[] = [
  { name: 'packet type 0', bytes: [0x00, 0x00], reason: MALFORMED },
  { name: 'remaining length of 5 bytes', bytes: [0x30, 0xff, 0xff, 0xff, 0xff, 0x01], reason: MALFORMED },
  { name: 'PUBACK flags 1 [MQTT-2.1.3-1]', bytes: [0x41, 0x02, 0x00, 0x01], reason: MALFORMED },
  { name: 'PUBREL flags 0 [MQTT-3.6.1-1]', bytes: [0x60, 0x02, 0x00, 0x01], reason: MALFORMED },
  { name: 'PINGREQ flags 1', bytes: [0xc1, 0x00], reason: MALFORMED },
  { name: 'PINGREQ with a body', bytes: [0xc0, 0x01, 0x00], reason: MALFORMED },
  { name: 'PUBLISH QoS 3 [MQTT-3.3.1-4]', bytes: [0x36, 0x06, 0x00, 0x01, t, 0x00, 0x01, 0x00], reason: MALFORMED },
  { name: 'PUBLISH topic with # [MQTT-3.3.2-2]', bytes: [0x30, 0x05, 0x00, 0x02, 0x61, 0x23, 0x00], reason: 0x90 },
  { name: 'PUBLISH topic alias 0 [MQTT-3.3.2-8]', bytes: [0x30, 0x07, 0x00, 0x01, t, 0x03, 0x23, 0x00, 0x00], reason: 0x94 },
  { name: 'PUBLISH message expiry twice', bytes: [0x30, 0x0e, 0x00, 0x01, t, 0x0a, 0x02, 0, 0, 0, 1, 0x02, 0, 0, 0, 2], reason: PROTOCOL },
  { name: 'PUBLISH session expiry (MQTT 5.0 2.2.2.2)', bytes: [0x30, 0x09, 0x00, 0x01, t, 0x05, 0x11, 0, 0, 0, 1], reason: MALFORMED },
  { name: 'PUBLISH unknown property 0x04', bytes: [0x30, 0x06, 0x00, 0x01, t, 0x02, 0x04, 0x00], reason: MALFORMED },
  { name: 'PUBLISH payload format 2', bytes: [0x30, 0x06, 0x00, 0x01, t, 0x02, 0x01, 0x02], reason: PROTOCOL },
  { name: 'PUBLISH subscription id 0', bytes: [0x30, 0x06, 0x00, 0x01, t, 0x02, 0x0b, 0x00], reason: PROTOCOL },
  { name: 'PUBLISH property length past the frame', bytes: [0x30, 0x05, 0x00, 0x01, t, 0x09, 0x01], reason: MALFORMED },
  { name: 'PUBLISH QoS 1 packet id 0 [MQTT-2.2.1-3]', bytes: [0x32, 0x06, 0x00, 0x01, t, 0x00, 0x00, 0x00], reason: PROTOCOL },
  { name: 'a packet over the maximum packet size', bytes: [0x30, 0x80, 0x80, 0x80, 0x01], reason: 0x95 },
];

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-io-'));
const f = (name: string) => path.join(dir, name);
const brokers = new Map<'native' | 'node', TestBroker>();

before(async () => {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=Spindle IO Test CA');
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=spindle-io');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f('server.crt'), '-extfile', f('server.ext'));
  for (const io of ['native', 'node'] as const) {
    brokers.set(io, await startBroker({ workers: 1, mqtt: { io, tls: { port: 0, cert: f('server.crt'), key: f('server.key') } }, limits: { maxPacketSize: 65536 } }));
  }
});
after(async () => {
  for (const b of brokers.values()) await b.stop();
});

for (const io of ['native', 'node'] as const) {
  for (const split of [false, true]) {
    test(`mqtt.io ${io}: the malformed-input table${split ? ', a byte per write,' : ''} ends each connection with its reason code`, async () => {
      const b = brokers.get(io)!;
      for (const row of ROWS) {
        const { client, connack } = await RawClient.connect(b.url, { clientId: `io-${io}-${split}-${ROWS.indexOf(row)}`, protocolVersion: 5 });
        try {
          assert.equal(connack.reasonCode, 0);
          if (split) for (const byte of row.bytes) client.write([byte]);
          else client.write(row.bytes);
          const disconnect = await client.next('disconnect');
          assert.equal(disconnect.reasonCode, row.reason, `${row.name}: DISCONNECT 0x${row.reason.toString(16)}`);
          await client.waitClosed();
        } finally {
          client.destroy();
        }
      }
    });
  }

  test(`mqtt.io ${io}: a TCP client's messages, large and small, reach a TLS subscriber in order`, async () => {
    const here = brokers.get(io)!;
    const ca = readFileSync(f('ca.crt'));
    const tls = await connect(`mqtts://127.0.0.1:${here.ports.tls}`, { clientId: `io-tls-${io}`, ca, protocolVersion: 5 });
    const tcp = await connect(here.url, { clientId: `io-tcp-${io}`, protocolVersion: 4 });
    try {
      await tls.subscribeAsync('io/#', { qos: 1 });
      // One large message (past the driver's arena frame size: written on its own) between small ones.
      const large = Buffer.alloc(60_000, 7);
      const got = nextMessages(tls, 3);
      await tcp.publishAsync('io/a', 'first', { qos: 1 });
      await tcp.publishAsync('io/b', large, { qos: 1 });
      await tcp.publishAsync('io/c', 'last', { qos: 0 });
      const messages = await got;
      assert.deepEqual(messages.map((m) => m.topic), ['io/a', 'io/b', 'io/c']);
      assert.ok(Buffer.from(messages[1].packet.payload).equals(large), 'the large payload arrives whole');
      assert.equal(messages[2].payload, 'last');
    } finally {
      await end(tls);
      await end(tcp);
    }
  });
}
