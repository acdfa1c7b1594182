// Framer through N-API: one feed per socket read, descriptors per packet, held packets that span
// reads, and the fixed-header checks made before a body is buffered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt-packet';

import { Framer, DESC_SLOTS, DESC_HELD, DESC_EXPIRY, encodePacket, decodePacket } from '../../src/native/index.ts';
import { Rng, seeds } from '../helpers/random.ts';

type Frame = { header: number; bytes: Buffer; desc: Uint32Array; source: Buffer };

function feedAll(framer: InstanceType<typeof Framer>, chunk: Buffer, table = new Uint32Array(DESC_SLOTS * 64)): Frame[] {
  const frames: Frame[] = [];
  let n = framer.feed(chunk, table);
  while (n > 0) {
    let held: Buffer | undefined;
    for (let i = 0; i < n; i++) {
      const d = table.slice(i * DESC_SLOTS, (i + 1) * DESC_SLOTS);
      const source = d[0] & DESC_HELD ? (held ??= framer.takeHeld()) : chunk;
      frames.push({ header: d[0] & 0xff, bytes: Buffer.from(source.subarray(d[1], d[1] + d[2])), desc: d, source });
    }
    n = framer.more(chunk, table);
  }
  return frames;
}

function publish(topic: string, payload: Buffer, qos: 0 | 1 | 2, messageId = 1, properties?: object): Buffer {
  return mqtt.generate({ cmd: 'publish', topic, payload, qos, messageId, dup: false, retain: false, properties } as mqtt.IPublishPacket, { protocolVersion: 5 });
}

test('a PUBLISH descriptor gives topic, packet id, properties and payload as offsets into the chunk', () => {
  const framer = new Framer(1 << 20);
  framer.setVersion(5);
  const bytes = publish('a/b', Buffer.from('hello'), 1, 42, { messageExpiryInterval: 30, topicAlias: 3 });
  const chunk = Buffer.concat([Buffer.from([0xc0, 0x00]), bytes]); // PINGREQ then PUBLISH
  const frames = feedAll(framer, chunk);
  assert.equal(frames.length, 2);
  assert.equal(frames[0].header, 0xc0);
  const d = frames[1].desc;
  assert.equal(d[0] & 0xff, 0x32);
  assert.equal(chunk.toString('utf8', d[3], d[3] + d[4]), 'a/b');
  assert.equal(d[5], 42);
  assert.equal(chunk.toString('utf8', d[8], d[8] + d[9]), 'hello');
  assert.equal(d[10], 3, 'topic alias');
  assert.ok(d[0] & DESC_EXPIRY);
  assert.equal(d[11], 30, 'message expiry');
  assert.equal(d[7], 5 + 3, 'property bytes: expiry (5) + alias (3)');
});

test('a packet split across reads is held and handed over whole', () => {
  const framer = new Framer(1 << 20);
  const bytes = publish('x/y/z', Buffer.alloc(300, 7), 0);
  const a = feedAll(framer, bytes.subarray(0, 1));
  const b = feedAll(framer, bytes.subarray(1, 100));
  assert.equal(a.length + b.length, 0);
  assert.equal(framer.buffered, 100);
  const c = feedAll(framer, Buffer.concat([bytes.subarray(100), Buffer.from([0xc0, 0x00])]));
  assert.equal(c.length, 2);
  assert.ok(c[0].desc[0] & DESC_HELD, 'the completed packet comes from the held buffer');
  assert.deepEqual(c[0].bytes, bytes);
  assert.equal(c[1].header, 0xc0);
  assert.equal(framer.buffered, 0);
});

test('more() pages through a read with more packets than the table holds', () => {
  const framer = new Framer(1 << 20);
  const chunk = Buffer.alloc(2 * 1000);
  for (let i = 0; i < 1000; i++) chunk[i * 2] = 0xc0; // 1000 PINGREQs
  const frames = feedAll(framer, chunk, new Uint32Array(DESC_SLOTS * 7));
  assert.equal(frames.length, 1000);
});

