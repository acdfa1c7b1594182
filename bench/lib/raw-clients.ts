// Lean MQTT 3.1.1 clients for benchmarks: pre-encoded frames out, the native framer in, so the
// load generator costs far less than the broker it measures (mqtt.js would be the bottleneck).
import net from 'node:net';
import { once } from 'node:events';

import mqtt from 'mqtt-packet';

import { Framer, DESC_SLOTS } from '../../src/native/index.ts';

function frame(packet: object): Buffer {
  return mqtt.generate(packet as mqtt.Packet, { protocolVersion: 4 });
}

async function open(port: number, clientId: string, clean: boolean): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await once(socket, 'connect');
  socket.write(frame({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId, clean, keepalive: 0 }));
  const [chunk] = (await once(socket, 'data')) as [Buffer];
  if (chunk[0] !== 0x20 || chunk[3] !== 0) throw new Error(`CONNACK refused: ${chunk.toString('hex')}`);
  // Queued messages may follow the CONNACK in the same read: give them back to the stream.
  if (chunk.length > 4) socket.unshift(chunk.subarray(4));
  return socket;
}

/**
 * Publishes `count` QoS 1 messages of `payload` to `topic` keeping `window` unacknowledged,
 * and resolves when every PUBACK has arrived.
 */
export async function publishQos1(port: number, clientId: string, topic: string, payload: Buffer, count: number, window: number): Promise<void> {
  const socket = await open(port, clientId, true);
  // One frame per packet id; ids are reused as PUBACKs free them (window < 65535).
  const frames = Array.from({ length: window }, (_, i) => frame({ cmd: 'publish', topic, payload, qos: 1, messageId: i + 1, dup: false, retain: false }));
  let sent = 0;
  let acked = 0;
  let pending: Buffer = Buffer.alloc(0);
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      const batch: Buffer[] = [];
      while (at + 4 <= pending.length) {
        if (pending[at] !== 0x40) return reject(new Error(`unexpected packet 0x${pending[at].toString(16)}`));
        const id = pending.readUInt16BE(at + 2);
        at += 4;
        acked++;
        if (sent < count) {
          batch.push(frames[id - 1]);
          sent++;
        }
      }
      pending = pending.subarray(at);
      if (batch.length) socket.write(batch.length === 1 ? batch[0] : Buffer.concat(batch));
      if (acked === count) resolve();
    });
    const first = Math.min(window, count);
    socket.write(Buffer.concat(frames.slice(0, first)));
    sent = first;
  });
  socket.end(frame({ cmd: 'disconnect' }));
}

/** Makes a persistent session subscribed to `filter` at QoS 1, then leaves. */
export async function persistentSubscribe(port: number, clientId: string, filter: string): Promise<void> {
  const socket = await open(port, clientId, false);
  socket.write(frame({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }] }));
  const [suback] = (await once(socket, 'data')) as [Buffer];
  if (suback[0] !== 0x90) throw new Error('no SUBACK');
  socket.end(frame({ cmd: 'disconnect' }));
  await once(socket, 'close');
}

/** Reconnects a persistent session and acknowledges QoS 1 messages until `count` arrived. */
export async function drain(port: number, clientId: string, count: number): Promise<void> {
  const socket = await open(port, clientId, false);
  const framer = new Framer(1 << 24);
  framer.setVersion(4);
  const table = new Uint32Array(DESC_SLOTS * 1024);
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      const acks: Buffer[] = [];
      let n = framer.feed(chunk, table);
      while (n > 0) {
        for (let i = 0; i < n; i++) {
          const o = i * DESC_SLOTS;
          if ((table[o] & 0xf0) !== 0x30) continue;
          received++;
          const id = table[o + 5];
          if (id) acks.push(Buffer.from([0x40, 2, id >> 8, id & 0xff]));
        }
        n = framer.more(chunk, table);
      }
      if (framer.error) return reject(new Error(framer.error.message));
      if (acks.length) socket.write(Buffer.concat(acks));
      if (received >= count) resolve();
    });
  });
  socket.end(frame({ cmd: 'disconnect' }));
}
