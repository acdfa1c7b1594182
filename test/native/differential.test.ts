// Differential tests against mqtt-packet (the codec Aedes and mqtt.js use): random valid packets
// encoded by one and decoded by the other must agree, both ways, and inputs mqtt-packet rejects
// are rejected by us too. Deliberate differences are listed in DIFFERENCES with their clause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt-packet';

import { decodePacket, encodePacket, checkPacket, type Packet } from '../../src/native/index.ts';
import { Rng, seeds } from '../helpers/random.ts';

type Version = 3 | 4 | 5;
type Any = Record<string, any>;

/** mqtt-packet's parser, synchronously: the packets and the first error of one buffer. */
function mqttParse(buf: Buffer, protocolVersion: Version): { packets: Any[]; error?: Error } {
  const parser = mqtt.parser({ protocolVersion });
  const packets: Any[] = [];
  let error: Error | undefined;
  parser.on('packet', (p: Any) => packets.push(p));
  parser.on('error', (e: Error) => (error ??= e));
  parser.parse(buf);
  return { packets, error };
}

function randomProperties(rng: Rng, cmd: string): Any | undefined {
  if (rng.bool(0.3)) return undefined;
  const p: Any = {};
  const userProperties = () => {
    const u: Any = {};
    for (let i = 1 + rng.int(3); i > 0; i--) u[`k${i}${rng.word(1, 3)}`] = rng.bool(0.3) ? [rng.word(), rng.word()] : rng.word();
    return u; // never empty: mqtt-packet miscounts the length of an empty userProperties object
  };
  switch (cmd) {
    case 'connect':
      if (rng.bool()) p.sessionExpiryInterval = rng.int(100000);
      if (rng.bool()) p.receiveMaximum = 1 + rng.int(65535);
      if (rng.bool()) p.maximumPacketSize = 1 + rng.int(1 << 20);
      if (rng.bool()) p.topicAliasMaximum = rng.int(100);
      if (rng.bool()) p.requestResponseInformation = rng.bool();
      if (rng.bool()) p.requestProblemInformation = rng.bool();
      if (rng.bool()) p.userProperties = userProperties();
      break;
    case 'will':
      if (rng.bool()) p.willDelayInterval = rng.int(1000);
      if (rng.bool()) p.payloadFormatIndicator = rng.bool();
      if (rng.bool()) p.messageExpiryInterval = rng.int(1000);
      if (rng.bool()) p.contentType = rng.word();
      if (rng.bool()) p.responseTopic = rng.topic();
      if (rng.bool()) p.correlationData = rng.bytes(rng.int(10));
      break;
    case 'connack':
      if (rng.bool()) p.sessionExpiryInterval = rng.int(100000);
      if (rng.bool()) p.receiveMaximum = 1 + rng.int(65535);
      if (rng.bool()) p.maximumQoS = rng.int(2);
      if (rng.bool()) p.retainAvailable = rng.bool();
      if (rng.bool()) p.maximumPacketSize = 1 + rng.int(1 << 20);
      if (rng.bool()) p.assignedClientIdentifier = rng.word();
      if (rng.bool()) p.topicAliasMaximum = rng.int(100);
      if (rng.bool()) p.reasonString = rng.word();
      if (rng.bool()) p.wildcardSubscriptionAvailable = rng.bool();
      if (rng.bool()) p.subscriptionIdentifiersAvailable = rng.bool();
      if (rng.bool()) p.sharedSubscriptionAvailable = rng.bool();
      if (rng.bool()) p.serverKeepAlive = rng.int(65536);
      if (rng.bool()) p.responseInformation = rng.word();
      if (rng.bool()) p.serverReference = rng.word();
      break;
    case 'publish':
      if (rng.bool()) p.payloadFormatIndicator = rng.bool();
      if (rng.bool()) p.messageExpiryInterval = rng.int(100000);
      if (rng.bool()) p.topicAlias = 1 + rng.int(100);
      if (rng.bool()) p.responseTopic = rng.topic();
      if (rng.bool()) p.correlationData = rng.bytes(rng.int(16));
      if (rng.bool()) p.userProperties = userProperties();
      if (rng.bool()) p.subscriptionIdentifier = rng.bool() ? 1 + rng.int(1000) : [1 + rng.int(1000), 1 + rng.int(268435454)];
      if (rng.bool()) p.contentType = rng.word();
      break;
    case 'subscribe':
      if (rng.bool()) p.subscriptionIdentifier = 1 + rng.int(268435454);
      if (rng.bool()) p.userProperties = userProperties();
      break;
    case 'unsubscribe': // only User Property is allowed in UNSUBSCRIBE (MQTT 5.0 section 3.10.2.1)
      if (rng.bool()) p.userProperties = userProperties();
      break;
    case 'disconnect':
      if (rng.bool()) p.sessionExpiryInterval = rng.int(1000);
      if (rng.bool()) p.reasonString = rng.word();
      if (rng.bool()) p.serverReference = rng.word();
      break;
    case 'auth': // an AUTH packet names its method (MQTT 5.0 section 3.15.2.2.2)
      p.authenticationMethod = rng.word();
      if (rng.bool()) p.authenticationData = rng.bytes(rng.int(20));
      if (rng.bool()) p.reasonString = rng.word();
      break;
    default:
      if (rng.bool()) p.reasonString = rng.word();
      if (rng.bool()) p.userProperties = userProperties();
  }
  return Object.keys(p).length ? p : undefined;
}

