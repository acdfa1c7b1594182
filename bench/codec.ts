// Codec benchmark: PUBLISH with a 100-byte payload, MQTT 3.1.1 and 5.0, parsed and encoded on
// one core through N-API, against mqtt-packet on the same packets in the same run.
// Targets (issue 2): parse >= 5x mqtt-packet, encode >= 3x, N-API crossing included.
import mqtt from 'mqtt-packet';

import { Framer, DESC_SLOTS, DESC_HELD, encodePublish } from '../src/native/index.ts';
import { measure, writeResults, type Row } from './lib/report.ts';

const TOPIC = 'spindle/bench/device-0042/telemetry';
const PAYLOAD = Buffer.alloc(100, 0x61);
const READ = 64 * 1024; // a socket read

function stream(version: 4 | 5, count: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    parts.push(mqtt.generate({ cmd: 'publish', topic: TOPIC, payload: PAYLOAD, qos: 1, messageId: 1 + (i % 65535), dup: false, retain: false } as mqtt.IPublishPacket, { protocolVersion: version }));
  }
  return Buffer.concat(parts);
}

function chunks(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < buf.length; at += READ) out.push(buf.subarray(at, at + READ));
  return out;
}

let sink = 0; // keeps results alive so the JIT cannot drop the work

function parseMqttPacket(version: 4 | 5, reads: Buffer[], perRead: number[]) {
  const parser = mqtt.parser({ protocolVersion: version });
  parser.on('packet', (packet: mqtt.Packet) => { const p = packet as mqtt.IPublishPacket; sink += p.topic.length + (p.payload as Buffer).length; });
  let cursor = 0; // reads continue where the last call stopped: the stream stays whole
  return (n: number) => {
    let packets = 0;
    for (let i = 0; i < n; i++) {
      const r = cursor++ % reads.length;
      parser.parse(reads[r]);
      packets += perRead[r];
    }
    return packets;
  };
}

/** descriptors only: what the broker's hot path needs (the topic is matched natively). */
function parseSpindle(version: 4 | 5, reads: Buffer[], materialize: boolean) {
  const framer = new Framer(1 << 20);
  framer.setVersion(version);
  const table = new Uint32Array(DESC_SLOTS * 1024);
  let cursor = 0;
  return (n: number) => {
    let packets = 0;
    for (let i = 0; i < n; i++) {
      const chunk = reads[cursor++ % reads.length];
      let count = framer.feed(chunk, table);
      while (count > 0) {
        let held: Buffer | undefined;
        for (let k = 0; k < count; k++) {
          const o = k * DESC_SLOTS;
          if (materialize) {
            const src = table[o] & DESC_HELD ? (held ??= framer.takeHeld()) : chunk;
            const topic = src.toString('utf8', table[o + 3], table[o + 3] + table[o + 4]);
            const payload = src.subarray(table[o + 8], table[o + 8] + table[o + 9]);
            sink += topic.length + payload.length;
          } else {
            sink += table[o + 9];
          }
        }
        packets += count;
        count = framer.more(chunk, table);
      }
    }
    return packets;
  };
}

function encodeMqttPacket(version: 4 | 5) {
  const packet = { cmd: 'publish' as const, topic: TOPIC, payload: PAYLOAD, qos: 1 as const, messageId: 1, dup: false, retain: false };
  return (n: number) => {
    for (let i = 0; i < n; i++) {
      packet.messageId = 1 + (i & 0x7fff);
      sink += mqtt.generate(packet, { protocolVersion: version }).length;
    }
    return n;
  };
}

function encodeSpindle(version: 4 | 5, topicAsString: boolean) {
  const out = Buffer.allocUnsafe(1 << 16);
  const topicBytes = Buffer.from(TOPIC);
  return (n: number) => {
    let at = 0;
    for (let i = 0; i < n; i++) {
      if (at > out.length - 512) at = 0;
      const topic = topicAsString ? Buffer.from(TOPIC) : topicBytes;
      at += encodePublish(version, out, at, 1, 1 + (i & 0x7fff), topic, PAYLOAD);
    }
    sink += at;
    return n;
  };
}

const rows: Row[] = [];
for (const version of [4, 5] as const) {
  const all = stream(version, 20000);
  const reads = chunks(all);
  // Packets completed per read (a read may end inside a packet).
  const perRead: number[] = [];
  {
    const f = new Framer(1 << 20); f.setVersion(version);
    const t = new Uint32Array(DESC_SLOTS * 1024);
    for (const r of reads) { let c = f.feed(r, t), total = 0; while (c > 0) { total += c; c = f.more(r, t); } perRead.push(total); }
  }
  const v = version === 4 ? '3.1.1' : '5.0';
  const base = measure(parseMqttPacket(version, reads, perRead));
  const ours = measure(parseSpindle(version, reads, true));
  const descOnly = measure(parseSpindle(version, reads, false));
  rows.push({ op: 'parse', version: v, 'mqtt-packet msg/s': Math.round(base.median), 'spindle msg/s': Math.round(ours.median), ratio: ours.median / base.median, target: '>= 5x', 'spread %': Math.max(base.spread, ours.spread) * 100 });
  rows.push({ op: 'parse (descriptors only)', version: v, 'mqtt-packet msg/s': Math.round(base.median), 'spindle msg/s': Math.round(descOnly.median), ratio: descOnly.median / base.median, target: '', 'spread %': Math.max(base.spread, descOnly.spread) * 100 });
  const ebase = measure(encodeMqttPacket(version));
  const eours = measure(encodeSpindle(version, false));
  const estr = measure(encodeSpindle(version, true));
  rows.push({ op: 'encode', version: v, 'mqtt-packet msg/s': Math.round(ebase.median), 'spindle msg/s': Math.round(eours.median), ratio: eours.median / ebase.median, target: '>= 3x', 'spread %': Math.max(ebase.spread, eours.spread) * 100 });
  rows.push({ op: 'encode (topic from a JS string)', version: v, 'mqtt-packet msg/s': Math.round(ebase.median), 'spindle msg/s': Math.round(estr.median), ratio: estr.median / ebase.median, target: '', 'spread %': Math.max(ebase.spread, estr.spread) * 100 });
}

writeResults('codec', 'Codec: PUBLISH, 100-byte payload, one core', rows, [
  'parse: 64 KiB socket reads of QoS 1 PUBLISH packets; Spindle makes one native call per read and then builds the topic string and a payload view in JS for each packet, as mqtt-packet does; "descriptors only" skips that (the broker matches topics natively).',
  'encode: Spindle writes into a caller-supplied buffer with the topic already as bytes (the broker forwards the inbound bytes); mqtt-packet allocates a Buffer per packet. The "topic from a JS string" row adds Buffer.from(topic) per packet.',
  'Median of 3 runs of about 1 s each; spread is (max - min) / median.',
]);
if (sink === 42) console.log('');