for (const seed of seeds(20)) {
  test(`any split of a valid stream yields the same packets (seed ${seed})`, () => {
    const rng = new Rng(seed);
    const packets: Buffer[] = [];
    for (let i = 0; i < 50; i++) {
      packets.push(rng.bool(0.7)
        ? publish(rng.topic(), rng.bytes(rng.int(rng.bool(0.1) ? 70000 : 200)), rng.pick([0, 1, 2] as const), 1 + rng.int(65535))
        : encodePacket(5, { cmd: rng.pick(['pingreq', 'puback', 'pubrel']), messageId: 1 + rng.int(65535), reasonCode: 0 }));
    }
    const stream = Buffer.concat(packets);
    const framer = new Framer(1 << 24);
    framer.setVersion(5);
    const got: Buffer[] = [];
    for (let at = 0; at < stream.length;) {
      const n = 1 + rng.int(rng.bool(0.2) ? 5 : 20000);
      got.push(...feedAll(framer, stream.subarray(at, at + n)).map((f) => f.bytes));
      at += n;
    }
    assert.equal(got.length, packets.length);
    got.forEach((g, i) => assert.ok(g.equals(packets[i]), `packet ${i} differs`));
  });
}

test('a remaining length longer than 4 bytes is malformed (0x81)', () => {
  const framer = new Framer(1 << 24);
  assert.equal(feedAll(framer, Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])).length, 0);
  assert.equal(framer.error?.reason, 0x81);
});

test('a packet larger than the maximum is refused from its fixed header, before the body (0x95)', () => {
  const framer = new Framer(1024);
  // Fixed header announcing 1 MiB; no body sent at all.
  assert.equal(feedAll(framer, Buffer.from([0x30, 0x80, 0x80, 0x40])).length, 0);
  assert.equal(framer.error?.reason, 0x95);
  assert.equal(framer.buffered, 0, 'nothing of the body was kept');
});

test('packets before an invalid one are still delivered, then the framer stays failed', () => {
  const framer = new Framer(1 << 20);
  framer.setVersion(4);
  const good = publish('ok', Buffer.from('1'), 0);
  const badQos = Buffer.from(publish('bad', Buffer.from('2'), 0));
  badQos[0] = 0x36; // QoS 3 [MQTT-3.3.1-4]
  const frames = feedAll(framer, Buffer.concat([good, badQos, good]));
  assert.equal(frames.length, 1);
  assert.equal(framer.error?.reason, 0x81);
  assert.equal(feedAll(framer, good).length, 0);
});

test('setVersion refuses an unknown protocol level', () => {
  assert.throws(() => new Framer(100).setVersion(6), { code: 'UNSUPPORTED_PROTOCOL_VERSION' });
});

test('an MQTT 3.1 PUBREL re-sent with DUP (0x6A) is framed and decoded in 3.1, refused in 3.1.1 and 5.0 [MQTT-3.6.1-1]', () => {
  const framer = new Framer(1 << 20);
  framer.setVersion(3);
  // PUBREL with DUP, packet id 7 (re-sent after reconnecting), then a first-time PUBREL, packet id 8.
  const chunk = Buffer.from([0x6a, 0x02, 0x00, 0x07, 0x62, 0x02, 0x00, 0x08]);
  const frames = feedAll(framer, chunk);
  assert.ok(!framer.error, `framer error ${framer.error?.code}`);
  assert.deepEqual(frames.map((f) => f.header), [0x6a, 0x62]);
  const [resent, first] = frames.map((f) => decodePacket(3, f.source, f.desc[1], f.desc[2]));
  assert.equal(resent.cmd, 'pubrel');
  assert.equal(resent.messageId, 7);
  assert.equal(first.messageId, 8);
  for (const level of [4, 5]) {
    assert.throws(() => decodePacket(level, chunk, 0, 4), { code: 'RESERVED_FLAGS', message: /^\[0x81\]/ });
  }
});