/** A random valid packet in mqtt-packet's shape. */
function randomPacket(rng: Rng, v: Version): Any {
  const cmds = ['connect', 'connack', 'publish', 'puback', 'pubrec', 'pubrel', 'pubcomp', 'subscribe', 'suback', 'unsubscribe', 'unsuback', 'pingreq', 'pingresp', 'disconnect'];
  if (v === 5) cmds.push('auth');
  const cmd = rng.pick(cmds);
  const props = v === 5 ? (cmd === 'auth' ? randomProperties(new Rng(rng.next()), cmd) ?? { authenticationMethod: rng.word() } : randomProperties(rng, cmd)) : undefined;
  const id = 1 + rng.int(65535);
  switch (cmd) {
    case 'connect': {
      const p: Any = { cmd, protocolId: v === 3 ? 'MQIsdp' : 'MQTT', protocolVersion: v, clean: rng.bool(), clientId: rng.word(1, 23), keepalive: rng.int(65536), properties: props };
      if (rng.bool()) p.username = rng.word();
      // mqtt-packet refuses a password without a user name even in v5, where it is allowed (difference 2).
      if (p.username !== undefined && rng.bool()) p.password = rng.bytes(rng.int(12));
      if (rng.bool()) p.will = { topic: rng.topic(), payload: rng.bytes(rng.int(30)), qos: rng.int(3), retain: rng.bool(), properties: v === 5 ? randomProperties(rng, 'will') : undefined };
      return p;
    }
    case 'connack':
      // MQTT 3.1 has no session-present flag: its CONNACK flags byte is reserved (difference 1).
      return v === 5 ? { cmd, sessionPresent: rng.bool(), reasonCode: rng.pick([0, 0x80, 0x85, 0x86, 0x87, 0x97]), properties: props } : { cmd, sessionPresent: v === 4 && rng.bool(), returnCode: rng.int(6) };
    case 'publish': {
      const qos = rng.int(3);
      return { cmd, topic: rng.topic(), payload: rng.bytes(rng.int(300)), qos, dup: qos > 0 && rng.bool(), retain: rng.bool(), messageId: qos ? id : undefined, properties: props };
    }
    case 'puback': case 'pubrec':
      return { cmd, messageId: id, reasonCode: v === 5 ? rng.pick([0, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99]) : undefined, properties: props };
    case 'pubrel': case 'pubcomp':
      return { cmd, messageId: id, reasonCode: v === 5 ? rng.pick([0, 0x92]) : undefined, properties: props };
    case 'subscribe':
      return {
        cmd, messageId: id, properties: props,
        subscriptions: Array.from({ length: 1 + rng.int(4) }, () => {
          const topic = rng.bool(0.3) ? rng.topic() + '/#' : rng.bool(0.3) ? '+/' + rng.topic() : rng.topic();
          return v === 5 ? { topic, qos: rng.int(3), nl: rng.bool(), rap: rng.bool(), rh: rng.int(3) } : { topic, qos: rng.int(3) };
        }),
      };
    case 'suback':
      return { cmd, messageId: id, granted: Array.from({ length: 1 + rng.int(4) }, () => rng.pick(v === 5 ? [0, 1, 2, 0x80, 0x87, 0x8f] : [0, 1, 2, 0x80])), properties: props };
    case 'unsubscribe':
      return { cmd, messageId: id, unsubscriptions: Array.from({ length: 1 + rng.int(4) }, () => rng.topic()), properties: props };
    case 'unsuback':
      return v === 5 ? { cmd, messageId: id, granted: Array.from({ length: 1 + rng.int(3) }, () => rng.pick([0, 0x11, 0x80, 0x87])), properties: props } : { cmd, messageId: id };
    case 'disconnect':
      return { cmd, reasonCode: v === 5 ? rng.pick([0, 4, 0x80, 0x81, 0x8e]) : undefined, properties: props };
    case 'auth':
      return { cmd, reasonCode: rng.pick([0, 0x18, 0x19]), properties: props };
    default:
      return { cmd };
  }
}

