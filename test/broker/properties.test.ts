// PUBLISH properties a broker forwards unchanged (MQTT 5.0 section 3.3.2.3): Payload Format
// Indicator, Content Type, Response Topic, Correlation Data and User Properties; and the same
// message to a v3.1.1 subscriber, which has no properties.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

const props = {
  payloadFormatIndicator: true,
  contentType: 'application/json; charset=utf-8',
  responseTopic: 'props/reply/ü',
  correlationData: Buffer.from([0x00, 0xff, 0x10, 0x80]),
  messageExpiryInterval: 120,
};

test('v5 to v5: Payload Format Indicator, Content Type, Response Topic and Correlation Data arrive unchanged [MQTT-3.3.2-4][MQTT-3.3.2-20][MQTT-3.3.2-15][MQTT-3.3.2-16]', async () => {
  for (const qos of [0, 1, 2] as const) {
    const sub = await connect(broker.url, { protocolVersion: 5, clientId: `pr-sub-${qos}` });
    await sub.subscribeAsync('props/a', { qos });
    const pub = await connect(broker.url, { protocolVersion: 5, clientId: `pr-pub-${qos}` });
    const w = nextMessages(sub, 1);
    await pub.publishAsync('props/a', '{"a":1}', { qos, properties: props });
    const p = (await w)[0].packet.properties!;
    assert.equal(p.payloadFormatIndicator, true);
    assert.equal(p.contentType, props.contentType);
    assert.equal(p.responseTopic, props.responseTopic);
    assert.deepEqual(Buffer.from(p.correlationData!), props.correlationData);
    assert.equal(p.messageExpiryInterval, 120);
    await end(sub, pub);
  }
});

test('v5 to v5: User Properties arrive in order, repeated keys kept [MQTT-3.3.2-17][MQTT-3.3.2-18]', async () => {
  // mqtt.js groups repeated keys into arrays and loses the order between keys: a raw client
  // reads the properties as sent.
  const sub = await rawConnect(broker.ports.tcp!, { clientId: 'up-sub' });
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'props/up', qos: 1 }] });
  await sub.next('suback');
  const raw: Buffer[] = [];
  sub.socket.on('data', (b) => raw.push(b));
  const pub = await rawConnect(broker.ports.tcp!, { clientId: 'up-pub' });
  // Written by hand: the order a, b, a, c, with two values for a.
  const pairs: [string, string][] = [['a', '1'], ['b', 'x'], ['a', '2'], ['c', ''], ['ключ', 'значение']];
  const propBytes = Buffer.concat(pairs.map(([k, v]) => {
    const kb = Buffer.from(k);
    const vb = Buffer.from(v);
    return Buffer.concat([Buffer.from([0x26, kb.length >> 8, kb.length & 0xff]), kb, Buffer.from([vb.length >> 8, vb.length & 0xff]), vb]);
  }));
  const topic = Buffer.from('props/up');
  const body = Buffer.concat([Buffer.from([0, topic.length]), topic, Buffer.from([0, 9, propBytes.length]), propBytes, Buffer.from('payload')]);
  pub.send(Buffer.concat([Buffer.from([0x32, body.length]), body]));
  await pub.next('puback');
  const m = await sub.next('publish') as unknown as { payload: Buffer; properties: { userProperties?: Record<string, string | string[]> } };
  assert.equal(m.payload.toString(), 'payload');
  assert.deepEqual({ ...m.properties.userProperties }, { a: ['1', '2'], b: 'x', c: '', ключ: 'значение' });
  // The order on the wire is the order sent.
  const frame = Buffer.concat(raw);
  let at = -1;
  for (const [k, v] of pairs) {
    const kb = Buffer.from(k);
    const vb = Buffer.from(v);
    const needle = Buffer.concat([Buffer.from([0x26, kb.length >> 8, kb.length & 0xff]), kb, Buffer.from([vb.length >> 8, vb.length & 0xff]), vb]);
    const next = frame.indexOf(needle, at + 1);
    assert.ok(next > at, `user property ${k}=${v} after the previous one`);
    at = next;
  }
  sub.end();
  pub.end();
});

test('a v3.1.1 subscriber gets the same message without properties, a v5 one with them', async () => {
  const v4 = await rawConnect(broker.ports.tcp!, { clientId: 'pr-v4' }, 4);
  v4.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'props/mix', qos: 1 }] });
  await v4.next('suback');
  const v5 = await connect(broker.url, { protocolVersion: 5, clientId: 'pr-v5' });
  await v5.subscribeAsync('props/mix', { qos: 1 });
  const w5 = nextMessages(v5, 1);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'pr-mix-pub' });
  await pub.publishAsync('props/mix', 'hello', { qos: 1, properties: { ...props, userProperties: { k: 'v' } } });
  // mqtt-packet's v4 parser would fail on a property block: a clean parse of topic and payload
  // proves there is none.
  const m = await v4.next('publish') as unknown as { topic: string; payload: Buffer; qos: number; properties?: unknown };
  assert.equal(m.topic, 'props/mix');
  assert.equal(m.payload.toString(), 'hello');
  assert.equal(m.qos, 1);
  assert.equal(m.properties, undefined);
  const p5 = (await w5)[0].packet.properties!;
  assert.equal(p5.contentType, props.contentType);
  assert.deepEqual({ ...p5.userProperties }, { k: 'v' });
  v4.end();
  await end(v5, pub);
});

test('a retained message keeps its properties for later v5 subscribers [MQTT-3.3.2-* forwarded unchanged]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'pr-ret-pub' });
  await pub.publishAsync('props/ret', 'r', { qos: 1, retain: true, properties: { contentType: 'text/plain', responseTopic: 'props/back', userProperties: { x: ['1', '2'] } } });
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'pr-ret-sub' });
  const w = nextMessages(sub, 1);
  await sub.subscribeAsync('props/ret', { qos: 1 });
  const p = (await w)[0].packet.properties!;
  assert.equal(p.contentType, 'text/plain');
  assert.equal(p.responseTopic, 'props/back');
  assert.deepEqual({ ...p.userProperties }, { x: ['1', '2'] });
  await pub.publishAsync('props/ret', '', { qos: 1, retain: true });
  await end(pub, sub);
});