/** One canonical form for both codecs' objects, so they can be compared with deepEqual. */
function canonical(p: Any, v: Version): Any {
  const out: Any = { cmd: p.cmd };
  const set = (k: string, val: unknown) => { if (val !== undefined && val !== null) out[k] = val; };
  const buf = (b: unknown) => (b === undefined || b === null ? undefined : Buffer.from(b as Buffer).toString('hex'));
  switch (p.cmd) {
    case 'connect':
      set('protocolVersion', p.protocolVersion); set('clean', p.clean); set('keepalive', p.keepalive); set('clientId', p.clientId);
      set('username', p.username); set('password', buf(p.password));
      if (p.will) out.will = { topic: p.will.topic, payload: buf(p.will.payload), qos: p.will.qos, retain: p.will.retain, properties: props(p.will.properties) };
      break;
    case 'connack':
      set('sessionPresent', p.sessionPresent); set('code', p.reasonCode ?? p.returnCode); break;
    case 'publish':
      set('topic', p.topic); set('payload', buf(p.payload)); set('qos', p.qos); set('dup', p.dup); set('retain', p.retain);
      if (p.qos) set('messageId', p.messageId);
      break;
    case 'subscribe':
      set('messageId', p.messageId);
      out.subscriptions = p.subscriptions.map((s: Any) => v === 5 ? { topic: s.topic, qos: s.qos, nl: !!s.nl, rap: !!s.rap, rh: s.rh ?? 0 } : { topic: s.topic, qos: s.qos });
      break;
    case 'suback': set('messageId', p.messageId); set('granted', p.granted); break;
    case 'unsubscribe': set('messageId', p.messageId); set('unsubscriptions', p.unsubscriptions); break;
    case 'unsuback': set('messageId', p.messageId); if (v === 5) set('granted', p.granted); break;
    case 'puback': case 'pubrec': case 'pubrel': case 'pubcomp':
      set('messageId', p.messageId); if (v === 5) set('reasonCode', p.reasonCode ?? 0); break;
    case 'disconnect': case 'auth':
      if (v === 5) set('reasonCode', p.reasonCode ?? 0); break;
  }
  if (v === 5) set('properties', props(p.properties));
  return out;
}

function props(p: Any | undefined): Any | undefined {
  if (!p) return undefined;
  const out: Any = {};
  for (const [k, val] of Object.entries(p)) {
    if (val === undefined) continue;
    if (k === 'userProperties') {
      // ours: [[k, v], ...] in wire order; mqtt-packet: {k: v | v[]}
      const pairs: string[][] = Array.isArray(val) ? val : Object.entries(val).flatMap(([kk, vv]) => (Array.isArray(vv) ? vv : [vv]).map((x) => [kk, String(x)]));
      if (pairs.length) out.userProperties = pairs;
    } else if (k === 'subscriptionIdentifier') {
      out.subscriptionIdentifier = Array.isArray(val) ? val : [val];
    } else if (Buffer.isBuffer(val) || val instanceof Uint8Array) {
      out[k] = Buffer.from(val).toString('hex');
    } else {
      out[k] = val;
    }
  }
  return Object.keys(out).length ? out : undefined;
}

/** mqtt-packet input shape from our object shape (user properties back to an object). */
function toMqttPacket(p: Any): Any {
  const fix = (pr: Any | undefined) => {
    if (!pr) return pr;
    const o: Any = { ...pr };
    if (pr.userProperties) {
      o.userProperties = {};
      for (const [k, v] of pr.userProperties as string[][]) {
        const cur = o.userProperties[k];
        o.userProperties[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
      }
    }
    return o;
  };
  const out: Any = { ...p, properties: fix(p.properties), will: p.will && { ...p.will, properties: fix(p.will.properties) } };
  if (p.cmd === 'connack') out.returnCode = p.reasonCode; // mqtt-packet's v3 name for the code
  return out;
}

/**
 * Deliberate differences from mqtt-packet:
 * 1. MQTT 3.1 CONNACK: the first byte is reserved (3.1 has no session present); we refuse a
 *    non-zero value as malformed, mqtt-packet reads it as session present.
 * 2. A v5 CONNECT may carry a password without a user name (MQTT 5.0 section 3.1.2.9);
 *    mqtt-packet refuses to write one. We accept it in v5 and refuse it in v3.1.1 [MQTT-3.1.2-22].
 * 3. The malformed rows below marked mqttPacketAccepts: mqtt-packet accepts them, the cited
 *    clause makes them malformed or a protocol error, and we refuse them.
 */
for (const v of [3, 4, 5] as const) {
  for (const seed of seeds(6)) {
    test(`v${v}: mqtt-packet encodes, Spindle decodes the same packet (seed ${seed})`, () => {
      const rng = new Rng(seed + v);
      for (let i = 0; i < 300; i++) {
        const pkt = randomPacket(rng, v);
        if (pkt.cmd === 'connect' && v === 3) pkt.protocolId = 'MQIsdp';
        const bytes = mqtt.generate(pkt as mqtt.Packet, { protocolVersion: v });
        let ours: Any;
        try {
          ours = decodePacket(v, bytes) as Any;
        } catch (err) {
          assert.fail(`packet ${i} ${JSON.stringify(pkt)} ${bytes.toString('hex')}: ${(err as Error).message}`);
        }
        assert.deepEqual(canonical(ours, v), canonical(pkt, v), `packet ${i}: ${bytes.toString('hex')}`);
      }
    });

    test(`v${v}: Spindle encodes, mqtt-packet decodes the same packet (seed ${seed})`, () => {
      const rng = new Rng(seed * 3 + v);
      for (let i = 0; i < 300; i++) {
        const pkt = randomPacket(rng, v);
        // Our object shape: user properties as ordered pairs.
        const ours = decodePacket(v, mqtt.generate(pkt as mqtt.Packet, { protocolVersion: v })) as Packet;
        const bytes = encodePacket(v, ours);
        const parsed = mqttParse(bytes, v);
        assert.equal(parsed.error, undefined, `packet ${i} ${JSON.stringify(pkt)}: ${parsed.error?.message} ${bytes.toString('hex')}`);
        assert.equal(parsed.packets.length, 1);
        assert.deepEqual(canonical(parsed.packets[0], v), canonical(ours as Any, v), `packet ${i}`);
        // And mqtt-packet, given the same object, writes the same bytes where the encoding is
        // unique: v3 packets other than CONNECT. (In v5, property order and the short forms of
        // acks are the encoder's choice; we write the shortest form the spec allows.)
        if (v < 5 && pkt.cmd !== 'connect') {
          assert.deepEqual(bytes, mqtt.generate(toMqttPacket(ours as Any) as mqtt.Packet, { protocolVersion: v }), `packet ${i} bytes`);
        }
      }
    });
  }
}

/**
 * Malformed inputs: each is rejected by mqtt-packet, and must be rejected by us with the reason
 * code given. Where we are stricter than mqtt-packet, the row says `mqttPacketAccepts` and cites
 * the clause.
 */
const MALFORMED: { name: string; v: Version; hex: string; reason: number; mqttPacketAccepts?: string }[] = [
  { name: 'CONNECT with a bad protocol name', v: 4, hex: '100e 0004 4d515458 04 02 0000 0002 6964', reason: 0x81 },
  { name: 'CONNECT with protocol level 7', v: 4, hex: '100e 0004 4d515454 07 02 0000 0002 6964', reason: 0x84 },
  { name: 'CONNECT with the reserved flag set [MQTT-3.1.2-3]', v: 4, hex: '100e 0004 4d515454 04 03 0000 0002 6964', reason: 0x81 },
  { name: 'CONNECT with will QoS 3 [MQTT-3.1.2-14]', v: 4, hex: '1014 0004 4d515454 04 1e 0000 0002 6964 0001 74 0001 78', reason: 0x81, mqttPacketAccepts: 'MQTT-3.1.2-14: the Will QoS MUST NOT be 3' },
  { name: 'CONNECT v3.1.1 with a password but no username [MQTT-3.1.2-22]', v: 4, hex: '1011 0004 4d515454 04 42 0000 0002 6964 0001 70', reason: 0x81, mqttPacketAccepts: 'MQTT-3.1.2-22: in 3.1.1, with no user name flag the password flag MUST be 0' },
  { name: 'PUBLISH QoS 3 [MQTT-3.3.1-4]', v: 4, hex: '3605 0001 61 0001', reason: 0x81 },
  { name: 'PUBLISH with a wildcard in the topic name [MQTT-3.3.2-2]', v: 4, hex: '3003 0001 2b', reason: 0x90, mqttPacketAccepts: 'MQTT-3.3.2-2: the Topic Name MUST NOT contain wildcard characters' },
  { name: 'PUBLISH QoS 1 with packet id 0 [MQTT-2.2.1-3]', v: 4, hex: '3205 0001 61 0000', reason: 0x82, mqttPacketAccepts: 'MQTT-2.2.1-3: a QoS > 0 PUBLISH MUST carry a non-zero Packet Identifier' },
  { name: 'PUBLISH topic with U+0000 [MQTT-1.5.4-2]', v: 4, hex: '3004 0002 6100', reason: 0x81, mqttPacketAccepts: 'MQTT-1.5.4-2: a UTF-8 string MUST NOT include U+0000' },
  { name: 'PUBLISH topic that is not UTF-8 [MQTT-1.5.4-1]', v: 4, hex: '3004 0002 c328', reason: 0x81, mqttPacketAccepts: 'MQTT-1.5.4-1: ill-formed UTF-8 makes the packet malformed' },
  { name: 'SUBSCRIBE with reserved flags 0 [MQTT-3.8.1-1]', v: 4, hex: '8006 0001 0001 61 00', reason: 0x81 },
  { name: 'SUBSCRIBE with no topic filters [MQTT-3.8.3-3]', v: 4, hex: '8202 0001', reason: 0x82, mqttPacketAccepts: 'MQTT-3.8.3-3: a SUBSCRIBE with no payload is a protocol violation' },
  { name: 'SUBSCRIBE with QoS 3 [MQTT-3.8.3-4]', v: 4, hex: '8206 0001 0001 61 03', reason: 0x81 },
  { name: 'SUBSCRIBE filter with # not last [MQTT-4.7.1-2]', v: 4, hex: '8208 0001 0003 232f61 01', reason: 0x8f, mqttPacketAccepts: 'MQTT-4.7.1-2: the multi-level wildcard MUST be the last character' },
  { name: 'SUBSCRIBE filter with + inside a level [MQTT-4.7.1-3]', v: 4, hex: '8207 0001 0002 612b 01', reason: 0x8f, mqttPacketAccepts: 'MQTT-4.7.1-3: + MUST occupy an entire level' },
  { name: 'SUBSCRIBE v5 with retain handling 3 [MQTT-3.8.3-5]', v: 5, hex: '8207 0001 00 0001 61 30', reason: 0x82 },
  { name: 'UNSUBSCRIBE with no topic filters [MQTT-3.10.3-2]', v: 4, hex: 'a202 0001', reason: 0x82, mqttPacketAccepts: 'MQTT-3.10.3-2: an UNSUBSCRIBE with no payload is a protocol violation' },
  { name: 'PUBREL with reserved flags 0 [MQTT-3.6.1-1]', v: 4, hex: '6002 0001', reason: 0x81 },
  { name: 'PINGREQ with a body', v: 4, hex: 'c001 00', reason: 0x81, mqttPacketAccepts: 'MQTT 3.1.1 section 3.12: PINGREQ has no variable header and no payload (remaining length 0)' },
  { name: 'PUBLISH v5 with a duplicated property [MQTT-2.2.2-2]', v: 5, hex: '3008 0001 61 04 0100 0100', reason: 0x82, mqttPacketAccepts: 'a property other than User Property and Subscription Identifier included twice is a Protocol Error (MQTT 5 section 2.2.2.2)' },
  { name: 'PUBLISH v5 with topic alias 0 [MQTT-3.3.2-8]', v: 5, hex: '3007 0001 61 03 230000', reason: 0x94, mqttPacketAccepts: 'MQTT-3.3.2-8: a Topic Alias of 0 is not permitted' },
  { name: 'PUBLISH v5 with a property not allowed in PUBLISH (Session Expiry)', v: 5, hex: '3009 0001 61 05 1100000000', reason: 0x81, mqttPacketAccepts: 'MQTT 5.0 section 2.2.2.2: an Identifier not valid for its packet type is a Malformed Packet' },
  { name: 'AUTH in v3.1.1', v: 4, hex: 'f000', reason: 0x81 },
  { name: 'Reserved packet type 0', v: 4, hex: '0000', reason: 0x81 },
];

for (const row of MALFORMED) {
  test(`malformed: ${row.name} is refused with reason 0x${row.reason.toString(16)}`, () => {
    const bytes = Buffer.from(row.hex.replace(/ /g, ''), 'hex');
    assert.equal(bytes[1], bytes.length - 2, 'the row\'s remaining length is right');
    const err = checkPacket(row.v, bytes);
    assert.ok(err, `accepted ${bytes.toString('hex')}`);
    assert.equal(err.reason, row.reason, `${err.code}: ${err.message}`);
    const theirs = mqttParse(bytes, row.v);
    const accepted = !theirs.error && theirs.packets.length === 1;
    if (row.mqttPacketAccepts) {
      assert.ok(accepted || theirs.error, 'mqtt-packet result recorded');
    } else {
      assert.ok(!accepted, `mqtt-packet accepts ${bytes.toString('hex')}: the row must cite why we differ`);
    }
  });
}
